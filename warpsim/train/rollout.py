"""The rollout as the trainer keeps it: one RoleRollout per learning role, and the
role's Samples, flattened, that the update draws its minibatches from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch


@dataclass(frozen=True)
class RoleRollout:
    """One learning role's part of a rollout of T steps of E environments, for its n agents.

    Allocated once and overwritten by every rollout: a captured CUDA graph writes to these
    very tensors. The environments' side (observations, rewards) lives on the environments'
    device, the networks' side (actions, log-probabilities, values) on the networks' device.
    """

    observations: torch.Tensor
    """float32[T, E, n, D]: the policy inputs the actions were taken on."""
    actions: torch.Tensor
    """int32[T, E, n, A]"""
    log_probs: torch.Tensor
    """float32[T, E, n]: of the actions, under the policy that took them."""
    values: torch.Tensor
    """float32[T, E, n]: the value head's estimate of the observations."""
    rewards: torch.Tensor
    """float32[T, E, n]: what the step with those actions paid."""


class Samples(NamedTuple):
    """A role's rollout flattened to one axis B of (step, environment, agent): all of it, or a minibatch."""

    observations: torch.Tensor
    """float32[B, D]"""
    actions: torch.Tensor
    """int32[B, A]"""
    log_probs: torch.Tensor
    """float32[B], at collection"""
    values: torch.Tensor
    """float32[B], at collection"""
    advantages: torch.Tensor
    """float32[B]"""
    returns: torch.Tensor
    """float32[B]"""

    @classmethod
    def of(cls, rollout: RoleRollout, advantages: torch.Tensor, returns: torch.Tensor) -> Samples:
        """``rollout`` with its advantages and returns float32[T, E, n], flattened."""
        return cls(*(x.flatten(0, 2) for x in (rollout.observations, rollout.actions, rollout.log_probs,
                                               rollout.values, advantages, returns)))

    @property
    def num_samples(self) -> int:
        """B, the number of samples."""
        return self.observations.shape[0]

    def pick(self, indices: torch.Tensor) -> Samples:
        """The samples at ``indices`` int64[b], copied."""
        return Samples(*(x[indices] for x in self))
