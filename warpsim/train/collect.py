"""The trainer's play: a rollout of T steps into its storage, and the random steps of a staggered start.

Every step writes each role's actions where the environments read them (``step_actions``,
copied to ``env.actions`` when the networks run elsewhere): the roles that follow a
policy by ``RolePolicies.act``, the random ones uniformly. Nothing here reads the device
from the host, so that a CUDA graph can capture a rollout whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from warpsim.roles import Role
from warpsim.train.opponents import write_random_actions

if TYPE_CHECKING:
    from warpsim.train.trainer import Trainer


@torch.no_grad()
def collect_rollout(trainer: Trainer) -> list[torch.Tensor]:
    """Steps every environment ``rollout_steps`` times, storing the learning roles' side of each
    step; returns each learning role's value float32[E, n] of the final observations."""
    env, storage = trainer.env, trainer.storage
    for t in range(trainer.config.rollout_steps):
        inputs = trainer.inputs.advance()
        # Hybrid: the step's one copy to the networks. Being blocking, it also lets the last update's
        # non-blocking copies out of the pinned storage finish before this step overwrites it.
        policy_inputs = inputs.to(trainer.device)
        batches = [_policy_batch(trainer, role, t, inputs, policy_inputs) for role in trainer.acting]
        acted = trainer.policies.act(batches, [role.name for role in trainer.acting], trainer.generator,
                                     autocast=trainer.autocast)
        for role, (actions, log_probs, values) in zip(trainer.acting, acted):
            actions = actions.view(env.num_envs, role.count, -1)
            stored = storage.get(role.name)
            if stored is not None:
                stored.log_probs[t].copy_(log_probs.view(env.num_envs, -1))
                stored.values[t].copy_(values.view(env.num_envs, role.count))
                stored.actions[t].copy_(actions)
            trainer.policy_roles[role.name].write(trainer.step_actions, actions)
        _step(trainer, trainer.random_roles)
        for role in trainer.learners:
            storage[role.name].rewards[t].copy_(role.of(env.rewards))
        trainer.terminated[t, :, 0].copy_(env.terminated)
        torch.logical_and(env.done, ~env.terminated, out=trainer.truncated[t, :, 0])
        trainer.stats.record()
    inputs = trainer.inputs.peek().to(trainer.device)  # hybrid: one more copy per rollout
    with trainer.autocast():
        outputs = trainer.policies([trainer.policy_roles[role.name].of(inputs).flatten(0, 1)
                                    for role in trainer.learners], [role.name for role in trainer.learners])
    return [trainer.policies.network(role.name).returns_scale(values.float()).view(env.num_envs, role.count)
            for role, (_, values) in zip(trainer.learners, outputs)]


def _policy_batch(trainer: Trainer, role: Role, t: int, inputs: torch.Tensor,
                  policy_inputs: torch.Tensor) -> torch.Tensor:
    """The role's inputs float[E * n, D] on the networks' device; a learning role's are stored at step ``t``."""
    stored = trainer.storage.get(role.name)
    if stored is not None:
        stored.observations[t].copy_(role.of(inputs))
        if not trainer.hybrid:
            return stored.observations[t].flatten(0, 1)  # the stored copy: no second gather
    return trainer.policy_roles[role.name].of(policy_inputs).flatten(0, 1)


def _step(trainer: Trainer, random_roles: list[Role]) -> None:
    """Draws ``random_roles``' actions, hands the step's actions to the environments and steps them."""
    write_random_actions([trainer.policy_roles[role.name] for role in random_roles], trainer.step_actions,
                         trainer.levels, trainer.generator)
    if trainer.hybrid:
        trainer.env.actions.copy_(trainer.step_actions)  # the step's one copy back
    trainer.env.step()
    trainer.inputs.stepped()


def stagger_starts(trainer: Trainer) -> None:
    """Plays ``stagger_steps`` steps at random, resetting each environment once at a random
    one of them, so that training starts with the environments at different points of
    their episodes. These steps are not counted as training's, nor are their episodes."""
    steps, env = trainer.config.stagger_steps, trainer.env
    if steps == 0:
        return
    restart_at = torch.randint(0, steps, (env.num_envs,), device=trainer.device,
                               generator=trainer.generator).to(trainer.env_device)
    for step in range(steps):
        _step(trainer, trainer.roles)
        trainer.stats.record()
        restart = restart_at == step
        env.reset(restart)
        trainer.stats.restart(restart)
    trainer.inputs.restart()
    trainer.stats.read()
