"""The named benchmark configs of docs/benchmarks.md, as data.

The benchmark runner (:mod:`warpsim.bench`) times them and the training presets
(:mod:`warpsim.train.presets`) train on them; both read them from here, so training
never imports the benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from warpsim.environment import Environment
from warpsim.validation import require_int


@dataclass(frozen=True)
class BenchConfig:
    """One benchmark configuration: an environment, its batch size and parameters."""

    env: str | type[Environment]
    """A registered id or an Environment subclass."""
    num_envs: int
    params: dict = field(default_factory=dict)
    name: str | None = None
    """The named config (or sweep) this is, recorded with the result; None for a custom one."""

    def __post_init__(self):
        object.__setattr__(self, "num_envs", require_int("num_envs", self.num_envs, 1))


_PARTIAL_K10 = dict(use_full_observation=False, num_other_agents_observed=10)
_TRAINING_RULES = dict(grid_length=20.0, episode_length=500, min_acceleration=-0.1, max_acceleration=0.1,
                       min_turn=-2.356194490192345, max_turn=2.356194490192345,
                       num_acceleration_levels=20, num_turn_levels=20, tag_reward_for_tagger=10.0,
                       tag_penalty_for_runner=-10.0, tagging_distance=0.02)
NAMED_CONFIGS = {
    "headline": BenchConfig("tag_continuous", 2000, dict(num_taggers=50, num_runners=950, **_PARTIAL_K10),
                            "headline"),
    "headline-bf16": BenchConfig("tag_continuous", 2000, dict(num_taggers=50, num_runners=950, **_PARTIAL_K10,
                                                              observation_dtype="bfloat16"), "headline-bf16"),
    "train-ref": BenchConfig("tag_continuous", 2000,
                             dict(num_taggers=10, num_runners=100, **_PARTIAL_K10, **_TRAINING_RULES), "train-ref"),
    "grid": BenchConfig("tag_gridworld", 2000, dict(num_taggers=4, grid_length=100, episode_length=100,
                                                    tag_penalty_for_runner=5.0, use_full_observation=True), "grid"),
}
"""The fixed-size named configs of docs/benchmarks.md (train-ref and grid use the reference training rules;
headline-bf16 is headline with bfloat16 observations)."""
