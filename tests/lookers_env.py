"""Lookers: a NumPy-only environment whose two roles observe observations of different sizes.

Seekers (agents 0 .. seekers-1) observe 3 entries: their position, the step and a constant 1;
hiders observe 1, their position (``EnvSpec.role_observation_sizes``). An action of 3 moves an
agent by action - 1; a seeker earns 1 at position 0 or above. With ``leak`` the step writes a
hider's third entry, past its role's size, which checked mode refuses.
"""

from dataclasses import dataclass

import numpy as np

from warpsim.environment import EnvSpec, Environment, StateArray


@dataclass(frozen=True)
class LookersParams:
    seekers: int = 2
    hiders: int = 1
    episode_length: int = 5
    leak: bool = False


class Lookers(Environment):
    name = "lookers"
    Params = LookersParams

    def describe(self) -> EnvSpec:
        p = self.params
        return EnvSpec(num_agents=p.seekers + p.hiders, observation_size=3, action_levels=(3,),
                       state=(StateArray("t", np.int32, ("E",)), StateArray("pos", np.float32, ("E", "N"))),
                       role_names=("seeker", "hider"), agent_roles=(0,) * p.seekers + (1,) * p.hiders,
                       role_observation_sizes=(3, 1))

    def reset_numpy(self, envs: np.ndarray) -> None:
        v = self.views
        v.t[envs] = 0
        v.pos[envs] = -np.arange(self.num_agents, dtype=np.float32)
        self._observe(envs)

    def step_numpy(self) -> None:
        v, p = self.views, self.params
        v.t[:] += 1
        v.pos[:] += v.actions[:, :, 0] - 1
        v.rewards[:] = 0
        v.rewards[:, :p.seekers] = v.pos[:, :p.seekers] >= 0
        v.done[:] = v.t >= p.episode_length
        self._observe(np.arange(self.num_envs))

    def _observe(self, envs: np.ndarray) -> None:
        v, p = self.views, self.params
        v.observations[envs] = 0
        v.observations[envs, :, 0] = v.pos[envs]
        v.observations[envs, :p.seekers, 1] = v.t[envs, None]
        v.observations[envs, :p.seekers, 2] = 1
        if p.leak:
            v.observations[envs, p.seekers:, 2] = 7
