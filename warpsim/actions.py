"""Uniformly random actions of an environment's kind: an index of each discrete component, or a
value within the bounds of each continuous one, drawn on the device with no host synchronisation
and reproducible from a generator (random players, random opponents, benchmarks)."""

from __future__ import annotations

import torch

from warpsim.spec import EnvSpec


class RandomActions:
    """``random_actions(shape, generator)`` -> actions ``[*shape, A]`` as the environment of ``spec`` takes them."""

    def __init__(self, spec: EnvSpec, device: torch.device):
        self.continuous = spec.continuous
        if spec.continuous:
            bounds = torch.tensor(spec.action_bounds, dtype=torch.float32, device=device)
            self.scale = bounds[:, 1] - bounds[:, 0]
            self.low = bounds[:, 0]
        else:
            self.scale = torch.tensor(spec.action_levels, device=device)
        self.device = device

    def __call__(self, shape: tuple[int, ...], generator: torch.Generator | None = None) -> torch.Tensor:
        """int32 indices, each component uniform over its levels; or float32 values uniform in its bounds."""
        uniform = torch.rand((*shape, len(self.scale)), device=self.device, generator=generator)
        if self.continuous:
            return self.low + uniform * self.scale
        return (uniform * self.scale).to(torch.int32)
