"""Counts the aten operations of one PPO iteration on the CPU, from torch's profiler: a proxy
for the kernels an eager update launches on a GPU, measurable without one.

    python benchmarks/update_ops.py [--compile-loss]

The config is train-ref's environment (10 taggers, 100 runners, partial observation K=10,
the training rules) at 4 environments and 32-step rollouts, with the trainer's defaults
otherwise (separate actor and critic, value normalisation, kl schedule, 4 epochs x 4
minibatches), on NumPy environments and fp32 networks. Printed: aten operations (nested
ones included, as the profiler lists them) in one rollout, one update, one GAE of one role,
and one minibatch step.
"""

from __future__ import annotations

import argparse

import torch
from torch.profiler import ProfilerActivity, profile

from warpsim.configs import NAMED_CONFIGS
from warpsim.train import TrainConfig, Trainer, ppo
from warpsim.train.rollout import Samples


def aten_ops(work) -> int:
    """The aten operations ``work()`` runs."""
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        work()
    return sum(event.count for event in profiler.key_averages() if event.key.startswith("aten::"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile-loss", action="store_true", help="the loss through torch.compile")
    args = parser.parse_args()
    reference = NAMED_CONFIGS["train-ref"]
    settings = dict(env=reference.env, env_params=dict(reference.params), num_envs=4, rollout_steps=32,
                    backend="numpy", precision="fp32", minibatch_size=0)
    if args.compile_loss:
        settings["compile_loss"] = True
    trainer = Trainer(TrainConfig(**settings))
    trainer.iterate()  # allocations and first calls out of the count
    c = trainer.config
    next_values = trainer.rollout()
    counts = {"rollout": aten_ops(trainer.rollout), "update": aten_ops(lambda: trainer.update(next_values))}
    def gae(rollout, values):
        """GAE over the steps of the one run's rollout: [T, R, E, n] in, [R, T, E, n] out."""
        return [x.transpose(0, 1) for x in ppo.gae(
            rollout.rewards.transpose(0, 1), rollout.values.transpose(0, 1), trainer.terminated.transpose(0, 1),
            trainer.truncated.transpose(0, 1), values, trainer.learner.gamma, trainer.learner.gae_lambda)]

    stored = trainer.storage[trainer.learners[0].name]
    counts["GAE of one role"] = aten_ops(lambda: gae(stored, next_values[0]))
    minibatches = []
    for rollout, values in zip(trainer.storage.values(), next_values):
        samples = Samples.of(rollout, *gae(rollout, values))
        quarter = torch.randperm(samples.num_samples)[:samples.num_samples // 4]
        minibatches.append(samples.pick(torch.zeros(1, 1, dtype=torch.long), quarter[None]))
    counts["minibatch step (all roles)"] = aten_ops(lambda: trainer.learner.step_on_minibatch(minibatches, 0))
    print(f"{len(trainer.learners)} learning roles, {c.epochs} epochs x {trainer.minibatches} minibatches"
          f"{', compiled loss' if args.compile_loss else ''}:")
    for name, count in counts.items():
        print(f"  {name}: {count} aten ops")


if __name__ == "__main__":
    main()
