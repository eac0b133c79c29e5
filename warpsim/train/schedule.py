"""The learning rate of each learning role, held on the networks' device and moved there.

Adam reads each role's rate from a float32 tensor (one parameter group per role), so the
kl schedule changes it from the measured KL without the host reading anything; the
linear schedule writes it once per iteration.
"""

from __future__ import annotations

import torch

from warpsim.train.config import TrainConfig

KL_FACTOR = 1.5
"""The kl schedule multiplies the rate by this when an epoch's KL is under half the target,
and divides it by this when the KL is over twice the target (rl_games' adaptive rule)."""


class LearningRates:
    """One float32 rate tensor per learning role (``rates``), for the optimizer's parameter groups."""

    def __init__(self, config: TrainConfig, roles: int, device: torch.device):
        self.config = config
        self.rates = [torch.full((), config.learning_rate, dtype=torch.float32, device=device) for _ in range(roles)]
        self.anchor = (0, config.learning_rate)
        """(iteration, rate): the linear schedule falls from here to min_learning_rate at the last iteration."""

    def start_iteration(self, iteration: int) -> None:
        """Sets the linear schedule's rate for ``iteration``; the other schedules keep theirs."""
        c = self.config
        if c.lr_schedule != "linear":
            return
        start, rate = self.anchor
        remaining = max(1.0 - (iteration - start) / (c.iterations - start), 0.0)
        for tensor in self.rates:
            tensor.fill_(c.min_learning_rate + (rate - c.min_learning_rate) * remaining)

    def end_epoch(self, kl: torch.Tensor) -> None:
        """The kl schedule's move after an epoch whose mean approx_kl per role was ``kl`` float32[R]."""
        c = self.config
        if c.lr_schedule != "kl":
            return
        steps = (kl < c.target_kl / 2).float() - (kl > 2 * c.target_kl).float()  # +1 up, -1 down, 0 stay
        for tensor, step in zip(self.rates, KL_FACTOR ** steps):
            tensor.copy_((tensor * step).clamp(c.min_learning_rate, c.max_learning_rate))

    def values(self) -> torch.Tensor:
        """float32[R], on the device (read with the other metrics)."""
        return torch.stack(self.rates)

    def state_dict(self) -> dict:
        return {"rates": self.values().cpu(), "anchor": list(self.anchor)}

    def load_state_dict(self, state: dict) -> None:
        """Continues from ``state_dict()``."""
        for tensor, value in zip(self.rates, state["rates"]):
            tensor.copy_(value)
        start, rate = state["anchor"]
        self.anchor = (int(start), float(rate))

    def extend_from(self, iteration: int) -> None:
        """A run given a new number of iterations at ``iteration``: the linear schedule falls
        from the rate reached there over what is left."""
        self.anchor = (iteration, float(self.rates[0]))
