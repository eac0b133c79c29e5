"""Ticks: a NumPy-only environment whose episodes end, and count events, at known steps.

Even environments count an event (and reward their agent 1) on steps 3 and 5, and their
rules end the game on step 6; odd ones see no event and run to the time limit, 8.
"""

from dataclasses import dataclass

import numpy as np
import torch

from warpsim.environment import EnvSpec, Environment, StateArray

EVENT_STEPS = (3, 5)
GAME_OVER_STEP = 6
TIME_LIMIT = 8


@dataclass(frozen=True)
class TicksParams:
    num_agents: int = 1


class Ticks(Environment):
    name = "ticks"
    Params = TicksParams

    def describe(self) -> EnvSpec:
        return EnvSpec(num_agents=self.params.num_agents, observation_size=1, action_levels=(2,),
                       state=(StateArray("t", np.int32, ("E",)), StateArray("events", np.int32, ("E",))),
                       role_names=("ticker",), agent_roles=(0,) * self.params.num_agents, counters=("events",))

    def _plays_the_rules(self) -> np.ndarray:
        return np.arange(self.num_envs) % 2 == 0

    def game_over(self) -> torch.Tensor:
        over = self._plays_the_rules() & (self.views.t == GAME_OVER_STEP)
        return torch.from_numpy(over)

    def reset_numpy(self, envs: np.ndarray) -> None:
        self.views.t[envs] = 0
        self.views.observations[envs] = 0.0

    def step_numpy(self) -> None:
        v = self.views
        v.t[:] += 1
        event = self._plays_the_rules() & np.isin(v.t, EVENT_STEPS)
        v.events[:] += event
        v.rewards[:] = event[:, None]
        v.observations[:, :, 0] = v.t[:, None]
        v.done[:] = (v.t >= TIME_LIMIT) | (self._plays_the_rules() & (v.t == GAME_OVER_STEP))
