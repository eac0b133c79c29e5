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
from warpsim.errors import InvalidValueError
from warpsim.roles import Role

STATE = ("returns", "counter_start", "counter_last", "length", "finished", "first_event", "last_event", "totals")


class EpisodeStats:
    """Totals over the episodes finished since the last ``read``."""

    def __init__(self, env: Environment, roles: list[Role], episodes_per_env: int | None = None, blocks: int = 1,
                 counted_per_block: int | None = None):
        """``episodes_per_env`` counts only each environment's first that many episodes: a
        sample that does not favour short episodes (the first to finish). ``blocks`` splits the
        environments into that many equal blocks with totals of their own (``read_blocks``), each
        summed as it would be in an environment of its own (a batched evaluation's plays), of which
        only the first ``counted_per_block`` count (with ``episodes_per_env``; default: all)."""
        if env.num_envs % blocks:
            raise InvalidValueError(f"blocks={blocks} does not divide the {env.num_envs} environments")
        if counted_per_block is not None and episodes_per_env is None:
            raise InvalidValueError("counted_per_block needs episodes_per_env")
        self.env = env
        self.episodes_per_env = episodes_per_env
        self.blocks = blocks
        self.block_size = env.num_envs // blocks
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
        if counted_per_block is not None:  # the environments past it have had all their episodes already
            self.finished.view(blocks, self.block_size)[:, counted_per_block:] = math.inf
        # Step of each counter's first and last event in the running episode, 0 before one.
        self.first_event = torch.zeros(counters, env.num_envs, device=device)
        self.last_event = torch.zeros(counters, env.num_envs, device=device)
        # episodes, returns per role, counts per counter, length, terminated, first and last per counter
        self.totals = torch.zeros(blocks, 1 + len(roles) + 3 * counters + 2, device=device)

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
        counted_blocks = counted.view(self.blocks, self.block_size)

        def per_block(values: torch.Tensor) -> torch.Tensor:
            """float[blocks, C]: the counted episodes' sum of ``values`` float[C, E] (or float[E], C = 1)
            in each block: sums of whole numbers, exact in any order. Not a matrix product: on a GPU that
            is two matrix-library kernels of its own, where a compiled record fuses a sum with the rest."""
            rows = values.shape[0] if values.dim() == 2 else 1
            by_block = values.view(rows, self.blocks, self.block_size).transpose(0, 1)
            return (by_block * counted_blocks.unsqueeze(1)).sum(-1)

        self.totals[:, 0] += counted_blocks.sum(-1)
        for block in range(self.blocks):  # returns are not whole: each block sums as alone
            envs = slice(block * self.block_size, (block + 1) * self.block_size)
            self.totals[block, 1:1 + roles] += counted[envs] @ (self.returns[envs] @ self.role_weights.T)
        at = 1 + roles
        self.totals[:, at:at + count] += per_block(episode_counts)
        self.totals[:, at + count:at + count + 1] += per_block(self.length)
        self.totals[:, at + count + 1:at + count + 2] += per_block(self.env.terminated.float())
        self.totals[:, at + count + 2:at + 2 * count + 2] += per_block(first)
        self.totals[:, at + 2 * count + 2:] += per_block(last)
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
        if self.blocks != 1:
            raise InvalidValueError(f"these statistics have {self.blocks} blocks; read them with read_blocks()")
        return self.read_blocks()[0]

    def read_blocks(self) -> list[dict]:
        """``read`` of each block."""
        blocks = self.totals.tolist()
        self.totals.zero_()
        reports = []
        for values in blocks:
            episodes = int(round(values[0]))
            mean = (lambda total, count=episodes: total / count) if episodes else (lambda total: math.nan)
            report: dict[str, float] = {"episodes": episodes}
            for name, total in zip(figure_names(self.role_names, self.counter_names), values[1:]):
                report[name] = mean(total)
            reports.append(report)
        return reports

    def state_dict(self) -> dict:
        return {name: getattr(self, name).cpu() for name in STATE}

    def load_state_dict(self, state: dict) -> None:
        for name in STATE:  # copy_ broadcasts: the totals[K] of earlier checkpoints fill totals[1, K]
            getattr(self, name).copy_(state[name])


def figure_names(role_names: list[str], counter_names: list[str]) -> list[str]:
    """The per-episode means ``EpisodeStats.read`` reports, in the order its totals keep them."""
    return ([f"return_{name}" for name in role_names] + [f"{name}_per_episode" for name in counter_names]
            + ["episode_length", "terminated_fraction"] + [f"steps_to_first_{name}" for name in counter_names]
            + [f"steps_to_last_{name}" for name in counter_names])
