"""Parameters of simple_tag, with MPE2 1.1.1's names and defaults, and the constants of its world."""

from dataclasses import dataclass

import numpy as np

from warpsim.envs.simple_spread.params import MAX_AGENTS, require_neighbours
from warpsim.errors import InvalidValueError
from warpsim.kernels.mpe import BODY_DRAWS
from warpsim.validation import check_fields, require_bool, require_int

DRAWS_PER_AGENT = BODY_DRAWS
"""Random numbers a body draws at a reset, its x and y: agent i as agent i, obstacle l as agent N + l."""
ADVERSARY_SIZE, GOOD_SIZE, OBSTACLE_SIZE = np.float32(0.075), np.float32(0.05), np.float32(0.2)
"""Radii: two bodies touch below the sum of theirs."""
ADVERSARY_ACCELERATION, GOOD_ACCELERATION = np.float32(3.0), np.float32(4.0)
"""The force of a unit action."""
ADVERSARY_MAX_SPEED, GOOD_MAX_SPEED = np.float32(1.0), np.float32(1.3)
CATCH_REWARD = np.float32(10)
"""An adversary's reward for every touch of a good agent by any adversary; a good agent's penalty for every
adversary touching it."""
OBSTACLE_SPREAD = np.float32(0.9)
"""Obstacles start uniform in [-0.9, 0.9]^2."""


@dataclass(frozen=True)
class SimpleTagParams:
    """Adversaries chase good agents among obstacles (MPE2's simple_tag_v3): the adversaries are rewarded
    together for every touch, a good agent penalised for each and for leaving the arena."""

    num_good: int = 1
    """Good agents (the role ``agent``); >= 1."""
    num_adversaries: int = 3
    """Adversaries (the role ``adversary``, agents 0 .. num_adversaries - 1); >= 1."""
    num_obstacles: int = 2
    """Obstacles, of radius 0.2, that no body passes; >= 0."""
    max_cycles: int = 25
    """Steps of an episode (it is then cut: truncated, not terminated); >= 1."""
    continuous_actions: bool = False
    """MPE's Box(0, 1, (5,)) actions, a force (a[2] - a[1], a[4] - a[3]) x the agent's acceleration."""
    num_agent_neighbors: int | None = None
    """Partial observation: each agent sees only this many other agents, nearest first (zeros past those there
    are; an adversary's velocity as zeros); None: every other agent, in agent order."""
    num_landmark_neighbors: int | None = None
    """Likewise of the obstacles; None: every obstacle, in order."""

    def __post_init__(self):
        check_fields(self, require_int, ("num_good", "num_adversaries"), 1, MAX_AGENTS)
        check_fields(self, require_int, ("num_obstacles",), 0, MAX_AGENTS)
        check_fields(self, require_int, ("max_cycles",), 1, 2**31 - 1)
        check_fields(self, require_bool, ("continuous_actions",))
        check_fields(self, require_neighbours, ("num_agent_neighbors", "num_landmark_neighbors"))
        if self.num_agents > MAX_AGENTS:
            raise InvalidValueError(f"num_good={self.num_good} and num_adversaries={self.num_adversaries} make "
                                    f"{self.num_agents} agents; give at most {MAX_AGENTS} in all")
        lanes = (self.max_cycles + 1) * (self.num_agents + self.num_obstacles + 1) * DRAWS_PER_AGENT
        if lanes >= 2**32:
            raise InvalidValueError(f"max_cycles={self.max_cycles} with {self.num_agents} agents numbers more random "
                                    f"draws in an episode than its 2**32 lanes")

    @property
    def num_agents(self) -> int:
        return self.num_adversaries + self.num_good

    @property
    def obstacle_slots(self) -> int:
        """The obstacles an observation holds: num_landmark_neighbors, or every one."""
        return self.num_obstacles if self.num_landmark_neighbors is None else self.num_landmark_neighbors

    def observation_sizes(self) -> tuple[int, int]:
        """(an adversary's, a good agent's): own velocity and position, the obstacles' offsets, the other agents'
        offsets and the good ones' velocities (in full observation an adversary sees one good agent more)."""
        if self.num_agent_neighbors is not None:
            size = 4 + 2 * self.obstacle_slots + 4 * self.num_agent_neighbors
            return size, size
        others = 4 + 2 * self.obstacle_slots + 2 * (self.num_agents - 1)
        return others + 2 * self.num_good, others + 2 * (self.num_good - 1)
