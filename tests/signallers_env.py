"""Signallers: a NumPy-only environment whose two roles act with actions of their own.

A speaker (agent 0) sees a goal g in {0, 1, 2} (the episode's count plus the environment's index,
modulo 3) and signals with one component of 3 levels; a
listener (agent 1) sees the last signal and its position, and acts with two components: a move
of 5 levels (action - 2) and a brake of 2 (1 halves the move). Both earn -|position - goal|
(``EnvSpec.role_action_levels``: (3,) and (5, 2), in a row of (5, 2)). With
``continuous_actions`` the speaker signals in [0, 2] and the listener moves in [-2, 2] and brakes
in [0, 1] (``role_action_bounds``, in a row of ((-2, 2), (0, 1))); with ``mixed_actions`` the
speaker signals with its 3 levels and the listener moves and brakes continuously (both fields, in
a row of ((-2, 2), (0, 1)), the word a whole float32 value).
"""

from dataclasses import dataclass

import numpy as np

from warpsim.environment import EnvSpec, Environment, StateArray

LEVELS = ((3,), (5, 2))
BOUNDS = (((0.0, 2.0),), ((-2.0, 2.0), (0.0, 1.0)))


@dataclass(frozen=True)
class SignallersParams:
    episode_length: int = 6
    continuous_actions: bool = False
    mixed_actions: bool = False


class Signallers(Environment):
    name = "signallers"
    Params = SignallersParams

    def describe(self) -> EnvSpec:
        common = dict(num_agents=2, observation_size=2, role_names=("speaker", "listener"), agent_roles=(0, 1),
                      state=(StateArray("t", np.int32, ("E",)), StateArray("goal", np.int32, ("E",)),
                             StateArray("pos", np.float32, ("E",))))
        if self.params.mixed_actions:
            return EnvSpec(action_levels=(), action_bounds=BOUNDS[1], role_action_levels=(LEVELS[0], ()),
                           role_action_bounds=((), BOUNDS[1]), **common)  # type: ignore[arg-type]
        if self.params.continuous_actions:
            return EnvSpec(action_levels=(), action_bounds=BOUNDS[1], role_action_bounds=BOUNDS,
                           **common)  # type: ignore[arg-type]
        return EnvSpec(action_levels=(5, 2), role_action_levels=LEVELS, **common)  # type: ignore[arg-type]

    def reset_numpy(self, envs: np.ndarray) -> None:
        v = self.views
        v.t[envs] = 0
        v.goal[envs] = (v.episode[envs] + envs) % 3  # varies by episode and environment
        v.pos[envs] = 1.0
        v.observations[envs] = 0
        v.observations[envs, 0, 0] = v.goal[envs]
        v.observations[envs, 1, 1] = v.pos[envs]

    def step_numpy(self) -> None:
        v = self.views
        signal = v.actions[:, 0, 0].astype(np.float32)
        move, brake = v.actions[:, 1, 0].astype(np.float32), v.actions[:, 1, 1].astype(np.float32)
        if not (self.params.continuous_actions or self.params.mixed_actions):
            move = move - 2
        v.t[:] += 1
        v.pos[:] = np.clip(v.pos + move * (1 - 0.5 * brake), -3, 3)
        v.rewards[:] = -np.abs(v.pos - v.goal)[:, None]
        v.done[:] = v.t >= self.params.episode_length
        v.observations[:, 1, 0] = signal
        v.observations[:, 1, 1] = v.pos
