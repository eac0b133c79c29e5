"""The trainer's play: rollouts of T steps of every run's environments into the rollout
storage, and the random steps of a staggered start.

Each run has its own environments, seeded with its own seed, and its own generator for
the actions it samples: run r draws exactly the numbers it would draw trained alone. The
networks of all runs act in one batched forward pass. Every step writes each role's
actions where the environments read them (``step_actions``, copied to ``env.actions``
when the networks run elsewhere): the roles that follow a policy by ``RunPolicies.act``,
the random ones uniformly. Nothing here reads the device from the host, so that a CUDA
graph can capture a rollout whole.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

import torch

from warpsim.actions import RandomActions
from warpsim.environment import Environment
from warpsim.roles import Role
from warpsim.train.episodes import EpisodeStats
from warpsim.train.opponents import write_random_actions
from warpsim.train.policy import RunPolicies
from warpsim.train.rollout import RoleRollout
from warpsim.train.stacking import ObservationStack


@dataclass
class Collector:
    """What a rollout reads and writes; ``collect()`` fills ``storage``, ``terminated`` and ``truncated``."""

    envs: list[Environment]
    """Each run's environments."""
    inputs: list[ObservationStack]
    """Each run's policy inputs."""
    stats: list[EpisodeStats]
    """Each run's episode statistics."""
    policies: RunPolicies
    generators: list[torch.Generator]
    """Each run's generator, on the networks' device."""
    roles: list[Role]
    """Every role, its agents indexed on the environments' device."""
    learners: list[Role]
    """The roles that learn (their rollout is stored)."""
    random_roles: list[Role]
    """The roles that play uniformly at random."""
    storage: dict[str, RoleRollout]
    """Each learning role's rollout, float[R, T, E, n, ...]."""
    terminated: torch.Tensor
    """bool[R, T, E, 1]"""
    truncated: torch.Tensor
    """bool[R, T, E, 1]"""
    device: torch.device
    """The networks' device."""
    autocast: Callable[[], AbstractContextManager] = contextlib.nullcontext
    policy_roles: dict[str, Role] = field(init=False)
    """The roles, their agents indexed on the networks' device."""
    acting: list[Role] = field(init=False)
    """The roles that follow a policy, learning or frozen."""
    step_actions: list[torch.Tensor] = field(init=False)
    """Each run's step actions as the networks write them; copied to ``env.actions`` once per step when hybrid."""

    def __post_init__(self):
        self.policy_roles = {role.name: role.on(self.device) for role in self.roles}
        random_names = {role.name for role in self.random_roles}
        self.acting = [role for role in self.roles if role.name not in random_names]
        self.hybrid = self.device != self.envs[0].device
        self.step_actions = [torch.zeros_like(env.actions, device=self.device) if self.hybrid else env.actions
                             for env in self.envs]
        self.random_actions = RandomActions(self.envs[0].spec, self.device)

    @torch.no_grad()
    def collect(self) -> list[torch.Tensor]:
        """Steps every environment ``rollout_steps`` times, storing the learning roles' side of each
        step; returns each learning role's value float32[R, E, n] of the final observations."""
        names = [role.name for role in self.acting]
        for t in range(self.terminated.shape[1]):
            inputs = [stack.advance() for stack in self.inputs]
            # Hybrid: the step's one copy to the networks. Being blocking, it also lets the last update's
            # non-blocking copies out of the pinned storage finish before this step overwrites it.
            policy_inputs = [run_inputs.to(self.device) for run_inputs in inputs]
            batches = [self._policy_batch(role, t, inputs, policy_inputs) for role in self.acting]
            acted = self.policies.act(batches, names, self.generators, autocast=self.autocast)
            for role, (actions, log_probs, values) in zip(self.acting, acted):
                actions = actions.view(len(self.envs), -1, role.count, actions.shape[-1])
                stored = self.storage.get(role.name)
                if stored is not None:
                    stored.log_probs[:, t].copy_(log_probs.view(stored.log_probs[:, t].shape))
                    stored.values[:, t].copy_(values.view(stored.values[:, t].shape))
                    stored.actions[:, t].copy_(actions)
                for run_actions, run_step_actions in zip(self.policies.head.to_env(actions), self.step_actions):
                    self.policy_roles[role.name].write(run_step_actions, run_actions)
            self._step(self.random_roles)
            for run, env in enumerate(self.envs):
                for role in self.learners:
                    self.storage[role.name].rewards[run, t].copy_(role.of(env.rewards))
                self.terminated[run, t, :, 0].copy_(env.terminated)
                torch.logical_and(env.done, ~env.terminated, out=self.truncated[run, t, :, 0])
                self.stats[run].record()
        inputs = [stack.peek().to(self.device) for stack in self.inputs]  # hybrid: one more copy per rollout
        with self.autocast():
            outputs = self.policies([self._stacked(role, inputs) for role in self.learners],
                                    [role.name for role in self.learners])
        return [self.policies.network(role.name).returns_scale(values.float()).view(len(self.envs), -1, role.count)
                for role, (_, values) in zip(self.learners, outputs)]

    def _policy_batch(self, role: Role, t: int, inputs: list[torch.Tensor],
                      policy_inputs: list[torch.Tensor]) -> torch.Tensor:
        """The role's inputs float[R, E * n, D] on the networks' device; a learning role's are stored at step ``t``."""
        stored = self.storage.get(role.name)
        if stored is not None:
            for run, run_inputs in enumerate(inputs):
                stored.observations[run, t].copy_(role.of(run_inputs))
            if not self.hybrid:
                return stored.observations[:, t].flatten(1, 2)  # the stored copy: no second gather
        return self._stacked(role, policy_inputs)

    def _stacked(self, role: Role, inputs: list[torch.Tensor]) -> torch.Tensor:
        """float[R, E * n, D]: the role's agents' rows of each run's inputs float[E, N, D] (networks' device)."""
        return torch.stack([self.policy_roles[role.name].of(run_inputs).flatten(0, 1) for run_inputs in inputs])

    def _step(self, random_roles: list[Role]) -> None:
        """Draws ``random_roles``' actions, hands the step's actions to the environments and steps them."""
        for env, stack, actions, generator in zip(self.envs, self.inputs, self.step_actions, self.generators):
            write_random_actions([self.policy_roles[role.name] for role in random_roles], actions,
                                 self.random_actions, generator)
            if self.hybrid:
                env.actions.copy_(actions)  # the step's one copy back
            env.step()
            stack.stepped()

    def stagger_starts(self, steps: int) -> None:
        """Plays ``steps`` steps at random, resetting each environment once at a random one of
        them, so that training starts with the environments at different points of their
        episodes. These steps are not counted as training's, nor are their episodes."""
        if steps == 0:
            return
        restart_at = [torch.randint(0, steps, (env.num_envs,), device=self.device, generator=generator).to(env.device)
                      for env, generator in zip(self.envs, self.generators)]
        for step in range(steps):
            self._step(self.roles)
            for env, stats, at in zip(self.envs, self.stats, restart_at):
                stats.record()
                restart = at == step
                env.reset(restart)
                stats.restart(restart)
        for stack, stats in zip(self.inputs, self.stats):
            stack.restart()
            stats.read()
