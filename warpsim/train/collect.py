"""The trainer's play: rollouts of T steps of every run's environments into the rollout
storage, and the random steps of a staggered start.

Each run has its own environments, seeded with its own seed, and its own generator for
the actions it samples: run r draws exactly the numbers it would draw trained alone. The
networks of all runs act in one batched forward pass. Every step writes each role's
actions where the environments read them (``step_actions``, copied to ``env.actions``
when the networks run elsewhere): the roles that follow a policy by ``RunPolicies.act_with``,
the random ones uniformly. Nothing here reads the device from the host, so that a CUDA
graph can capture a rollout whole. A step is the policies' part (``_policy_step``: inputs
stored, networks, sampling, log-probabilities, values, actions stored and written), the
environments' step, and its record (``_record``: rewards and ends stored, episode
statistics); on the fused path (``compiled``) the first and the last are one compiled
function each. The random draws the policies sample from are made before them, from each
run's generator, as the eager step makes them.
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
from warpsim.train.compiled import Compiled
from warpsim.train.episodes import EpisodeStats
from warpsim.train.opponents import write_random_actions
from warpsim.train.rollout import RoleRollout
from warpsim.train.run_policies import RunPolicies
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
    compiled: bool = False
    """Whether the policies' part of a step runs as one compiled function (compiled.py)."""
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
        self.names = [role.name for role in self.acting]
        self.rows = [self.envs[0].num_envs * role.count for role in self.acting]
        """Each acting role's rows of a run's policy batch: E x its agents."""
        self.at_step = [{name: rollout.at(t) for name, rollout in self.storage.items()}
                        for t in range(self.terminated.shape[1])]
        """Each step's slices of every learning role's rollout, float[R, E, n, ...]."""
        self.policy_step: Callable[[dict, list[list[tuple]], dict[str, tuple] | None], None] = (
            Compiled(self._policy_step, "the rollout's policy step") if self.compiled else self._policy_step)
        """Stores the inputs, acts on draws made beforehand and stores what was done (``_policy_step``)."""
        self.record: Callable[[dict, torch.Tensor, torch.Tensor], None] = (
            Compiled(self._record, "the rollout's record of a step") if self.compiled else self._record)
        """Stores the step's rewards and ends and adds them to the episode statistics (``_record``)."""

    @torch.no_grad()
    def collect(self) -> list[torch.Tensor]:
        """Steps every environment ``rollout_steps`` times, storing the learning roles' side of each
        step; returns each learning role's value float32[R, E, n] of the final observations."""
        weights = self.policies.fused_weights(self.names)
        for t in range(self.terminated.shape[1]):
            self.policy_step(self.at_step[t], self.policies.noise(self.names, self.rows, self.generators, self.device),
                             weights)
            self._step(self.random_roles)
            self.record(self.at_step[t], self.terminated[:, t], self.truncated[:, t])
        inputs = [stack.peek().to(self.device) for stack in self.inputs]  # hybrid: one more copy per rollout
        with self.autocast():
            outputs = self.policies([self._stacked(role, inputs) for role in self.learners],
                                    [role.name for role in self.learners], weights)
        return [self.policies.network(role.name).returns_scale(values.float()).view(len(self.envs), -1, role.count)
                for role, (_, values) in zip(self.learners, outputs)]

    def _policy_step(self, stored: dict[str, RoleRollout], noise: list[list[tuple]],
                     weights: dict[str, tuple] | None) -> None:
        """One step of the acting roles: their inputs (each run's float[E, N, D]) made from the
        observations and stored, their actions sampled from ``noise`` (``RunPolicies.noise``) by the
        networks (on the fused path, by the kernel on ``weights``, made once a rollout:
        ``RunPolicies.fused_weights``), and the actions, log-probabilities and values stored in ``stored``
        (the step's slices of the rollout) and written where the environments read them."""
        inputs = [stack.advance() for stack in self.inputs]
        # Hybrid: the step's one copy to the networks. Being blocking, it also lets the last update's
        # non-blocking copies out of the pinned storage finish before this step overwrites it.
        policy_inputs = [run_inputs.to(self.device) for run_inputs in inputs]
        batches = [self._policy_batch(role, inputs, policy_inputs, stored) for role in self.acting]
        acted = self.policies.act_with(batches, self.names, noise, autocast=self.autocast, weights=weights)
        for role, (actions, log_probs, values) in zip(self.acting, acted):
            actions = actions.view(len(self.envs), -1, role.count, actions.shape[-1])
            step = stored.get(role.name)
            if step is not None:
                step.log_probs.copy_(log_probs.view(step.log_probs.shape))
                step.values.copy_(values.view(step.values.shape))
                step.actions.copy_(actions)
            for run_actions, run_step_actions in zip(self.policies.heads[role.name].to_env(actions), self.step_actions):
                self.policy_roles[role.name].write(run_step_actions, run_actions)

    def _record(self, stored: dict[str, RoleRollout], terminated: torch.Tensor, truncated: torch.Tensor) -> None:
        """The step's rewards and ends stored (in the step's slices of the rollout, and bool[R, E, 1]
        each), told to the inputs' history and added to the episode statistics."""
        for run, (env, stack) in enumerate(zip(self.envs, self.inputs)):
            stack.stepped()
            for role in self.learners:
                stored[role.name].rewards[run].copy_(role.of(env.rewards))
            terminated[run, :, 0].copy_(env.terminated)
            truncated[run, :, 0].copy_(torch.logical_and(env.done, ~env.terminated))
            self.stats[run].record()

    def _policy_batch(self, role: Role, inputs: list[torch.Tensor], policy_inputs: list[torch.Tensor],
                      stored: dict[str, RoleRollout]) -> torch.Tensor:
        """The role's inputs float[R, E * n, D] on the networks' device; a learning role's are stored."""
        step = stored.get(role.name)
        if step is not None:
            for run, run_inputs in enumerate(inputs):
                observed = role.observed(run_inputs, self.inputs[run].depth)
                step.observations[run, ..., :observed.shape[-1]].copy_(observed)  # the rest: the fused path's padding
            if not self.hybrid:
                return step.observations.flatten(1, 2)  # the stored copy: no second gather
        return self._stacked(role, policy_inputs)

    def _stacked(self, role: Role, inputs: list[torch.Tensor]) -> torch.Tensor:
        """float[R, E * n, D]: the role's agents' rows of each run's inputs float[E, N, D] (networks' device)."""
        return torch.stack([self.policy_roles[role.name].observed(run_inputs, stack.depth).flatten(0, 1)
                            for run_inputs, stack in zip(inputs, self.inputs)])

    def _step(self, random_roles: list[Role]) -> None:
        """Draws ``random_roles``' actions, hands the step's actions to the environments and steps them
        (the inputs' history learns which ended at ``_record``, or at a staggered start's step)."""
        for env, actions, generator in zip(self.envs, self.step_actions, self.generators):
            write_random_actions([self.policy_roles[role.name] for role in random_roles], actions,
                                 self.random_actions, generator)
            if self.hybrid:
                env.actions.copy_(actions)  # the step's one copy back
            env.step()

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
            for env, stack, stats, at in zip(self.envs, self.inputs, self.stats, restart_at):
                stack.stepped()
                stats.record()
                restart = at == step
                env.reset(restart)
                stats.restart(restart)
        for stack, stats in zip(self.inputs, self.stats):
            stack.restart()
            stats.read()
