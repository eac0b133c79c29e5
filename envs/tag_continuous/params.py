"""Parameters of tag_continuous and the constants derived from them."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from warpsim.limits import MAX_INT32, MAX_MAGNITUDE, MIN_POSITIVE
from warpsim.validation import check_fields, not_allowed, require_bool, require_choice, require_int, require_real

MAX_ACTION_LEVELS = 2**16
"""Most choices of an action component (its table is built on the host)."""
MAX_OBSERVED = 64
"""Most neighbours a partial observation may hold (the kernels keep them in registers)."""
NEIGHBOUR_SEARCHES = ("auto", "grid", "grid_tiles", "brute_force")
"""Values of TagContinuousParams.neighbour_search."""
OBSERVATION_DTYPES = ("float32", "bfloat16")
"""Values of TagContinuousParams.observation_dtype."""
DRAWS_PER_AGENT = 3
"""Random draws of one agent at reset: x, y, direction."""
OWN_STATE_SIZE = 5
"""Entries of an agent's own state (TagContinuousParams.observe_own_state): cos and sin of its
direction, its speed, its x and its y."""
TWO_PI = np.float32(2 * np.pi)
HALF_PI = np.float32(np.pi / 2)
ZERO = np.float32(0)


@dataclass(frozen=True)
class TagContinuousParams:
    """Rules of tag_continuous (docs/tag_rules.md section 1). Invalid values raise InvalidValueError,
    and so do values that would make NaN or inf in float32 (``warpsim.limits``)."""

    num_taggers: int = 1
    """Agents 0 .. num_taggers-1 chase the runners; >= 1."""
    num_runners: int = 10
    """Agents num_taggers .. N-1 flee; >= 1."""
    grid_length: float = 10.0
    """Side L of the square arena [0, L] x [0, L]; > 0."""
    episode_length: int = 100
    """Steps T of an episode; >= 1."""
    max_speed: float = 1.0
    """Speed cap before the skill factor; > 0."""
    skill_level_tagger: float = 1.0
    """Multiplies the taggers' speed cap; > 0."""
    skill_level_runner: float = 1.0
    """Multiplies the runners' speed cap; > 0."""
    min_acceleration: float = -1.0
    """Lowest acceleration change an action picks."""
    max_acceleration: float = 1.0
    """Highest acceleration change an action picks; >= min_acceleration."""
    min_turn: float = -math.pi / 2
    """Lowest turn (radians) an action picks."""
    max_turn: float = math.pi / 2
    """Highest turn (radians) an action picks; >= min_turn."""
    num_acceleration_levels: int = 10
    """Acceleration choices besides 'no change'; action 0 is in [0, this]; >= 1."""
    num_turn_levels: int = 10
    """Turn choices besides 'no change'; action 1 is in [0, this]; >= 1."""
    continuous_actions: bool = False
    """Each agent's action is two numbers used directly, the acceleration change in
    [min_acceleration, max_acceleration] and the turn in [min_turn, max_turn] (clamped to them),
    instead of indices into the tables (a warpsim extension, docs/tag_rules.md section 1)."""
    edge_hit_penalty: float = -0.0
    """Reward for ending a move clipped at the arena's edge; <= 0."""
    use_full_observation: bool = True
    """Observe every other agent (7(N-1)+1 values) or only the K nearest (7K+1), plus the own
    state's 5 with observe_own_state."""
    num_other_agents_observed: int = 2
    """K, the neighbours a partial observation holds; 1 <= K < N and K <= 64."""
    observe_own_state: bool = False
    """Append the agent's own state after t/T (a warpsim extension, docs/tag_rules.md section 1):
    cos(direction), sin(direction), speed / (max_speed + 1e-10), loc_x / L and loc_y / L, all 0
    for an agent out of the game. Off, the observation is WarpDrive's."""
    tagging_distance: float = 0.01
    """Tagging radius as a fraction of L; in [0, 1]."""
    tag_reward_for_tagger: float = 1.0
    """Reward a tagger gets per runner it tags; >= 0."""
    step_penalty_for_tagger: float = -0.0
    """Reward every tagger gets each step; <= 0."""
    tag_penalty_for_runner: float = -1.0
    """Reward a runner gets when tagged; <= 0."""
    step_reward_for_runner: float = 0.0
    """Reward every runner in the game gets each step; >= 0."""
    end_of_game_reward_for_runner: float = 1.0
    """Reward of each runner still in the game at t == T; >= 0."""
    runner_exits_game_after_tagged: bool = True
    """A tagged runner leaves the game (else it stays and can be tagged again)."""
    neighbour_search: str = "auto"
    """How the kernels find nearest agents: ``"grid"`` (a uniform grid per environment, each
    query searching rings of cells around its own), ``"grid_tiles"`` (the same grid, the
    observations searched a warp's tile of cells at a time), ``"brute_force"`` (every pair) or
    ``"auto"`` (the grid from a size on, see envs/tag_continuous/env.py). The results are
    identical; the NumPy backend ignores it."""
    observation_dtype: str = "float32"
    """The dtype of ``env.observations``: ``"float32"``, or ``"bfloat16"``, which halves the memory
    of the largest array a step writes. Observations are computed in float32 either way and, in
    bfloat16, rounded to nearest (ties to even) as they are stored, as torch's
    ``.to(torch.bfloat16)`` rounds (docs/tag_rules.md section 1)."""

    def __post_init__(self):
        check_fields(self, require_int, ("num_taggers", "num_runners", "episode_length"), 1, MAX_INT32)
        check_fields(self, require_int, ("num_acceleration_levels", "num_turn_levels"), 1, MAX_ACTION_LEVELS)
        check_fields(self, require_real, ("grid_length", "max_speed", "skill_level_tagger", "skill_level_runner"),
                     MIN_POSITIVE, MAX_MAGNITUDE)
        check_fields(self, require_real, ("edge_hit_penalty", "step_penalty_for_tagger", "tag_penalty_for_runner"),
                     -MAX_MAGNITUDE, 0)
        check_fields(self, require_real, ("tag_reward_for_tagger", "step_reward_for_runner",
                                          "end_of_game_reward_for_runner"), 0, MAX_MAGNITUDE)
        check_fields(self, require_real, ("min_acceleration", "max_acceleration", "min_turn", "max_turn"),
                     -MAX_MAGNITUDE, MAX_MAGNITUDE)
        check_fields(self, require_real, ("tagging_distance",), 0, 1)
        check_fields(self, require_bool, ("use_full_observation", "observe_own_state",
                                          "runner_exits_game_after_tagged", "continuous_actions"))
        check_fields(self, require_int, ("num_other_agents_observed",), 1)
        if self.num_agents > MAX_INT32:
            raise not_allowed("num_runners", self.num_runners, f"num_taggers + num_runners must be <= {MAX_INT32}")
        if self.max_acceleration < self.min_acceleration:
            raise not_allowed("max_acceleration", self.max_acceleration,
                              f"it must be >= min_acceleration={self.min_acceleration!r}")
        if self.max_turn < self.min_turn:
            raise not_allowed("max_turn", self.max_turn, f"it must be >= min_turn={self.min_turn!r}")
        if self.continuous_actions and not (self.min_acceleration < self.max_acceleration
                                            and self.min_turn < self.max_turn):
            raise not_allowed("continuous_actions", True, f"continuous actions need ranges with min < max; "
                              f"[{self.min_acceleration!r}, {self.max_acceleration!r}] and "
                              f"[{self.min_turn!r}, {self.max_turn!r}] given")
        require_choice("neighbour_search", self.neighbour_search, NEIGHBOUR_SEARCHES)
        require_choice("observation_dtype", self.observation_dtype, OBSERVATION_DTYPES)
        if not self.num_other_agents_observed < self.num_agents or self.num_other_agents_observed > MAX_OBSERVED:
            raise not_allowed("num_other_agents_observed", self.num_other_agents_observed,
                              f"give an integer K with 1 <= K < N={self.num_agents} (num_taggers + num_runners) "
                              f"and K <= {MAX_OBSERVED}")

    @property
    def num_agents(self) -> int:
        return self.num_taggers + self.num_runners

    @property
    def observation_size(self) -> int:
        observed = self.num_agents - 1 if self.use_full_observation else self.num_other_agents_observed
        return 7 * observed + 1 + (OWN_STATE_SIZE if self.observe_own_state else 0)


@dataclass(frozen=True)
class Constants:
    """Float32 values both backends use, computed once on the host so they agree bit for bit."""

    acceleration_table: np.ndarray
    """float32[num_acceleration_levels + 1]: change of acceleration per action index."""
    turn_table: np.ndarray
    """float32[num_turn_levels + 1]: turn per action index."""
    action_bounds: np.ndarray
    """float32[2, 2]: [[min_acceleration, min_turn], [max_acceleration, max_turn]], what continuous actions
    are clamped to."""
    max_speed_by_type: np.ndarray
    """float32[2]: speed cap of a runner (type 0) and of a tagger (type 1)."""
    step_reward_by_type: np.ndarray
    """float32[2]: per-step reward of a runner and of a tagger."""
    grid_length: np.float32
    tag_radius_squared: np.float32
    edge_hit_penalty: np.float32
    tag_reward_for_tagger: np.float32
    tag_penalty_for_runner: np.float32
    end_of_game_reward_for_runner: np.float32
    position_scale: np.float32
    """L * sqrt(2): divides position differences in observations."""
    speed_scale: np.float32
    """max_speed + 1e-10: divides speed and acceleration differences."""

    @classmethod
    def of(cls, p: TagContinuousParams) -> "Constants":
        f32 = np.float32
        radius = f32(p.tagging_distance) * f32(p.grid_length)
        return cls(
            acceleration_table=_action_table(p.min_acceleration, p.max_acceleration, p.num_acceleration_levels),
            turn_table=_action_table(p.min_turn, p.max_turn, p.num_turn_levels),
            action_bounds=np.array([[p.min_acceleration, p.min_turn], [p.max_acceleration, p.max_turn]], np.float32),
            max_speed_by_type=np.array([p.max_speed * p.skill_level_runner,
                                        p.max_speed * p.skill_level_tagger], np.float32),
            step_reward_by_type=np.array([p.step_reward_for_runner, p.step_penalty_for_tagger], np.float32),
            grid_length=f32(p.grid_length),
            tag_radius_squared=radius * radius,
            edge_hit_penalty=f32(p.edge_hit_penalty),
            tag_reward_for_tagger=f32(p.tag_reward_for_tagger),
            tag_penalty_for_runner=f32(p.tag_penalty_for_runner),
            end_of_game_reward_for_runner=f32(p.end_of_game_reward_for_runner),
            position_scale=f32(p.grid_length * math.sqrt(2.0)),
            speed_scale=f32(p.max_speed + 1e-10),
        )


def _action_table(low: float, high: float, levels: int) -> np.ndarray:
    """[0, linspace(low, high, levels)]: index 0 is 'no change'."""
    return np.concatenate([[0.0], np.linspace(low, high, levels)]).astype(np.float32)
