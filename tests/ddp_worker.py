"""Run by test_distributed under torchrun: trains a few iterations on this rank, then saves
its parameters and environment state to <out>/rank<r>.pt for the test to compare."""

import sys
from pathlib import Path

import torch

from warpsim.train import TrainConfig
from warpsim.train.distributed import World
from warpsim.train.loop import train

CONFIG = TrainConfig(env="tag_gridworld", env_params=dict(num_taggers=2, grid_length=5, episode_length=6),
                     num_envs=4, rollout_steps=8, iterations=3, log_every=1, backend="numpy")

if __name__ == "__main__":
    out = Path(sys.argv[1])
    world = World.from_environment(uses_gpu=False)
    trainer = train(CONFIG, out / "run", world=world, progress=None)
    torch.save({"parameters": [p.detach() for p in trainer.policies.parameters()],
                "env": {name: tensor.clone() for name, tensor in trainer.env.state.items()}},
               out / f"rank{world.rank}.pt")
    world.close()
