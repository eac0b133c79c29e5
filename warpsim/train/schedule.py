"""The learning rate of each training run and learning role, held on the networks' device.

Adam reads each role's rates from a float32[R] tensor (one parameter group per role, one
rate per run), so the kl schedule changes them from the measured KL without the host
reading anything; the linear schedule writes them once per iteration. Every run follows
its own config's schedule.
"""

from __future__ import annotations

import torch

from warpsim.train.config import TrainConfig

KL_FACTOR = 1.5
"""The kl schedule multiplies the rate by this when an epoch's KL is under half the target,
and divides it by this when the KL is over twice the target (rl_games' adaptive rule)."""


class LearningRates:
    """``rates`` float32[R, L]: run r's rate for learning role l; ``rates[:, l]`` is role l's Adam group's."""

    def __init__(self, configs: list[TrainConfig], roles: int, device: torch.device):
        self.configs = configs
        self.rates = torch.tensor([[c.learning_rate] * roles for c in configs], dtype=torch.float32, device=device)

        def column(name: str) -> torch.Tensor:
            return torch.tensor([[getattr(c, name)] for c in configs], dtype=torch.float32, device=device)

        self.target_kl, self.low, self.high = column("target_kl"), column("min_learning_rate"), column(
            "max_learning_rate")
        self.kl_runs = torch.tensor([[c.lr_schedule == "kl"] for c in configs], device=device)
        self.anchors = [(0, c.learning_rate) for c in configs]
        """Per run, (iteration, rate): the linear schedule falls from here to min_learning_rate at the last
        iteration."""

    def start_iteration(self, iteration: int) -> None:
        """Sets the linear schedule's rate for ``iteration``; the other schedules keep theirs."""
        for run, (c, (start, rate)) in enumerate(zip(self.configs, self.anchors)):
            if c.lr_schedule == "linear":
                remaining = max(1.0 - (iteration - start) / (c.iterations - start), 0.0)
                self.rates[run].fill_(c.min_learning_rate + (rate - c.min_learning_rate) * remaining)

    def end_epoch(self, kl: torch.Tensor) -> None:
        """The kl schedule's move after an epoch whose mean approx_kl per run and role was ``kl`` float32[R, L]."""
        if not any(c.lr_schedule == "kl" for c in self.configs):
            return
        steps = (kl < self.target_kl / 2).float() - (kl > 2 * self.target_kl).float()  # +1 up, -1 down, 0 stay
        moved = torch.minimum(torch.maximum(self.rates * KL_FACTOR ** steps, self.low), self.high)
        self.rates.copy_(torch.where(self.kl_runs, moved, self.rates))

    def values(self) -> torch.Tensor:
        """float32[R, L], on the device (read with the other metrics)."""
        return self.rates

    def run_state_dict(self, run: int) -> dict:
        return {"rates": self.rates[run].cpu().clone(), "anchor": list(self.anchors[run])}

    def load_run_state_dict(self, run: int, state: dict) -> None:
        """Continues run ``run`` from ``run_state_dict()``."""
        self.rates[run].copy_(torch.as_tensor(state["rates"]))
        start, rate = state["anchor"]
        self.anchors[run] = (int(start), float(rate))

    def extend_from(self, run: int, iteration: int) -> None:
        """Run ``run`` given a new number of iterations at ``iteration``: the linear schedule falls
        from the rate reached there over what is left."""
        self.anchors[run] = (iteration, float(self.rates[run, 0]))
