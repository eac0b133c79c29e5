"""Parameters of tag_gridworld and the constants derived from them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from warpsim.limits import MAX_INT32, MAX_MAGNITUDE
from warpsim.validation import check_fields, require_bool, require_int, require_real

NUM_ACTIONS = 5
"""Action indices 0 stay, 1 (+1, 0), 2 (-1, 0), 3 (0, +1), 4 (0, -1)."""
MOVE_X = np.array([0, 1, -1, 0, 0], np.int32)
"""int32[5]: x step of each action index."""
MOVE_Y = np.array([0, 0, 0, 1, -1], np.int32)
"""int32[5]: y step of each action index."""
TAGGER, RUNNER = 0, 1
"""Agent types (and role indices): the opposite of tag_continuous."""
DRAWS_PER_AGENT = 2
"""Random draws of one agent at reset: x, y."""
MAX_GRID_LENGTH = 2**24 - 1
"""Largest L: cells and L + 1 stay exact in float32, and squared distances fit int64."""
MAX_EPISODE_LENGTH = 2**31 - 1
"""Largest T: the clock t is int32."""
ZERO = np.float32(0)


@dataclass(frozen=True)
class TagGridworldParams:
    """Rules of tag_gridworld (docs/tag_rules.md section 2). Invalid values raise InvalidValueError,
    and so do values that would make NaN or inf in float32 (``warpsim.limits``).

    The penalties and costs are positive magnitudes; the rules apply the signs.
    """

    num_taggers: int = 10
    """Agents 0 .. num_taggers-1 chase the single runner, agent N-1; >= 1."""
    grid_length: int = 10
    """L: cells 0 .. L on each axis; an integer in [1, 2**24 - 1]."""
    episode_length: int = 100
    """Steps T of an episode; an integer in [1, 2**31 - 1]."""
    wall_hit_penalty: float = 0.1
    """Subtracted from an agent's reward when its move is clipped at the wall; >= 0."""
    tag_reward_for_tagger: float = 10.0
    """Added to every tagger's reward on the step the runner is tagged; >= 0."""
    tag_penalty_for_runner: float = 2.0
    """Subtracted from the runner's reward when it is tagged; >= 0."""
    step_cost_for_tagger: float = 0.01
    """Subtracted from every tagger and added to the runner on a step without a tag; >= 0."""
    closing_reward_for_tagger: float = 0.0
    """c of the shaping term (a warpsim extension): each step every tagger receives
    ``c * (d_before - d_after)``, d its Manhattan distance in cells to the runner before and
    after the moves, and d_after = 0 on the step that tags the runner (the game is over); >= 0,
    0 adds nothing."""
    use_full_observation: bool = True
    """Observe every agent (4N + 1 values) or only oneself and one target (6 values)."""
    fixed_start: bool = False
    """WarpDrive's start: taggers at (L//2, L//2), the runner at (0, 0); else random cells."""

    def __post_init__(self):
        check_fields(self, require_int, ("num_taggers",), 1, MAX_INT32 - 1)
        check_fields(self, require_int, ("episode_length",), 1, MAX_EPISODE_LENGTH)
        check_fields(self, require_int, ("grid_length",), 1, MAX_GRID_LENGTH)
        check_fields(self, require_real, ("wall_hit_penalty", "tag_reward_for_tagger", "tag_penalty_for_runner",
                                          "step_cost_for_tagger", "closing_reward_for_tagger"), 0, MAX_MAGNITUDE)
        check_fields(self, require_bool, ("use_full_observation", "fixed_start"))

    @property
    def num_agents(self) -> int:
        return self.num_taggers + 1

    @property
    def has_closing_reward(self) -> bool:
        """The closing reward's step runs; at c = 0 it is skipped, so every reward stays bit for bit."""
        return self.closing_reward_for_tagger > 0

    @property
    def observation_size(self) -> int:
        return 4 * self.num_agents + 1 if self.use_full_observation else 6


@dataclass(frozen=True)
class Constants:
    """Values both backends use, computed once on the host so they agree bit for bit."""

    outcome_reward: np.ndarray
    """float32[2, 2]: reward by [runner tagged (0/1), agent type]: the signs applied."""
    wall_hit_reward: np.float32
    """-wall_hit_penalty: the reward term of a clipped move."""
    closing_reward: np.float32
    """closing_reward_for_tagger: the reward of a cell closed on the runner."""
    grid_length: np.int32
    grid_length_f: np.float32
    """L as float32: divides positions in observations."""
    start_cells: np.float32
    """L + 1 as float32: a uniform draw u picks cell int(u * (L + 1)), clamped to L."""

    @classmethod
    def of(cls, p: TagGridworldParams) -> "Constants":
        outcome = np.zeros((2, 2), np.float32)
        outcome[0, TAGGER] = -p.step_cost_for_tagger
        outcome[0, RUNNER] = p.step_cost_for_tagger
        outcome[1, TAGGER] = p.tag_reward_for_tagger
        outcome[1, RUNNER] = -p.tag_penalty_for_runner
        return cls(
            outcome_reward=outcome,
            wall_hit_reward=np.float32(-p.wall_hit_penalty),
            closing_reward=np.float32(p.closing_reward_for_tagger),
            grid_length=np.int32(p.grid_length),
            grid_length_f=np.float32(p.grid_length),
            start_cells=np.float32(p.grid_length + 1),
        )
