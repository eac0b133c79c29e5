"""Which training runs can share one batch, and their per-run settings as device tensors.

Runs train together when they share every setting that shapes a tensor or the loop
(the environment, num_envs, the networks, the rollout and update sizes, ...). The
settings in ``PER_RUN_FIELDS`` may differ between them: the trainer holds each as a
float32[R] tensor, one value per run.
"""

from __future__ import annotations

import torch

from warpsim.train.config import TrainConfig

PER_RUN_FIELDS = ("seed", "learning_rate", "lr_schedule", "min_learning_rate", "max_learning_rate", "target_kl",
                  "gamma", "gae_lambda", "clip_coef", "value_coef", "entropy_coef", "max_grad_norm", "value_clip")
"""Settings that may differ between the runs of one batch (value_clip only between numbers: None changes the
loss's shape)."""


def batch_key(config: TrainConfig) -> tuple:
    """What runs must share to train in one batch: every setting but ``PER_RUN_FIELDS``."""
    settings = config.to_dict()
    shared = {name: value for name, value in settings.items() if name not in PER_RUN_FIELDS}
    shared["value_clip is None"] = config.value_clip is None
    return tuple(sorted((name, repr(value)) for name, value in shared.items()))


def group_by_batch(configs: list[TrainConfig]) -> list[list[int]]:
    """The indices of ``configs`` split into batches that can train together, in order of first appearance."""
    groups: dict[tuple, list[int]] = {}
    for index, config in enumerate(configs):
        groups.setdefault(batch_key(config), []).append(index)
    return list(groups.values())


def per_run(configs: list[TrainConfig], name: str, device: torch.device) -> torch.Tensor:
    """float32[R]: each run's value of the config field ``name``."""
    return torch.tensor([float(getattr(config, name)) for config in configs], dtype=torch.float32, device=device)
