"""Parameters of simple_spread, with MPE2 1.1.1's names and defaults, and the constants of its world."""

from dataclasses import dataclass

import numpy as np

from warpsim.errors import InvalidValueError
from warpsim.validation import check_fields, not_allowed, require_bool, require_int, require_real

DRAWS_PER_AGENT = 4
"""Random numbers agent i draws at a reset: its x and y, then landmark i's x and y."""
MAX_AGENTS = 1 << 12
"""The most agents an environment holds (the lanes of an episode's random numbers stay below 2**32)."""

CONTACT_DISTANCE = np.float32(0.3)
"""Two agents (of size 0.15 each) touch below this distance of their centres."""
COMMUNICATION_SIZE = 2
"""MPE's dim_c: every agent observes the other agents' utterances, zeros in simple_spread (agents are silent)."""


def require_neighbours(what: str, value: object) -> int | None:
    """A number of nearest neighbours observed: an int in [1, MAX_AGENTS], or None (all of them)."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_AGENTS:
        raise not_allowed(what, value, f"give an integer in [1, {MAX_AGENTS}], or None to observe them all")
    return int(value)


@dataclass(frozen=True)
class SimpleSpreadParams:
    """N agents cover N landmarks: rewarded together by how near each landmark's nearest agent is,
    each penalised for the agents it touches (MPE2's simple_spread_v3)."""

    N: int = 3
    """Agents, and landmarks; 1 to 4096."""
    local_ratio: float = 0.5
    """Weight of an agent's own collision penalty; the shared coverage reward weighs 1 - local_ratio. In [0, 1]."""
    max_cycles: int = 25
    """Steps of an episode (it is then cut: truncated, not terminated); >= 1."""
    continuous_actions: bool = False
    """MPE's Box(0, 1, (5,)) actions, a force (a[2] - a[1], a[4] - a[3]) x 5, instead of Discrete(5)."""
    num_agent_neighbors: int | None = None
    """Partial observation: each agent sees only this many other agents, nearest first (zeros fill the
    slots beyond the N - 1 there are); None: every other agent, in agent order. 1 to 4096."""
    num_landmark_neighbors: int | None = None
    """Likewise of the landmarks; None: every landmark, in landmark order."""

    def __post_init__(self):
        check_fields(self, require_int, ("N",), 1, MAX_AGENTS)
        check_fields(self, require_neighbours, ("num_agent_neighbors", "num_landmark_neighbors"))
        check_fields(self, require_int, ("max_cycles",), 1, 2**31 - 1)
        check_fields(self, require_real, ("local_ratio",), 0, 1)
        check_fields(self, require_bool, ("continuous_actions",))
        lanes = (self.max_cycles + 1) * (self.N + 1) * DRAWS_PER_AGENT
        if lanes >= 2**32:
            raise InvalidValueError(f"max_cycles={self.max_cycles} with N={self.N} numbers more random draws in an "
                                    f"episode than its 2**32 lanes; give (max_cycles + 1) x (N + 1) x "
                                    f"{DRAWS_PER_AGENT} < 2**32")

    @property
    def landmark_slots(self) -> int:
        """The landmarks an observation holds: num_landmark_neighbors, or N."""
        return self.N if self.num_landmark_neighbors is None else self.num_landmark_neighbors

    @property
    def agent_slots(self) -> int:
        """The other agents an observation holds (and their utterances): num_agent_neighbors, or N - 1."""
        return self.N - 1 if self.num_agent_neighbors is None else self.num_agent_neighbors
