"""The per-minibatch loss through torch.compile, on the CPU: the eager loss's value, statistics
and gradients, and a run that trains as the eager one does. One compile in all (forward and
backward, one minibatch size): it takes tens of seconds on a small CPU."""

import io
import shutil

import pytest
import torch

from warpsim.train import TrainConfig
from warpsim.train.loop import train
from warpsim.train.loss import STATS, MinibatchLoss
from warpsim.train.rollout import Samples

COMPILER = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
# Only the taggers learn: one role, 4 x 4 x 2 samples in two minibatches of 16, so one compiled shape.
GRID = dict(env="tag_gridworld", env_params=dict(num_taggers=2, grid_length=5, episode_length=5),
            opponents={"runner": "random"}, num_envs=4, rollout_steps=4, backend="numpy", epochs=2, minibatches=2,
            iterations=2, log_every=1)


@pytest.mark.skipif(COMPILER is None, reason="torch.compile needs a C++ compiler on the CPU")
def test_the_compiled_loss_gives_the_eager_loss_and_gradients_and_trains_alike(tmp_path):
    progress = io.StringIO()
    trainer = train(TrainConfig(**GRID, compile_loss=True), tmp_path / "compiled", progress=progress)
    assert trainer.learner.loss.compiled and trainer.learner.loss.compile_seconds > 0
    assert (f"compiled the loss in {trainer.learner.loss.compile_seconds:.1f} s, before the first iteration "
            f"(not counted in steps/s)") in progress.getvalue()

    # A minibatch of the trained size at random: the same loss, statistics and gradients. Fused
    # arithmetic rounds differently: float32 sums of 16 terms agree to about 1e-6. One run: a leading
    # dimension of 1.
    eager = MinibatchLoss(trainer.configs, trainer.policies.head, compiled=False, device=trainer.device)
    generator = torch.Generator().manual_seed(1)
    levels = trainer.env.spec.action_levels
    actions = torch.stack([torch.randint(0, level, (16,), generator=generator) for level in levels], 1)
    batch = Samples(torch.zeros(1, 16, 1), actions.to(torch.int32)[None], *(torch.randn(4, 1, 16, generator=generator)))
    logits_start = torch.randn(1, 16, sum(levels), generator=generator)
    value_start = torch.randn(1, 16, generator=generator)
    results = []
    for loss in (trainer.learner.loss, eager):
        logits, value = logits_start.clone().requires_grad_(), value_start.clone().requires_grad_()
        total, stats = loss(torch.tensor([0.25]), logits, value, batch)
        total.sum().backward()
        results.append((total.detach(), stats, logits.grad, value.grad))
    for compiled, plain, name in zip(*results, ["loss", "stats", "logits gradient", "value gradient"]):
        torch.testing.assert_close(compiled, plain, rtol=1e-5, atol=1e-6, msg=name)
    assert results[1][1].shape == (1, len(STATS)) and results[1][2].abs().sum() > 0

    plain_run = train(TrainConfig(**GRID), tmp_path / "eager", progress=None)
    for compiled_parameter, plain_parameter in zip(trainer.policies.parameters(), plain_run.policies.parameters()):
        torch.testing.assert_close(compiled_parameter, plain_parameter, rtol=1e-5, atol=1e-5)
    assert not plain_run.learner.loss.compiled and plain_run.learner.loss.compile_seconds == 0
