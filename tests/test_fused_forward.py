"""The networks as kernels (``fused_forward.actor_critic`` and its gradients): their CPU forms are the
eager forward under bf16 autocast and autograd's gradients of it, bit for bit; the Triton kernels
compute the same within the order of float32 sums, on the CPU through Triton's interpreter and on
a GPU; the trainer plays and learns by them on its fused path under bf16 alone."""

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import load_script

from warpsim.registry import make
from warpsim.roles import roles_of
from warpsim.train import TrainConfig, Trainer, categorical_terms, fused_backward, fused_forward, fused_sampling
from warpsim.train.policy import RolePolicies
from warpsim.train.run_policies import RunPolicies, StackedActorCritic

CONTINUOUS = {"num_runners": 3, "continuous_actions": True}
INTERPRETER = Path(__file__).with_name("interpret_actor_critic.py")
GRADIENTS_INTERPRETER = Path(__file__).with_name("interpret_actor_critic_backward.py")
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
    """Bit for bit, in the same dtypes (a discrete policy's outputs in bfloat16): the same operations on the
    same roundings."""
    generator = torch.Generator().manual_seed(3)
    for network in stacked("tag_continuous", params, 2, policy_head, **shape):
        observations = torch.randn((2, 7, next(network.trunk.parameters()).shape[2]), generator=generator) * 3
        with torch.no_grad():
            policy, value = network.fused(observations)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                eager_policy, eager_value = network(observations.to(torch.bfloat16))
        assert policy.dtype == eager_policy.dtype and value.dtype == eager_value.dtype == torch.float32
        assert torch.equal(policy, eager_policy) and torch.equal(value, eager_value)


@pytest.mark.slow(seconds=11)
def test_the_kernel_computes_as_the_eager_forward_in_tritons_interpreter():
    """Padded blocks, a strided run dimension, one to three layers, shared and separate trunks, saturated
    tanh: the policy's bfloat16 outputs within one rounding, the float32 value within float32 sums; a multi-column
    policy's rows padded to 16 bytes with zeros, as the op's CPU form pads them."""
    pytest.importorskip("triton")
    result = subprocess.run([sys.executable, str(INTERPRETER), json.dumps(CASES)], capture_output=True, text=True,
                            env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    for case, differences in zip(CASES, json.loads(result.stdout)):
        assert differences["dtypes"] == differences["eager_dtypes"], case
        assert differences["policy"] <= 2 ** -7 * case["scale"], case
        assert differences["value"] <= 1e-5 * case["scale"] * case["hidden"], case
        entries = fused_forward.policy_row_entries(int(case["outputs"]))
        kernel_shape, eager_shape = differences["policy_shapes"]
        assert kernel_shape == eager_shape == [case["runs"], case["rows"], entries], case
        assert differences["policy_padding"] == 0, case


def test_aligned_rows_pad_with_zeros_to_a_multiple_of_16():
    rows = torch.randn((2, 3, 71))
    aligned = fused_forward.aligned_rows(rows)
    assert aligned.shape == (2, 3, 80) and torch.equal(aligned[..., :71], rows) and not aligned[..., 71:].any()
    assert fused_forward.aligned_rows(aligned) is aligned


def test_the_fused_operands_rows_are_aligned():
    """The observations and both trunks' first weights as the kernels take them; the other weights as they are."""
    (network,) = stacked("tag_continuous", {"num_runners": 3}, 2)[:1]
    inputs = next(network.trunk.parameters()).shape[2]
    operands = network.fused_operands(torch.randn((2, 5, inputs)))
    assert inputs % fused_forward.ROW_ALIGNMENT and operands[0].shape[-1] == operands[1].shape[-1] == \
        operands[5].shape[-1] == inputs - inputs % -fused_forward.ROW_ALIGNMENT
    assert operands[3].shape[-1] == operands[3].shape[-2]


@pytest.mark.slow(seconds=60)
def test_aligned_rows_give_the_kernels_results_bit_for_bit_in_tritons_interpreter():
    """The forward kernel's outputs and the gradients' kernels' sums on rows padded to a multiple of 16 are those
    on the rows as they are: the same blocks of inputs, zeros where masked zeros were; the padding's gradients
    are zero. At train-ref's 71 inputs (whole trunks) and at 130 (three layers, a layer a launch)."""
    pytest.importorskip("triton")
    program = f"""
import json, sys
import torch
sys.path[:0] = [{str(INTERPRETER.parent)!r}]
from interpret_actor_critic import weights
from interpret_actor_critic_backward import output_gradients
from warpsim.train import fused_backward, fused_forward
results = []
for case in {[CASES[0], CASES[2]]!r}:
    arguments = weights(case)
    aligned = tuple(fused_forward.aligned_rows(value) if index in (0, 1, 5) else value
                    for index, value in enumerate(arguments))
    forward = [fused_forward.launch(*operands) for operands in (arguments, aligned)]
    gradients = output_gradients(arguments, case["seed"])
    backward = [fused_backward.split_gradients(fused_backward.launch_backward(*gradients, *operands, programs=2),
                                              list(operands[1:-1])) for operands in (arguments, aligned)]
    inputs = case["inputs"]
    results.append({{
        "forward": all(torch.equal(mine, theirs) for mine, theirs in zip(*forward)),
        "backward": all(torch.equal(mine[..., :inputs] if index in (0, 4) else mine, theirs)
                        for index, (mine, theirs) in enumerate(zip(backward[1], backward[0]))),
        "padding_gradients_zero": all(not backward[1][index][..., inputs:].any() for index in (0, 4)),
        "aligned_inputs": [backward[1][index].shape[-1] for index in (0, 4)]}})
print(json.dumps(results))
"""
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    for case, outcome in zip([CASES[0], CASES[2]], json.loads(result.stdout)):
        padded = case["inputs"] - case["inputs"] % -fused_forward.ROW_ALIGNMENT
        assert outcome == {"forward": True, "backward": True, "padding_gradients_zero": True,
                           "aligned_inputs": [padded, padded]}, case

SAMPLING_CASES: list[dict[str, Any]] = [
    # train-ref's discrete tagger: two components of 21 (a product of 32 columns each), one run
    dict(CASES[0], runs=1, outputs=42, levels=[21, 21], seed=4),
    # two runs' draws in one buffer with another role's between, a shared trunk, one component of 5 (a
    # product's least 16 columns)
    dict(CASES[1], runs=2, outputs=5, levels=[5], seed=5, gap=7),
    # three runs drawing apart (stacked for the kernel), three components of 3, saturated softmaxes
    dict(CASES[2], outputs=9, levels=[3, 3, 3], seed=6, apart=True),
]


@pytest.mark.slow(seconds=12)
def test_the_kernel_samples_a_categorical_policy_as_its_outputs_sample_in_tritons_interpreter():
    """``actor_critic_sample``'s kernel: the actions that ``categorical_terms.sample`` draws from the kernel's own
    policy outputs and the same draws, their log-probability within float32 sums, the values bit for bit. A draw
    within ``BOUNDARY`` of a cumulative probability may tip either way (sums in another order): a saturated
    softmax's, at the largest draws."""
    pytest.importorskip("triton")
    result = subprocess.run([sys.executable, str(INTERPRETER), json.dumps(SAMPLING_CASES)], capture_output=True,
                            text=True, env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    for case, differences in zip(SAMPLING_CASES, json.loads(result.stdout)):
        assert differences["same_actions"] and differences["actions_dtype"] == "torch.int32", case
        assert differences["undecided_rows"] <= case["rows"] * case["runs"] // 3, case  # most rows compared
        assert differences["sampled_log_prob"] <= 1e-6 * case["scale"] * len(case["levels"]) * 10, case
        assert differences["same_values"], case


def test_the_sampling_ops_cpu_form_is_the_heads_sampling_of_the_networks_outputs():
    """On the CPU ``actor_critic_sample`` is ``actor_critic`` and, run by run on its own draws, the discrete
    heads' sampling and log-probability, bit for bit."""
    from warpsim.train.action_heads import CategoricalHeads

    sys.path.insert(0, str(INTERPRETER.parent))
    from interpret_actor_critic import draws, weights

    case = SAMPLING_CASES[1]
    arguments, uniforms, head = weights(case), draws(case), CategoricalHeads(tuple(case["levels"]))
    actions, log_prob, values = fused_sampling.actor_critic_sample(*arguments, uniforms, case["levels"])
    wide, expected_values = fused_forward.actor_critic(*arguments)
    policy, components = wide[..., :sum(case["levels"])], len(case["levels"])
    for run in range(case["runs"]):
        run_draws = tuple(uniforms[run * components:(run + 1) * components])
        assert torch.equal(actions[run], head.sample_with(policy[run], run_draws))
        assert torch.equal(log_prob[run], head.log_prob(policy[run], actions[run]))
    assert actions.dtype == torch.int32 and torch.equal(values, expected_values)
    assert len({tuple(run_actions.flatten().tolist()) for run_actions in actions}) == case["runs"], "runs draw apart"


def test_every_runs_discrete_draws_lie_in_one_buffer_as_the_kernel_reads_them_and_as_each_draws_alone():
    """``RunPolicies.noise`` of two roles and three runs: the draws the kernel reads of one role lie evenly
    (``fused_sampling.draws_layout``: a component's block apart, the runs the roles' draws apart), with no copy,
    and each run's numbers are those its generator draws alone."""
    from warpsim.train.action_heads import CategoricalHeads, roles_noise

    spec = make("tag_continuous", 1, backend="numpy", num_runners=3).spec
    runs = [RolePolicies(spec, ["tagger", "runner"], 1, 16, 2) for _ in range(3)]
    policies, rows = RunPolicies(runs), [6, 9]
    noise = policies.noise(["tagger", "runner"], rows, [torch.Generator().manual_seed(seed) for seed in range(3)],
                           torch.device("cpu"))
    heads = [policies.heads[name] for name in ("tagger", "runner")]
    levels = [head.action_levels for head in heads if isinstance(head, CategoricalHeads)]
    assert len(levels) == 2
    size = sum(count * len(role_levels) for role_levels, count in zip(levels, rows))
    for role, count in enumerate(rows):
        uniforms = [draws for run in noise[role] for draws in run]
        assert fused_sampling.draws_layout(uniforms, 3) == (count, size)
    for seed in range(3):
        alone = roles_noise(heads, rows, torch.Generator().manual_seed(seed), torch.device("cpu"))
        for role in range(2):
            assert all(torch.equal(mine, theirs) for mine, theirs in zip(noise[role][seed], alone[role]))
    apart = [torch.rand(4, 5) for _ in range(2)]
    assert fused_sampling.draws_layout(apart, 2) is None


@pytest.mark.gpu
@pytest.mark.parametrize("case", SAMPLING_CASES, ids=["train-ref", "shared, two runs", "saturated"])
def test_the_kernel_samples_as_its_outputs_sample_on_a_gpu(case):
    sys.path.insert(0, str(INTERPRETER.parent))
    from interpret_actor_critic import decided, draws, weights
    arguments, uniforms = weights(case), draws(case)
    on_gpu = [value.cuda() if isinstance(value, torch.Tensor) else value for value in arguments]
    wide, values = fused_forward.actor_critic(*on_gpu)
    policy = wide[..., :sum(case["levels"])]
    actions, log_prob, sampled_values = fused_sampling.actor_critic_sample(*on_gpu, [u.cuda() for u in uniforms],
                                                                          case["levels"])
    components = len(case["levels"])
    for run in range(case["runs"]):
        run_draws = uniforms[run * components:(run + 1) * components]
        expected_actions, expected_log_prob = categorical_terms.sample(policy[run].cpu(), run_draws, case["levels"])
        clear = decided(policy[run].cpu(), run_draws, case["levels"])
        assert torch.equal(actions[run].cpu()[clear], expected_actions[clear])
        torch.testing.assert_close(log_prob[run].cpu()[clear], expected_log_prob[clear], rtol=1e-5,
                                   atol=1e-5 * case["scale"])
    assert torch.equal(sampled_values, values)


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


def test_the_gradients_kernels_cover_the_first_layers_inputs_with_the_fewest_padded_entries():
    """``input_chunks`` and ``first_layer_columns`` cover every input with blocks of a power of two (at least 16),
    the last narrower where the inputs leave part of a block: train-ref's 80 as 64 and 16, not 128."""
    assert fused_backward.input_chunks(80, fused_backward.WHOLE_TRUNK_BLOCK_INPUTS) == (1, 16)
    assert fused_backward.first_layer_columns(80) == (64, 16)
    for inputs in range(1, 600):
        for block in (16, min(fused_backward.WHOLE_TRUNK_BLOCK_INPUTS, fused_forward.power_of_two(inputs))):
            chunks, tail = fused_backward.input_chunks(inputs, block)
            if chunks == 0:  # a loop of whole blocks
                assert tail == 0 and -(-inputs // block) > fused_backward.MOST_UNROLLED_CHUNKS, (inputs, block)
                continue
            covered = chunks * block
            assert chunks + (tail > 0) <= fused_backward.MOST_UNROLLED_CHUNKS, (inputs, block, chunks, tail)
            assert covered < inputs + block and (tail == 0) == (covered >= inputs), (inputs, block, chunks, tail)
            assert tail == 0 or tail == fused_forward.power_of_two(inputs - covered) < block, (inputs, block, tail)
        columns, tail = fused_backward.first_layer_columns(inputs)
        assert columns == fused_forward.power_of_two(columns), (inputs, columns)
        if inputs > fused_backward.FIRST_LAYER_INPUTS:
            assert (columns, tail) == (fused_backward.FIRST_LAYER_INPUTS, 0), inputs
        else:
            assert columns + tail >= inputs and columns + tail <= fused_forward.power_of_two(inputs), (inputs, tail)
            assert tail == 0 or tail == fused_forward.power_of_two(inputs - columns) < columns, (inputs, tail)


BACKWARD_CASES = [
    dict(CASES[0], programs=1),  # whole trunks: three blocks of rows summed by one program
    dict(CASES[0], programs=2, whole_trunks=False, contiguous_gradient=True),  # a layer a launch, any policy gradient
    dict(CASES[1], programs=4),  # one block of rows: programs without rows sum to zero
    dict(CASES[1], inputs=130, programs=1),  # the first layer in two blocks of inputs, whole trunks
    dict(CASES[2], rows=150, scale=3.0, programs=2),  # three layers (a layer a launch), two blocks of inputs
    dict(CASES[0], rows=200, outputs=2, shared=True, seed=3, programs=3),  # a shared trunk: both heads' gradients
    dict(CASES[0], rows=200, outputs=2, shared=True, seed=3, programs=3, whole_trunks=False),
]


@pytest.mark.parametrize("params, policy_head, shape", [
    ({"num_runners": 3}, "gaussian", {}),
    (CONTINUOUS, "tanh_normal", {"hidden_layers": 3}),
    (CONTINUOUS, "gaussian", {"shared_trunk": True, "hidden_layers": 1, "hidden_size": 24}),
], ids=["discrete", "tanh-normal, 3 layers", "shared trunk, 1 layer"])
def test_the_gradients_cpu_form_is_autograd_of_the_eager_forward(params, policy_head, shape):
    """Every parameter's gradient through ``fused``, bit for bit as autograd's through the eager forward
    under bf16 autocast, from the same gradients of the outputs."""
    generator = torch.Generator().manual_seed(4)
    for network in stacked("tag_continuous", params, 2, policy_head, **shape):
        observations = torch.randn((2, 9, next(network.trunk.parameters()).shape[2]), generator=generator)
        policy, value = network.fused(observations)
        policy_gradient = torch.randn(policy.shape, generator=generator)
        value_gradient = torch.randn(value.shape, generator=generator)
        fused = torch.autograd.grad((policy, value), list(network.parameters()), (policy_gradient, value_gradient))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            eager_policy, eager_value = network(observations.to(torch.bfloat16))
        eager = torch.autograd.grad((eager_policy.float(), eager_value), list(network.parameters()),
                                    (policy_gradient, value_gradient))
        for (name, _), mine, theirs in zip(network.named_parameters(), fused, eager):
            assert torch.equal(mine, theirs), name
            assert theirs.abs().max() > 0, name


@pytest.mark.slow(seconds=72)
def test_the_gradients_kernel_computes_as_autograd_in_tritons_interpreter():
    """Each weight's and bias's gradient within a bfloat16 rounding of its largest entry, summed over
    blocks of rows and programs; none of them zero but a shared trunk's unused critic."""
    pytest.importorskip("triton")
    result = subprocess.run([sys.executable, str(GRADIENTS_INTERPRETER), json.dumps(BACKWARD_CASES)],
                            capture_output=True, text=True, env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    for case, differences in zip(BACKWARD_CASES, json.loads(result.stdout)):
        assert differences.pop("dtypes_match"), case
        for name, difference in differences.items():
            unused = name.startswith("critic") and case["shared"] or name.endswith("hidden_weights") and \
                case["layers"] == 1 or name.endswith("hidden_biases") and case["layers"] == 1
            assert (difference["largest"] == 0) is unused, (case, name)
            assert difference["difference"] <= 2 ** -7, (case, name, difference)


@pytest.mark.gpu
@pytest.mark.parametrize("case", BACKWARD_CASES, ids=["train-ref", "a layer a launch", "one layer", "130 inputs",
                                                      "three layers", "shared", "shared, a layer a launch"])
def test_the_gradients_kernel_computes_as_autograd_on_a_gpu(case):
    sys.path.insert(0, str(INTERPRETER.parent))
    from interpret_actor_critic import weights
    from interpret_actor_critic_backward import output_gradients, relative_difference
    arguments = weights(case)
    gradients = output_gradients(arguments, case["seed"])
    eager = fused_backward.split_gradients(fused_backward.actor_critic_backward(*gradients, *arguments),
                                          list(arguments[1:-1]))
    on_the_gpu: list[Any] = [value.cuda() if isinstance(value, torch.Tensor) else value
                             for value in (*gradients, *arguments)]
    kernel = fused_backward.split_gradients(functools.partial(
        fused_backward.launch_backward, whole_trunks=case.get("whole_trunks"))(*on_the_gpu), on_the_gpu[3:-1])
    for mine, theirs in zip(kernel, eager):
        assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
        assert relative_difference(mine.cpu(), theirs) <= 2 ** -7


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
    """benchmarks/fused_forward.py at train-ref's shapes on 2 environments: a record with the forward's
    and the learning pass's times and the kernel's bytes, at least each agent's observation (71
    bfloat16 entries) and its outputs."""
    script = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "fused_forward.py")
    assert script.main(["--num-envs", "2", "--repeats", "1", "--device", "cpu", "--results-dir", str(tmp_path)]) == 0
    (record,) = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert record["agents"] == 2 * 110 and record["eager_ms"] > 0 and record["fused_ms"] > 0
    assert record["eager_learning_ms"] > 0 and record["fused_learning_ms"] > 0
    assert record["fused_bytes_per_agent"] > 71 * 2 + 4
    assert [(case["products"], case["aligned"]) for case in record["product_alignment"]] == [
        ("first layers", False), ("first layers", True), ("policy head", False), ("policy head", True)]
    assert all(case["ms"] > 0 for case in record["product_alignment"])
    assert record["sampling"]["in_kernel_ms"] > 0 and record["sampling"]["after_kernel_ms"] > 0
    assert record["loss"]["in_kernels_ms"] > 0 and record["loss"]["apart_ms"] > 0


def test_its_benchmark_queues_each_timed_step_behind_a_spin_that_outlasts_the_hosts_queuing(monkeypatch):
    """benchmarks/fused_forward.py's ``timed`` on a GPU, its calls to torch.cuda recorded: each step is queued
    between its events behind a spinning kernel of twice the cycles an untimed step took, so that the events
    time its kernels and not the host's Python (which a replayed CUDA graph does not pay)."""
    script = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "fused_forward.py")
    calls: list = []

    class Event:
        def __init__(self, enable_timing: bool):
            self.name = f"event {sum(call[0] == 'new event' for call in calls)}"
            calls.append(("new event",))

        def record(self):
            calls.append(("record", self.name))

        def synchronize(self):
            pass

        def elapsed_time(self, end) -> float:
            return 4.0 if self.name == "event 0" else 2.0  # ms: the rate's spin, then each step's

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: calls.append(("spin", cycles)))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    moments = iter([10.0, 10.5])
    monkeypatch.setattr(script.time, "perf_counter", lambda: next(moments))
    script.spin_cycles_per_second.cache_clear()
    seconds = script.timed(lambda: calls.append(("step",)), 2, torch.device("cuda"))
    assert seconds == 0.002 and script.spin_cycles_per_second() == 10_000_000 / 0.004
    spin = int(2 * 0.5 * 10_000_000 / 0.004)
    timed = [call for call in calls if call[0] != "new event"]
    assert timed[:2] == [("step",), ("step",)]  # the warm-up, then the host's time taken
    assert timed[2:] == [("spin", 10_000_000), ("record", "event 0"), ("spin", 10_000_000), ("record", "event 1"),
                         *[call for i in range(2) for call in (("spin", spin), ("record", f"event {2 * i + 2}"),
                                                               ("step",), ("record", f"event {2 * i + 3}"))]]
    script.spin_cycles_per_second.cache_clear()


@pytest.mark.slow(seconds=18)
def test_its_benchmarks_launch_shapes_run_in_tritons_interpreter():
    """The GPU's sweep of launch shapes (benchmarks/fused_forward.py's ``launch_shape_times``), at one shape
    each, on the CPU through the interpreter: a time for each kernel."""
    pytest.importorskip("triton")
    tests = Path(__file__).resolve().parent
    program = f"""
import json, sys
import torch
sys.path[:0] = [{str(tests)!r}]
from helpers import load_script
from interpret_actor_critic import weights
from interpret_actor_critic_backward import output_gradients
from pathlib import Path
script = load_script(Path({str(tests.parent / "benchmarks" / "fused_forward.py")!r}))
from warpsim.train import fused_forward
script.LAUNCH_SHAPES = [(16, 4, 2, True), (16, 4, 1, False)]
script.BACKWARD_LAUNCH_SHAPES = [(16, 8, True, 2, True, None), (16, 4, False, 1, True, 128),
                                 (16, 8, True, 1, False, None)]
arguments = tuple(fused_forward.aligned_rows(value) if index in (0, 1, 5) else value
                  for index, value in enumerate(weights({dict(CASES[0], rows=16)!r})))
print(json.dumps(script.launch_shape_times([arguments], [(*output_gradients(arguments, 0), *arguments)],
                                           [{CASES[0]["inputs"]}], 1, torch.device("cpu"))))
"""
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    (forward, before), (whole, by_layer, whole_before) = json.loads(result.stdout)
    assert [(shape["stages"], shape["aligned"]) for shape in (forward, before)] == [(2, True), (1, False)]
    assert [(shape["warps"], shape["whole_trunks"], shape["stages"], shape["aligned"], shape["max_registers"])
            for shape in (whole, by_layer, whole_before)] == [(8, True, 2, True, None), (4, False, 1, True, 128),
                                                              (8, True, 1, False, None)]
    assert all(shape["ms"] > 0 for shape in (forward, before, whole, by_layer, whole_before))


@pytest.mark.slow(seconds=12)
def test_its_benchmarks_numbers_of_programs_run_in_tritons_interpreter():
    """The GPU's sweep of the gradients' kernels' numbers of programs (``program_count_times``), on the CPU through
    the interpreter for a GPU of 2 SMs: the default, then 4, 8 and 16 programs, a time for each."""
    pytest.importorskip("triton")
    tests = Path(__file__).resolve().parent
    program = f"""
import json, sys
import torch
sys.path[:0] = [{str(tests)!r}]
from helpers import load_script
from interpret_actor_critic import weights
from interpret_actor_critic_backward import output_gradients
from pathlib import Path
script = load_script(Path({str(tests.parent / "benchmarks" / "fused_forward.py")!r}))
arguments = weights({dict(CASES[1], rows=32)!r})
print(json.dumps(script.program_count_times([(*output_gradients(arguments, 0), *arguments)], 2, 1,
                                            torch.device("cpu"))))
"""
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    counts = json.loads(result.stdout)
    assert [count["programs"] for count in counts] == [None, 4, 8, 16] and all(count["ms"] > 0 for count in counts)


def test_its_benchmarks_launches_of_the_loss_run_in_tritons_interpreter():
    """The GPU's sweep of the loss's launch shapes (``loss_launch_shape_times``), at two of them, and its time of the
    loss in a forward kernel of its own (``loss_in_forward_ms``), on the CPU through the interpreter: a time for each,
    under each trunk's shape."""
    pytest.importorskip("triton")
    tests = Path(__file__).resolve().parent
    case = dict(CASES[0], rows=16, outputs=42)
    program = f"""
import json, sys
import torch
sys.path[:0] = [{str(tests)!r}]
from helpers import load_script
from interpret_actor_critic import weights
from pathlib import Path
script = load_script(Path({str(tests.parent / "benchmarks" / "fused_forward.py")!r}))
from warpsim.train.fused_backward import TrunkLaunch
script.LOSS_LAUNCH_SHAPES = [(TrunkLaunch(16, 4, None), TrunkLaunch(32, 8, 128)),
                             (TrunkLaunch(32, 8, None), TrunkLaunch(16, 4, None))]
operands = weights({case!r})
rows = operands[0].shape[1]
actions = torch.randint(0, 21, (1, rows, 2), dtype=torch.int32)
case = ([operand[:1] if isinstance(operand, torch.Tensor) else operand for operand in operands],
        torch.randperm(rows)[None], actions, torch.randn(4, 1, rows), torch.tensor([[0.2, 0.0, 0.5, 0.01]]), [21, 21])
print(json.dumps([script.loss_launch_shape_times([case], 1, torch.device("cpu")),
                  script.loss_in_forward_ms([case], 1, torch.device("cpu"))]))
"""
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    (first, second), in_forward = json.loads(result.stdout)
    assert in_forward > 0
    assert (first["actor"], first["critic"]) == ({"block_rows": 16, "warps": 4, "max_registers": None},
                                                 {"block_rows": 32, "warps": 8, "max_registers": 128})
    assert (second["actor"]["block_rows"], second["critic"]["block_rows"]) == (32, 16)
    assert first["ms"] > 0 and second["ms"] > 0


def test_the_kernel_refuses_weights_that_are_not_bfloat16():
    """Their bits are read as bfloat16: float32 weights would be read as garbage, not refused later."""
    pytest.importorskip("triton")
    sys.path.insert(0, str(INTERPRETER.parent))
    from interpret_actor_critic import weights
    arguments = list(weights(CASES[0]))
    arguments[1] = arguments[1].float()
    with pytest.raises(TypeError, match="bfloat16"):
        fused_forward.launch(*arguments)


class RecordedLaunches:
    """Stands for a Triton kernel: records the options each launch passes (its lower-case keywords)."""

    def __init__(self):
        self.options: list[dict] = []

    def __getitem__(self, grid):
        def launch(*args, **keywords) -> None:
            self.options.append({name: value for name, value in keywords.items() if not name.isupper()})
        return launch


def test_every_launch_of_the_networks_and_losss_kernels_passes_the_launch_options(monkeypatch):
    """``triton_launch.OPTIONS`` (products and sums fused, as the kernels' GPU tests ran) at each launch: the
    forward kernel's, the gradients' kernels' whole trunks and layer by layer, and the loss's both ways."""
    pytest.importorskip("triton")
    from warpsim.train import actor_critic_backward_kernel, actor_critic_kernel, categorical_terms_kernel, triton_launch
    sys.path.insert(0, str(INTERPRETER.parent))
    from interpret_actor_critic import weights
    from interpret_actor_critic_backward import output_gradients
    kernels = {(module, name): RecordedLaunches() for module, name in [
        (actor_critic_kernel, "fused_actor_critic"), (actor_critic_backward_kernel, "fused_trunk_backward"),
        (actor_critic_backward_kernel, "fused_actor_critic_backward"), (categorical_terms_kernel, "categorical_terms"),
        (categorical_terms_kernel, "categorical_terms_backward")]}
    for (module, name), recorded in kernels.items():
        monkeypatch.setattr(module, name, recorded)
    arguments = weights(CASES[0])
    fused_forward.launch(*arguments)
    backward: Callable[..., torch.Tensor] = fused_backward.launch_backward  # the arguments: the op's tuple
    for whole_trunks in (True, False):
        backward(*output_gradients(arguments, 0), *arguments, whole_trunks=whole_trunks)
    logits, actions = torch.zeros(4, 42, dtype=torch.bfloat16), torch.zeros(4, 2, dtype=torch.int32)
    categorical_terms.launch(logits, actions, [21, 21])
    categorical_terms.launch_backward(torch.ones(4), torch.ones(4), logits, actions, [21, 21])
    assert all(recorded.options for recorded in kernels.values())
    assert all(options.items() >= triton_launch.OPTIONS.items()
               for recorded in kernels.values() for options in recorded.options)
