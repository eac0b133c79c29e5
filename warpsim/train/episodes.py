"""Episode statistics accumulated on the device and read at intervals.

Per finished episode: the mean return of each role's agents, and how many events each
of the environment's counters (``EnvSpec.counters``, e.g. tags) saw. Recording a step
is a few tensor operations with no host synchronisation; ``read`` synchronises once.
"""

from __future__ import annotations

import math

import torch

from warpsim.environment import Environment
from warpsim.train.policy import Role


class EpisodeStats:
    """Totals over the episodes finished since the last ``read``."""

    def __init__(self, env: Environment, roles: list[Role]):
        self.env = env
        self.role_names = [role.name for role in roles]
        self.counter_names = list(env.spec.counters)
        device = env.device
        # role_weights[r, i] = 1/n_r for the agents of role r: returns @ weights.T is each role's mean.
        self.role_weights = torch.zeros(len(roles), env.num_agents, device=device)
        for r, role in enumerate(roles):
            role.write(self.role_weights[r:r + 1], torch.full((1, role.count), 1.0 / role.count, device=device))
        self.returns = torch.zeros(env.num_envs, env.num_agents, device=device)
        self.counter_start = self._counters().clone()
        self.totals = torch.zeros(1 + len(roles) + len(self.counter_names), device=device)

    def _counters(self) -> torch.Tensor:
        """int32[C, E]: the counters now (C may be 0)."""
        arrays = [getattr(self.env.state, name) for name in self.counter_names]
        if not arrays:
            return torch.zeros(0, self.env.num_envs, dtype=torch.int32, device=self.env.device)
        return torch.stack(arrays)

    def record(self) -> None:
        """Adds the step the environment just took (its rewards and done flags)."""
        done = self.env.done
        ended = done.float()
        self.returns += self.env.rewards
        counters = self._counters()
        episode_counts = (counters - self.counter_start).float()
        self.totals[0] += ended.sum()
        self.totals[1:1 + len(self.role_names)] += ended @ (self.returns @ self.role_weights.T)
        self.totals[1 + len(self.role_names):] += episode_counts @ ended
        self.returns *= (1.0 - ended)[:, None]
        self.counter_start = torch.where(done, counters, self.counter_start)

    def read(self) -> dict:
        """Per-episode means since the last read (NaN when no episode finished), then restarts."""
        values = self.totals.tolist()
        self.totals.zero_()
        episodes = int(round(values[0]))
        mean = (lambda total: total / episodes) if episodes else (lambda total: math.nan)
        report: dict[str, float] = {"episodes": episodes}
        roles = len(self.role_names)
        for name, total in zip(self.role_names, values[1:1 + roles]):
            report[f"return_{name}"] = mean(total)
        for name, total in zip(self.counter_names, values[1 + roles:]):
            report[f"{name}_per_episode"] = mean(total)
        return report

    def state_dict(self) -> dict:
        return {"returns": self.returns.cpu(), "counter_start": self.counter_start.cpu(),
                "totals": self.totals.cpu()}

    def load_state_dict(self, state: dict) -> None:
        for name in ("returns", "counter_start", "totals"):
            getattr(self, name).copy_(state[name])
