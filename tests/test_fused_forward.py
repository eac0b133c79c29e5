"""The rollout's networks as one kernel (``fused_forward.actor_critic``): its CPU form is the eager
forward under bf16 autocast, bit for bit; its Triton kernel computes the same within the order of
float32 sums, on the CPU through Triton's interpreter and on a GPU; the trainer plays by it on its
fused path under bf16 alone."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import load_script

from warpsim.registry import make
from warpsim.roles import roles_of
from warpsim.train import TrainConfig, Trainer, fused_forward
from warpsim.train.policy import RolePolicies, RunPolicies, StackedActorCritic

CONTINUOUS = {"num_runners": 3, "continuous_actions": True}
INTERPRETER = Path(__file__).with_name("interpret_actor_critic.py")
CASES = [
    # train-ref's shapes at a few rows: 71 inputs in two blocks, two trunks, the Gaussian's two means
    dict(runs=2, rows=70, inputs=71, hidden=64, layers=2, outputs=2, shared=False, seed=0, scale=1.0),
    # one hidden layer, a shared trunk, a one-column policy (float32, as StackedLinear computes it)
    dict(runs=1, rows=20, inputs=10, hidden=24, layers=1, outputs=1, shared=True, seed=1, scale=1.0),
    # three layers, widths short of a power of two, large inputs (tanh saturates, exp overflows)
    dict(runs=3, rows=33, inputs=130, hidden=40, layers=3, outputs=5, shared=False, seed=2, scale=30.0),
]


def stacked(env_name: str, params: dict, runs: int, policy_head: str = "gaussian", **shape) -> list[StackedActorCritic]:
    """Every role's networks of ``runs`` runs, each run's initialised from its own seed."""
    env = make(env_name, 1, backend="numpy", **params)
    names = [role.name for role in roles_of(env.spec, env.device)]
    settings = dict(dict(hidden_size=16, hidden_layers=2), **shape)
    policies = []
    for seed in range(runs):
        torch.manual_seed(seed)
        policies.append(RolePolicies(env.spec, names, 1, settings["hidden_size"], settings["hidden_layers"],
                                     shared_trunk=settings.get("shared_trunk", False), policy_head=policy_head))
    together = RunPolicies(policies)
    return [together.network(name) for name in names]


@pytest.mark.parametrize("params, policy_head, shape", [
    ({"num_runners": 3}, "gaussian", {}),
    (CONTINUOUS, "gaussian", {}),
    (CONTINUOUS, "tanh_normal", {"hidden_layers": 3}),
    (CONTINUOUS, "gaussian", {"shared_trunk": True, "hidden_layers": 1, "hidden_size": 24}),
], ids=["discrete", "gaussian", "tanh-normal, 3 layers", "shared trunk, 1 layer"])
def test_the_cpu_form_is_the_eager_forward_under_bf16_autocast(params, policy_head, shape):
    """Bit for bit: the same operations on the same roundings."""
    generator = torch.Generator().manual_seed(3)
    for network in stacked("tag_continuous", params, 2, policy_head, **shape):
        observations = torch.randn((2, 7, next(network.trunk.parameters()).shape[2]), generator=generator) * 3
        with torch.no_grad():
            policy, value = network.fused(observations)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                eager_policy, eager_value = network(observations.to(torch.bfloat16))
        assert policy.dtype == value.dtype == torch.float32
        assert torch.equal(policy, eager_policy.float()) and torch.equal(value, eager_value)


def test_the_kernel_computes_as_the_eager_forward_in_tritons_interpreter():
    """Padded blocks, a strided run dimension, one to three layers, shared and separate trunks, saturated
    tanh: the policy's bfloat16 outputs within one rounding, the float32 value within float32 sums."""
    pytest.importorskip("triton")
    result = subprocess.run([sys.executable, str(INTERPRETER), json.dumps(CASES)], capture_output=True, text=True,
                            env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    for case, differences in zip(CASES, json.loads(result.stdout)):
        assert differences["dtypes"] == differences["eager_dtypes"], case
        assert differences["policy"] <= 2 ** -7 * case["scale"], case
        assert differences["value"] <= 1e-5 * case["scale"] * case["hidden"], case


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=["train-ref", "shared", "saturated"])
def test_the_kernel_computes_as_the_eager_forward_on_a_gpu(case):
    sys.path.insert(0, str(INTERPRETER.parent))
    from interpret_actor_critic import weights
    arguments = weights(case)
    eager = fused_forward.actor_critic(*arguments)
    kernel = fused_forward.actor_critic(*(value.cuda() if isinstance(value, torch.Tensor) else value
                                          for value in arguments))
    for mine, theirs in zip(kernel, eager):
        torch.testing.assert_close(mine.cpu(), theirs, rtol=2 ** -7, atol=2 ** -7 * case["scale"])


@pytest.mark.parametrize("changes, fused", [
    (dict(compile="on", precision="bf16"), True), (dict(compile="on", precision="fp32"), False),
    (dict(compile="off", precision="bf16"), False),
    (dict(compile="on", precision="bf16", hidden_size=fused_forward.MAX_HIDDEN + 1), False)])
def test_the_trainer_plays_by_the_kernel_on_its_fused_path_under_bf16(changes, fused):
    """Wider networks than the kernel holds keep the compiled eager forward."""
    trainer = Trainer(TrainConfig(env="tag_continuous", env_params=dict(num_taggers=1, num_runners=2), num_envs=2,
                                  rollout_steps=2, backend="numpy", **changes))
    assert trainer.policies.fused is fused


def test_its_benchmark_runs_its_python_path_on_the_cpu(tmp_path):
    """benchmarks/fused_forward.py at train-ref's shapes on 2 environments: a record with both times and
    the kernel's bytes, at least each agent's observation (71 bfloat16 entries) and its outputs."""
    script = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "fused_forward.py")
    assert script.main(["--num-envs", "2", "--repeats", "1", "--device", "cpu", "--results-dir", str(tmp_path)]) == 0
    (record,) = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert record["agents"] == 2 * 110 and record["eager_ms"] > 0 and record["fused_ms"] > 0
    assert record["fused_bytes_per_agent"] > 71 * 2 + 4


def test_the_kernel_refuses_weights_that_are_not_bfloat16():
    """Their bits are read as bfloat16: float32 weights would be read as garbage, not refused later."""
    pytest.importorskip("triton")
    sys.path.insert(0, str(INTERPRETER.parent))
    from interpret_actor_critic import weights
    arguments = list(weights(CASES[0]))
    arguments[1] = arguments[1].float()
    with pytest.raises(TypeError, match="bfloat16"):
        fused_forward.launch(*arguments)
