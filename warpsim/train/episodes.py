"""Episode statistics accumulated on the device and read at intervals.

Per finished episode: the mean return of each role's agents, how many events each of
the environment's counters (``EnvSpec.counters``, e.g. tags) saw, its length in steps,
whether its rules ended it (``Environment.terminated``, else a time limit cut it), and
for each counter the step of its first and of its last event in the episode (an episode
without one counts its length: these times only fall when events come sooner). When
every episode sees all the tags there are, the times and the length still move.
Recording a step is a few tensor operations with no host synchronisation; ``read``
synchronises once.
"""

from __future__ import annotations

import math

import torch

from warpsim.environment import Environment
from warpsim.roles import Role

STATE = ("returns", "counter_start", "counter_last", "length", "finished", "first_event", "last_event", "totals")


class EpisodeStats:
    """Totals over the episodes finished since the last ``read``."""

    def __init__(self, env: Environment, roles: list[Role], episodes_per_env: int | None = None):
        """``episodes_per_env`` counts only each environment's first that many episodes: a
        sample that does not favour short episodes (the first to finish)."""
        self.env = env
        self.episodes_per_env = episodes_per_env
        self.role_names = [role.name for role in roles]
        self.counter_names = list(env.spec.counters)
        device = env.device
        # role_weights[r, i] = 1/n_r for the agents of role r: returns @ weights.T is each role's mean.
        self.role_weights = torch.zeros(len(roles), env.num_agents, device=device)
        for r, role in enumerate(roles):
            role.write(self.role_weights[r:r + 1], torch.full((1, role.count), 1.0 / role.count, device=device))
        self.returns = torch.zeros(env.num_envs, env.num_agents, device=device)
        self.counter_start = self._counters().clone()
        self.counter_last = self.counter_start.clone()
        counters = len(self.counter_names)
        self.length = torch.zeros(env.num_envs, device=device)
        self.finished = torch.zeros(env.num_envs, device=device)
        # Step of each counter's first and last event in the running episode, 0 before one.
        self.first_event = torch.zeros(counters, env.num_envs, device=device)
        self.last_event = torch.zeros(counters, env.num_envs, device=device)
        # episodes, returns per role, counts per counter, length, terminated, first and last per counter
        self.totals = torch.zeros(1 + len(roles) + 3 * counters + 2, device=device)

    def _counters(self) -> torch.Tensor:
        """int32[C, E]: the counters now (C may be 0)."""
        arrays = [getattr(self.env.state, name) for name in self.counter_names]
        if not arrays:
            return torch.zeros(0, self.env.num_envs, dtype=torch.int32, device=self.env.device)
        return torch.stack(arrays)

    def record(self) -> None:
        """Adds the step the environment just took (its rewards and done flags)."""
        done = self.env.done
        if self.episodes_per_env is None:
            counted = done.float()
        else:
            counted = (done & (self.finished < self.episodes_per_env)).float()
            self.finished += done.float()
        self.returns += self.env.rewards
        self.length += 1
        counters = self._counters()
        event = counters != self.counter_last
        # In place, never rebound: a captured rollout (CUDA graph) keeps reading the same tensors.
        self.first_event.copy_(torch.where(event & (self.first_event == 0), self.length, self.first_event))
        self.last_event.copy_(torch.where(event, self.length, self.last_event))
        self.counter_last.copy_(counters)
        roles, count = len(self.role_names), len(self.counter_names)
        episode_counts = (counters - self.counter_start).float()
        first = torch.where(self.first_event > 0, self.first_event, self.length)
        last = torch.where(self.last_event > 0, self.last_event, self.length)
        self.totals[0] += counted.sum()
        self.totals[1:1 + roles] += counted @ (self.returns @ self.role_weights.T)
        at = 1 + roles
        self.totals[at:at + count] += episode_counts @ counted
        self.totals[at + count] += counted @ self.length
        self.totals[at + count + 1] += counted @ self.env.terminated.float()
        self.totals[at + count + 2:at + 2 * count + 2] += first @ counted
        self.totals[at + 2 * count + 2:] += last @ counted
        kept = 1.0 - done.float()
        self.returns *= kept[:, None]
        self.length *= kept
        self.first_event *= kept
        self.last_event *= kept
        self.counter_start.copy_(torch.where(done, counters, self.counter_start))

    def restart(self, envs: torch.Tensor) -> None:
        """Call after ``env.reset(envs)`` (bool[E]): their running episodes start anew, uncounted."""
        kept = 1.0 - envs.float()
        self.returns *= kept[:, None]
        self.length *= kept
        self.first_event *= kept
        self.last_event *= kept
        counters = self._counters()
        self.counter_start.copy_(torch.where(envs, counters, self.counter_start))
        self.counter_last.copy_(torch.where(envs, counters, self.counter_last))

    def read(self) -> dict:
        """Per-episode means since the last read (NaN when no episode finished), then restarts."""
        values = self.totals.tolist()
        self.totals.zero_()
        episodes = int(round(values[0]))
        mean = (lambda total: total / episodes) if episodes else (lambda total: math.nan)
        report: dict[str, float] = {"episodes": episodes}
        for name, total in zip(figure_names(self.role_names, self.counter_names), values[1:]):
            report[name] = mean(total)
        return report

    def state_dict(self) -> dict:
        return {name: getattr(self, name).cpu() for name in STATE}

    def load_state_dict(self, state: dict) -> None:
        for name in STATE:
            getattr(self, name).copy_(state[name])


def figure_names(role_names: list[str], counter_names: list[str]) -> list[str]:
    """The per-episode means ``EpisodeStats.read`` reports, in the order its totals keep them."""
    return ([f"return_{name}" for name in role_names] + [f"{name}_per_episode" for name in counter_names]
            + ["episode_length", "terminated_fraction"] + [f"steps_to_first_{name}" for name in counter_names]
            + [f"steps_to_last_{name}" for name in counter_names])
