"""The rollout as the trainer keeps it: one RoleRollout per learning role, and the
role's Samples, flattened, that the update draws its minibatches from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch


@dataclass(frozen=True)
class RoleRollout:
    """One learning role's part of a rollout of T steps of E environments of R runs, for its n agents.

    Allocated once and overwritten by every rollout: a captured CUDA graph writes to these
    very tensors. The environments' side (observations, rewards) lives on the environments'
    device, the networks' side (actions, log-probabilities, values) on the networks' device.
    """

    observations: torch.Tensor
    """float32[R, T, E, n, D]: the policy inputs the actions were taken on (bfloat16 under bf16). On the fused path
    D is the inputs' width padded with zeros as the kernels read rows (``fused_forward.aligned_size``)."""
    actions: torch.Tensor
    """int32[R, T, E, n, A]"""
    log_probs: torch.Tensor
    """float32[R, T, E, n]: of the actions, under the policy that took them."""
    values: torch.Tensor
    """float32[R, T, E, n]: the value head's estimate of the observations."""
    rewards: torch.Tensor
    """float32[R, T, E, n]: what the step with those actions paid."""

    def at(self, step: int) -> RoleRollout:
        """Views of step ``step``: every field without its T dimension."""
        return RoleRollout(self.observations[:, step], self.actions[:, step], self.log_probs[:, step],
                           self.values[:, step], self.rewards[:, step])


class Samples(NamedTuple):
    """A role's rollout flattened, in each run, to one axis B of (step, environment, agent): all of it, or a
    minibatch. Every field has the run as its leading dimension R."""

    observations: torch.Tensor
    """float32[R, B, D], D as stored (``RoleRollout.observations``)"""
    actions: torch.Tensor
    """int32[R, B, A]"""
    log_probs: torch.Tensor
    """float32[R, B], at collection"""
    values: torch.Tensor
    """float32[R, B], at collection"""
    advantages: torch.Tensor
    """float32[R, B]"""
    returns: torch.Tensor
    """float32[R, B]"""

    @classmethod
    def of(cls, rollout: RoleRollout, advantages: torch.Tensor, returns: torch.Tensor) -> Samples:
        """``rollout`` with its advantages and returns float32[R, T, E, n], flattened."""
        return cls(*(x.flatten(1, 3) for x in (rollout.observations, rollout.actions, rollout.log_probs,
                                               rollout.values, advantages, returns)))

    @property
    def num_samples(self) -> int:
        """B, the number of samples of each run."""
        return self.observations.shape[1]

    def pick(self, runs: torch.Tensor, indices: torch.Tensor, observations: bool = True) -> Samples:
        """Each run's samples at its ``indices`` int64[R, b], copied; ``runs`` is int64[R, 1], 0 to R - 1. Without
        ``observations``, the observations are left whole, the rollout's, for kernels that read the picked rows where
        they lie (``fused_loss``)."""
        observed = self.observations[runs, indices] if observations else self.observations
        return Samples(observed, *(x[runs, indices] for x in self[1:]))
