"""PPO's loss computed in the gradients' kernels (``gradient_kernels='loss'``, warpsim.train.fused_loss): its CPU
form is autograd of the update's loss through the networks' kernels, bit for bit; the kernel computes as that form
in Triton's interpreter and on a GPU; the settings it cannot take are refused in one line."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from warpsim.errors import InvalidValueError
from warpsim.train import TrainConfig, Trainer, fused_backward, fused_loss
from warpsim.train.action_heads import CategoricalHeads
from warpsim.train.fused_backward import DifferentiableActorCritic
from warpsim.train.loss import STATS, MinibatchLoss
from warpsim.train.rollout import Samples

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))
from interpret_actor_critic import weights  # noqa: E402
from interpret_actor_critic_backward import relative_difference  # noqa: E402
from interpret_ppo_loss import minibatch  # noqa: E402

CASES: list[dict[str, Any]] = [
    # train-ref's discrete roles: 71 inputs, two layers of 64, two components of 21, two runs
    dict(runs=2, rows=70, inputs=71, hidden=64, layers=2, outputs=42, levels=[21, 21], shared=False, seed=0,
         scale=1.0, programs=2, value_clip=True),
    # one layer, one component of 5 (a tile of 16 columns), three runs, the value unclipped; more programs than blocks
    dict(runs=3, rows=20, inputs=10, hidden=24, layers=1, outputs=5, levels=[5], shared=False, seed=1, scale=1.0,
         programs=4, value_clip=False),
    # three components of 3 (four of four columns), 130 inputs (two blocks of inputs: one program stores the statistics)
    dict(runs=1, rows=150, inputs=130, hidden=32, layers=2, outputs=9, levels=[3, 3, 3], shared=False, seed=2,
         scale=3.0, programs=2, value_clip=True),
]
TAG: dict[str, Any] = dict(env="tag_continuous", env_params=dict(num_taggers=2, num_runners=3, episode_length=10),
                           num_envs=4, rollout_steps=6, epochs=2, minibatches=2, backend="numpy", compile="on",
                           precision="bf16")


def configs_of(case: dict) -> list[TrainConfig]:
    """A config per run of ``case`` with the coefficients ``minibatch`` draws."""
    *_, coefficients, _, value_clip = minibatch(case, weights(case))
    return [TrainConfig(env="tag_continuous", clip_coef=float(clip), value_clip=float(clipped) if value_clip else None,
                        value_coef=float(value), entropy_coef=float(entropy))
            for clip, clipped, value, entropy in coefficients.tolist()]


@pytest.mark.parametrize("case", CASES, ids=["train-ref", "one component", "three components"])
def test_the_cpu_form_is_autograd_of_the_updates_loss_bit_for_bit(case):
    """The same loss, statistics and gradients at every weight as ``MinibatchLoss`` on the networks' kernel's
    outputs differentiated by autograd, the advantages normalised as it normalises them; ties of the clipped and the
    unclipped objective (ratios of 1) in a quarter of the rows."""
    arguments = weights(case)
    rollout, picks, actions, old_log_probs, advantages, old_values, returns, coefficients, _, _ = minibatch(
        case, arguments)
    loss = MinibatchLoss(configs_of(case), torch.device("cpu"), fused=True)
    assert torch.equal(loss.coefficients, coefficients)
    batch = Samples(arguments[0], actions, old_log_probs, old_values, advantages, returns)
    head, zeros = CategoricalHeads(case["levels"]), torch.zeros(case["runs"])
    eager_leaves, kernel_leaves = ([weight.detach().clone().requires_grad_() for weight in arguments[1:-1]]
                                   for _ in range(2))
    policy, values = DifferentiableActorCritic.apply(arguments[0], *eager_leaves, False)
    total, stats = loss(zeros, head, policy, values, batch)
    in_kernels, kernel_stats = loss.in_kernels(zeros, head, rollout, picks, tuple(kernel_leaves),
                                               batch._replace(observations=rollout))
    torch.testing.assert_close(in_kernels, total, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(kernel_stats, stats, rtol=1e-5, atol=1e-6)
    expected = torch.autograd.grad(total.sum(), eager_leaves)
    found = torch.autograd.grad(in_kernels.sum(), kernel_leaves)
    names = ["actor"] * 4 + ["critic"] * 4 + ["policy", "policy bias", "value", "value bias"]
    for name, mine, theirs in zip(names, found, expected):
        assert torch.equal(mine, theirs), name
        assert mine.numel() == 0 or theirs.abs().max() > 0, name


def test_its_gradients_are_the_losss_through_autograd_times_the_losss_own():
    """``DifferentiablePPOLoss`` under autograd: each run's weights get its loss's gradient times the gradient
    reaching that loss (3 for the first run, 0 for the second here)."""
    case = CASES[0]
    arguments = weights(case)
    operands = minibatch(case, arguments)
    leaves = [weight.detach().clone().requires_grad_() for weight in arguments[1:-1]]
    loss, stats, _ = fused_loss.DifferentiablePPOLoss.apply(*operands, *leaves)
    assert loss.shape == (2,) and stats.shape == (2, len(STATS))
    scaled = torch.autograd.grad((loss * torch.tensor([3.0, 0.0])).sum(), leaves)
    _, gradients = fused_loss.ppo_loss_gradients(*operands, *arguments[1:-1])
    for mine, theirs in zip(scaled, fused_backward.split_gradients(gradients, leaves)):
        torch.testing.assert_close(mine[0], (3 * theirs[0].float()).to(mine.dtype))
        assert not mine[1].any()


@pytest.mark.slow(seconds=26)
def test_the_kernel_computes_as_the_cpu_form_in_tritons_interpreter():
    """Every weight's and bias's gradient within a bfloat16 rounding of its largest entry, summed over blocks of
    rows and programs, and each run's statistics within float32's rounding of the CPU form's: the loss computed in
    the gradients' kernels, and in a forward kernel of its own (``in_forward``)."""
    pytest.importorskip("triton")
    launches = [dict(case, in_forward=in_forward) for in_forward in (False, True) for case in CASES]
    result = subprocess.run([sys.executable, str(TESTS / "interpret_ppo_loss.py"), json.dumps(launches)],
                            capture_output=True, text=True, env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    found_all = json.loads(result.stdout)
    assert len(found_all) == len(launches)
    for case, found in zip(launches, found_all):
        for name, difference in found["gradients"].items():
            assert (difference["largest"] == 0) is (case["layers"] == 1 and "hidden" in name), (case, name)
            assert difference["difference"] <= 2 ** -7, (case, name, difference)
        assert list(found["statistics"]) == list(STATS)
        for name, (mine, theirs) in found["statistics"].items():
            assert len(mine) == case["runs"] and mine == pytest.approx(theirs, rel=1e-4, abs=1e-6), (case, name)


@pytest.mark.gpu
@pytest.mark.parametrize("in_forward", [False, True], ids=["in the gradients' kernels", "in a forward kernel"])
@pytest.mark.parametrize("case", CASES, ids=["train-ref", "one component", "three components"])
def test_the_kernel_computes_as_the_cpu_form_on_a_gpu(case, in_forward):
    arguments = weights(case)
    operands = (*minibatch(case, arguments), *arguments[1:-1])
    statistics, gradients = fused_loss.ppo_loss_gradients(*operands)
    on_the_gpu: list[Any] = [value.cuda() if isinstance(value, torch.Tensor) else value for value in operands]
    kernel_statistics, kernel_gradients = fused_loss.launch(*on_the_gpu, in_forward=in_forward)
    for mine, theirs in zip(fused_backward.split_gradients(kernel_gradients.cpu(), list(arguments[1:-1])),
                            fused_backward.split_gradients(gradients, list(arguments[1:-1]))):
        assert relative_difference(mine, theirs) <= 2 ** -7
    torch.testing.assert_close(kernel_statistics.cpu(), statistics, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("changes, message", [
    (dict(shared_trunk=True), "shared_trunk=True, hidden_size=64, hidden_layers=2"),
    (dict(hidden_size=128), "shared_trunk=False, hidden_size=128, hidden_layers=2"),
    (dict(hidden_layers=3), "shared_trunk=False, hidden_size=64, hidden_layers=3"),
])
def test_networks_the_kernel_cannot_take_are_refused_by_the_config(changes, message):
    with pytest.raises(InvalidValueError, match=r"^config field gradient_kernels='loss' is not allowed; loss needs a "
                                                r"trunk each of at most two layers 64 wide, and this config has "
                                                + message + r": change those, or set gradient_kernels 'on'$"):
        TrainConfig(**TAG, gradient_kernels="loss", **changes)


def test_continuous_actions_are_refused_before_any_network_learns():
    with pytest.raises(InvalidValueError, match=r"^config field gradient_kernels='loss' needs discrete actions whose "
                                                r"components have equal levels, and role 'walker' of beacon has "
                                                r"continuous actions: set gradient_kernels 'on'$"):
        Trainer(TrainConfig(**dict(TAG, env="beacon", env_params=dict(num_agents=3, episode_length=8,
                                                                       continuous_actions=True)),
                            gradient_kernels="loss"))


def test_the_trainer_takes_it_on_its_fused_path_and_says_how_a_compile_failure_turns_it_off():
    trainer = Trainer(TrainConfig(**TAG, gradient_kernels="loss"))
    assert trainer.policies.loss_kernels and trainer.policies.gradient_kernels
    assert trainer.learner.fused_step is not None
    assert trainer.learner.fused_step._ways_out == ("gradient_kernels='on'", "gradient_kernels='off'")


def test_training_with_it_where_the_networks_cannot_take_it_stops_before_any_file(tmp_path, capsys):
    from warpsim.cli import main
    code = main(["train", "--env", "tag_continuous", "--backend", "numpy", "--num-envs", "2", "--iterations", "1",
                 "--compile", "on", "--precision", "bf16", "--hidden-size", "128", "--gradient-kernels", "loss",
                 "--run-dir", str(tmp_path / "run")])
    assert code == 2 and not (tmp_path / "run").exists()
    assert "gradient_kernels='loss' is not allowed; loss needs a trunk each of at most two layers 64 wide" in \
        capsys.readouterr().err


def test_its_minibatch_leaves_the_observations_where_they_lie_and_picks_every_other_column():
    generator = torch.Generator().manual_seed(0)
    samples = Samples(torch.randn(2, 10, 4, generator=generator), torch.randint(0, 5, (2, 10, 2), generator=generator),
                      *torch.randn(4, 2, 10, generator=generator))
    runs, indices = torch.arange(2)[:, None], torch.stack([torch.randperm(10, generator=generator)[:3]
                                                           for _ in range(2)])
    whole, in_place = samples.pick(runs, indices), samples.pick(runs, indices, observations=False)
    assert in_place.observations is samples.observations
    assert torch.equal(whole.observations, samples.observations[runs, indices])
    for name in Samples._fields[1:]:
        assert torch.equal(getattr(in_place, name), getattr(samples, name)[runs, indices]), name
        assert torch.equal(getattr(in_place, name), getattr(whole, name)), name
