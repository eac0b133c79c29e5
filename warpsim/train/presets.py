"""Named training configs: small ones that learn in about a minute on a CPU, the
reference configs of docs/benchmarks.md, and the reference learning tasks (tag-chase,
grid-chase: taggers against uniformly random runners, measured by how soon games end)."""

from __future__ import annotations

from warpsim.configs import NAMED_CONFIGS

TAG_SMALL_ENV = dict(num_taggers=1, num_runners=6, grid_length=10.0, episode_length=60, tagging_distance=0.08,
                     max_speed=0.5, skill_level_runner=0.1, min_acceleration=-0.5, max_acceleration=0.5,
                     num_acceleration_levels=3, min_turn=-0.8, max_turn=0.8, num_turn_levels=9)
TAG_CHASE_SMALL_ENV = dict(TAG_SMALL_ENV, num_taggers=2, num_runners=2, episode_length=100)
GRID_SMALL_ENV = dict(num_taggers=2, grid_length=12, episode_length=40, use_full_observation=False)


def _reference(name: str, **settings) -> dict:
    named = NAMED_CONFIGS[name]
    return dict(env=named.env, env_params=dict(named.params), num_envs=named.num_envs, **settings)


PRESETS = {
    "tag-small": dict(env="tag_continuous", env_params=TAG_SMALL_ENV, num_envs=64, iterations=600,
                      stack_observations=2, opponents={"runner": "random"}),
    "tag-chase-small": dict(env="tag_continuous", env_params=TAG_CHASE_SMALL_ENV, num_envs=64, iterations=600,
                            stack_observations=2, opponents={"runner": "random"}),
    "grid-small": dict(env="tag_gridworld", env_params=GRID_SMALL_ENV, num_envs=32, iterations=100,
                       opponents={"runner": "random"}),
    "train-ref": _reference("train-ref", rollout_steps=32, iterations=500, learning_rate=3e-4,
                            hidden_size=128, minibatches=8, log_every=10),
    "grid": _reference("grid", rollout_steps=32, iterations=300, learning_rate=3e-4, log_every=10),
    "tag-chase": _reference("train-ref", rollout_steps=32, iterations=1000, learning_rate=3e-4, hidden_size=128,
                            minibatches=8, log_every=10, opponents={"runner": "random"}),
    "grid-chase": _reference("grid", rollout_steps=32, iterations=500, learning_rate=3e-4, log_every=10,
                             opponents={"runner": "random"}),
}
"""Settings by preset name; fields not named keep TrainConfig's defaults."""
