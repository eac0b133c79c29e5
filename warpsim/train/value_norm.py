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
    state dict, so a resumed run continues with the very same statistics."""

    count: torch.Tensor
    mean: torch.Tensor
    variance: torch.Tensor

    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.register_buffer("mean", torch.zeros((), dtype=torch.float64))
        self.register_buffer("variance", torch.ones((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, returns: torch.Tensor, all_reduce: Callable[[torch.Tensor], None] | None = None) -> None:
        """Merges ``returns`` (any shape) into the statistics, on the device; ``all_reduce``
        sums a tensor over the processes of a distributed run in place, so every process
        merges the same batch."""
        values = returns.detach().to(torch.float64).flatten()
        moments = torch.stack([values.new_full((), values.numel()), values.sum(), (values * values).sum()])
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
        return ((returns - self.mean) / self.std()).to(torch.float32)

    def denormalize(self, values: torch.Tensor) -> torch.Tensor:
        """float32 normalised ``values`` back in units of the returns."""
        return (values.to(torch.float64) * self.std() + self.mean).to(torch.float32)
