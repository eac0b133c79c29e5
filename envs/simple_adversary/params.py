"""Parameters of simple_adversary, with MPE2 1.1.1's names and defaults."""

from dataclasses import dataclass

from warpsim.envs.simple_spread.params import MAX_AGENTS, require_neighbours
from warpsim.errors import InvalidValueError
from warpsim.kernels.mpe import BODY_DRAWS
from warpsim.validation import check_fields, require_bool, require_int

DRAWS_PER_AGENT = BODY_DRAWS
"""Random numbers a body draws at a reset: agent i its x and y as agent i, landmark l as agent N + 1 + l,
and the goal's index as agent 2N + 1."""


@dataclass(frozen=True)
class SimpleAdversaryParams:
    """N good agents and one adversary among N landmarks, one of them the goal (MPE2's simple_adversary_v3):
    the good agents, who know the goal, are rewarded for one of them being near it and the adversary far from
    it; the adversary, who does not, for being near it."""

    N: int = 2
    """Good agents (the role ``agent``), and landmarks; 1 to 2047. The adversary is agent 0."""
    max_cycles: int = 25
    """Steps of an episode (it is then cut: truncated, not terminated); >= 1."""
    continuous_actions: bool = False
    """MPE's Box(0, 1, (5,)) actions, a force (a[2] - a[1], a[4] - a[3]) x 5, instead of Discrete(5)."""
    num_agent_neighbors: int | None = None
    """Partial observation: each agent sees only this many other agents, nearest first (zeros past those there
    are); None: every other agent, in agent order."""
    num_landmark_neighbors: int | None = None
    """Likewise of the landmarks; None: every landmark, in order. The goal's offset is always a good agent's."""

    def __post_init__(self):
        check_fields(self, require_int, ("N",), 1, MAX_AGENTS // 2 - 1)
        check_fields(self, require_int, ("max_cycles",), 1, 2**31 - 1)
        check_fields(self, require_bool, ("continuous_actions",))
        check_fields(self, require_neighbours, ("num_agent_neighbors", "num_landmark_neighbors"))
        lanes = (self.max_cycles + 1) * (2 * self.N + 3) * DRAWS_PER_AGENT
        if lanes >= 2**32:
            raise InvalidValueError(f"max_cycles={self.max_cycles} with N={self.N} numbers more random draws in an "
                                    f"episode than its 2**32 lanes")

    @property
    def landmark_slots(self) -> int:
        return self.N if self.num_landmark_neighbors is None else self.num_landmark_neighbors

    @property
    def agent_slots(self) -> int:
        return self.N if self.num_agent_neighbors is None else self.num_agent_neighbors

    def observation_sizes(self) -> tuple[int, int]:
        """(the adversary's, a good agent's): the landmarks' and the other agents' offsets, and for a good agent
        the goal's offset before them."""
        size = 2 * self.landmark_slots + 2 * self.agent_slots
        return size, size + 2
