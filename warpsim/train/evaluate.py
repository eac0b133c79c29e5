"""Runs policies, or a checkpoint's, for a number of episodes and reports per-episode means."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from warpsim.environment import Environment
from warpsim.errors import InvalidValueError
from warpsim.train import ppo
from warpsim.train.episodes import EpisodeStats
from warpsim.train.policy import RolePolicies, roles_of
from warpsim.train.stacking import ObservationStack

READ_EVERY = 32
"""Steps between reads of the finished-episode count (each read synchronises once)."""


@dataclass(frozen=True)
class Evaluation:
    """Per-episode means over ``episodes`` finished episodes."""

    env: str
    episodes: int
    steps: int
    returns: dict = field(default_factory=dict)
    """Mean episode return of each role's agents, by role name."""
    counters: dict = field(default_factory=dict)
    """Events per episode of each of the environment's counters (e.g. tags)."""
    random_roles: tuple[str, ...] = ()

    def __str__(self) -> str:
        lines = [f"{self.env}: {self.episodes} episodes ({self.steps} steps of every environment)"]
        for role, value in self.returns.items():
            how = "uniformly random" if role in self.random_roles else "policy"
            lines.append(f"  mean return of a {role} ({how}): {value:.3f}")
        for name, value in self.counters.items():
            lines.append(f"  {name} per episode: {value:.3f}")
        return "\n".join(lines)


class Player:
    """Chooses every agent's actions and writes them into the environment's action buffer.

    Roles in ``random_roles`` (all of them when ``policies`` is None) act uniformly at
    random; the others follow their policy, greedily (most likely action) or sampling.
    ``stack_observations`` must be the value the policies were trained with.
    """

    def __init__(self, env: Environment, policies: RolePolicies | None, *, greedy: bool = True,
                 random_roles: tuple[str, ...] = (), stack_observations: int = 1, seed: int = 0):
        self.env = env
        self.roles = roles_of(env.spec, env.device)
        names = [role.name for role in self.roles]
        unknown = sorted(set(random_roles) - set(names))
        if unknown:
            raise InvalidValueError(
                f"random roles {unknown} are not roles of {env.name}; its roles: {', '.join(names)}")
        if policies is not None and policies.role_names != names:
            raise InvalidValueError(f"the policies are for roles {policies.role_names}, the environment has {names}")
        self.random_roles = tuple(names) if policies is None else tuple(random_roles)
        self.policies = policies
        self.greedy = greedy
        self.inputs = ObservationStack(env, stack_observations)
        self.generator = torch.Generator(env.device).manual_seed(seed)
        self.levels = torch.tensor(env.spec.action_levels, device=env.device)

    def reset(self) -> None:
        self.env.reset()
        self.inputs.restart()

    @torch.no_grad()
    def step(self) -> None:
        """Acts, steps the environment, and keeps the observation history."""
        env, inputs = self.env, self.inputs.advance()
        acting = [role for role in self.roles if role.name not in self.random_roles]
        if acting and self.policies is not None:  # roles act on their own only when there are policies
            outputs = self.policies.networks_for([role.name for role in acting],
                                                 [role.of(inputs).flatten(0, 1) for role in acting])
            for role, (logits, _) in zip(acting, outputs):
                heads = ppo.split_heads(logits, env.spec.action_levels)
                actions = ppo.sample(heads, self.generator, self.greedy)
                role.write(env.actions, actions.view(env.num_envs, role.count, -1))
        for role in self.roles:
            if role.name in self.random_roles:
                uniform = torch.rand((env.num_envs, role.count, len(self.levels)), device=env.device,
                                     generator=self.generator)
                role.write(env.actions, (uniform * self.levels).to(torch.int32))
        env.step()
        self.inputs.stepped()


def evaluate(player: Player, episodes: int, max_steps: int = 1_000_000) -> Evaluation:
    """Plays from a reset until ``episodes`` episodes have finished; per-episode means."""
    if not isinstance(episodes, int) or episodes < 1:
        raise InvalidValueError(f"episodes={episodes!r} is not allowed; give an integer >= 1")
    env = player.env
    player.reset()
    stats = EpisodeStats(env, player.roles)
    totals: dict = {}
    finished, steps = 0, 0
    while finished < episodes:
        if steps >= max_steps:
            raise RuntimeError(f"only {finished} of {episodes} episodes finished in {max_steps} steps")
        for _ in range(READ_EVERY):
            player.step()
            stats.record()
        steps += READ_EVERY
        read = stats.read()
        for key, value in read.items():
            if key != "episodes" and read["episodes"]:
                totals[key] = totals.get(key, 0.0) + value * read["episodes"]
        finished += read["episodes"]
    means = {key: total / finished for key, total in totals.items()}
    return Evaluation(
        env=env.name, episodes=finished, steps=steps,
        returns={role.name: means.get(f"return_{role.name}", math.nan) for role in player.roles},
        counters={name: means.get(f"{name}_per_episode", math.nan) for name in env.spec.counters},
        random_roles=player.random_roles)
