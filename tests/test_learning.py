"""Training learns: trained taggers tag at least twice as often per episode as uniformly
random ones, against the same uniformly random runners, on the same seeds (CPU, NumPy)."""

import pytest

import warpsim
from warpsim.train import TrainConfig, Trainer
from warpsim.train.evaluate import Player, evaluate
from warpsim.train.loop import train

# Slow runners and fast taggers in a small arena. A tagger's observation holds no heading of
# its own; two stacked observations show it through the motion of the others.
TAG = dict(num_taggers=1, num_runners=6, grid_length=10.0, episode_length=60, tagging_distance=0.08,
           max_speed=0.5, skill_level_runner=0.1, min_acceleration=-0.5, max_acceleration=0.5,
           num_acceleration_levels=3, min_turn=-0.8, max_turn=0.8, num_turn_levels=9)
GRID = dict(num_taggers=2, grid_length=12, episode_length=40, use_full_observation=False)


def tags_per_episode(config: TrainConfig, trainer: Trainer | None) -> float:
    env = warpsim.make(config.env, 64, backend="numpy", seed=1234, **config.env_params)
    policies = None if trainer is None else trainer.policies
    player = Player(env, policies, random_roles=("runner",) if trainer else (),
                    stack_observations=config.stack_observations, seed=99)
    return evaluate(player, episodes=400).counters["tags"]


@pytest.mark.parametrize("config", [
    TrainConfig(env="tag_continuous", env_params=TAG, num_envs=64, iterations=150, stack_observations=2,
                backend="numpy"),
    TrainConfig(env="tag_gridworld", env_params=GRID, num_envs=32, iterations=100, backend="numpy"),
], ids=["tag_continuous", "tag_gridworld"])
def test_trained_taggers_tag_at_least_twice_as_often_as_random_ones(config, tmp_path):
    trainer = train(config, tmp_path, progress=None)
    trained, random = tags_per_episode(config, trainer), tags_per_episode(config, None)
    assert random > 0.1, "the config lets random taggers tag now and then"
    assert trained >= 2 * random, f"trained taggers: {trained:.3f} tags per episode; random: {random:.3f}"
