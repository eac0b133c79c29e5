"""The running mean and standard deviation of a role's returns, so that its critic learns
targets of about unit scale whatever the rewards are (the value normalisation of MAPPO)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

MIN_VARIANCE = 1e-4
"""The variance is taken as at least this much: returns that are all equal (no reward yet)
would otherwise blow the normalised targets up."""


class ValueNormalizer(nn.Module):
    """Mean and variance of every return seen, merged batch by batch (Chan et al.'s parallel
    update), in float64 buffers: exact over billions of samples and saved in the network's
    state dict, so a resumed run continues with the very same statistics.

    With ``runs``, each statistic is one per training run (float64[R]), and the returns
    given have the run as their leading dimension: each run merges its own."""

    count: torch.Tensor
    """float64[] or float64[R]: returns merged so far."""
    mean: torch.Tensor
    """float64[] or float64[R]"""
    variance: torch.Tensor
    """float64[] or float64[R]: of the population of returns merged."""

    def __init__(self, runs: int | None = None):
        super().__init__()
        shape = () if runs is None else (runs,)
        self.register_buffer("count", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("variance", torch.ones(shape, dtype=torch.float64))

    @torch.no_grad()
    def update(self, returns: torch.Tensor, all_reduce: Callable[[torch.Tensor], None] | None = None) -> None:
        """Merges ``returns`` (any shape; float[R, ...] with runs) into the statistics, on the
        device; ``all_reduce`` sums a tensor over the processes of a distributed run in place,
        so every process merges the same batch."""
        values = returns.detach().to(torch.float64).reshape(*self.count.shape, -1)
        moments = torch.stack([values.new_full(self.count.shape, values.shape[-1]), values.sum(-1),
                               (values * values).sum(-1)])
        if all_reduce is not None:
            all_reduce(moments)
        count, total, squares = moments
        batch_mean = total / count
        batch_variance = (squares / count - batch_mean * batch_mean).clamp(min=0.0)
        merged = self.count + count
        delta = batch_mean - self.mean
        self.variance.copy_((self.variance * self.count + batch_variance * count
                             + delta * delta * self.count * count / merged) / merged)
        self.mean.add_(delta * count / merged)
        self.count.copy_(merged)

    def std(self) -> torch.Tensor:
        return self.variance.clamp(min=MIN_VARIANCE).sqrt()

    def normalize(self, returns: torch.Tensor) -> torch.Tensor:
        """float32 ``returns`` in units of the standard deviation around the mean."""
        mean, std = _per_run(self.mean, returns), _per_run(self.std(), returns)
        return ((returns - mean) / std).to(torch.float32)

    def denormalize(self, values: torch.Tensor) -> torch.Tensor:
        """float32 normalised ``values`` back in units of the returns."""
        mean, std = _per_run(self.mean, values), _per_run(self.std(), values)
        return (values.to(torch.float64) * std + mean).to(torch.float32)


def _per_run(statistic: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``statistic`` (float64[] or [R]) shaped to broadcast along the leading dimension of ``like``."""
    return statistic.reshape(*statistic.shape, *(1,) * (like.dim() - statistic.dim()))
