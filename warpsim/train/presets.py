"""Named training configs: small ones that learn in about a minute on a CPU, and the
reference learning tasks at the scale of docs/benchmarks.md (tag-chase, grid-chase:
taggers against uniformly random runners, measured by how soon games end; tag-evade:
runners against frozen tag-chase taggers; train-ref and grid: both roles learn).

Every preset keeps TrainConfig's learning defaults (separate actor and critic, value
normalisation, the KL-adapted learning rate, minibatches by size): one set of settings
learns from 64 environments on a CPU to 2000 on a GPU. Presets set the scale, the networks'
width and the environments' rules.
"""

from __future__ import annotations

from warpsim.configs import NAMED_CONFIGS

TAG_SMALL_ENV = dict(num_taggers=1, num_runners=6, grid_length=10.0, episode_length=60, tagging_distance=0.08,
                     max_speed=0.5, skill_level_runner=0.1, min_acceleration=-0.5, max_acceleration=0.5,
                     num_acceleration_levels=3, min_turn=-0.8, max_turn=0.8, num_turn_levels=9)
TAG_CHASE_SMALL_ENV = dict(TAG_SMALL_ENV, num_taggers=2, num_runners=2, episode_length=100, observe_own_state=True)
GRID_SMALL_ENV = dict(num_taggers=2, grid_length=12, episode_length=40, use_full_observation=False)
BEACON_CONTINUOUS_ENV = dict(num_agents=4, episode_length=30, continuous_actions=True)
"""The template's beacon with a velocity for an action: a Gaussian policy's first task (seconds on a CPU)."""

CHASE = dict(hidden_size=128, log_every=10)
"""tag-chase's networks, at train-ref scale and on the CPU alike."""
OWN_STATE = dict(observe_own_state=True)
"""tag_continuous agents see their own heading, speed and position (docs/tag_rules.md section 1)."""
GRID_CHASE_RULES = dict(use_full_observation=False, closing_reward_for_tagger=0.1)
"""tag_gridworld taggers see their own cell and the runner's, and are paid for closing in on it."""
SELF_PLAY_MINIBATCH = 262144
"""With 100 learning runners per environment a rollout holds 6.4M runner samples: minibatches
of this size keep the update at 25 per epoch."""
MPE_1K_NEAREST = dict(num_agent_neighbors=10)
"""MPE at a thousand agents: each observes the 10 nearest others (docs/mpe.md)."""
MPE_1K = dict(num_envs=2000, rollout_steps=25, iterations=100, epochs=1, minibatch_size=SELF_PLAY_MINIBATCH,
              log_every=5)
"""2000 environments of 1000 agents: a rollout of one 25-step episode holds 50M samples, used once
each in minibatches of SELF_PLAY_MINIBATCH (about 190 optimizer steps per iteration)."""


def _reference(name: str, env_params: dict | None = None, **settings) -> dict:
    named = NAMED_CONFIGS[name]
    return dict(env=named.env, env_params={**named.params, **(env_params or {})}, num_envs=named.num_envs, **settings)


PRESETS = {
    # One pass over each rollout: five seeds learned as well as with four (docs/training.md, "How often each
    # sample is used") in 54% of the time.
    "tag-small": dict(env="tag_continuous", env_params=TAG_SMALL_ENV, num_envs=64, iterations=300,
                      stack_observations=2, opponents={"runner": "random"}, epochs=1),
    "tag-chase-small": dict(env="tag_continuous", env_params=TAG_CHASE_SMALL_ENV, num_envs=64, iterations=150,
                            stagger_steps=100, opponents={"runner": "random"}, **CHASE),
    # One pass: five seeds ended games as soon as with four, in 54% of the time (docs/training.md).
    "grid-small": dict(env="tag_gridworld", env_params=GRID_SMALL_ENV, num_envs=32, iterations=100,
                       opponents={"runner": "random"}, epochs=1),
    # One pass, as tag-small: five seeds learned as well as with four in 65% of the time (docs/training.md).
    "tag-small-continuous": dict(env="tag_continuous", env_params=dict(TAG_SMALL_ENV, continuous_actions=True),
                                 num_envs=64, iterations=300, stack_observations=2, opponents={"runner": "random"},
                                 epochs=1),
    # One pass: five seeds came as near the heuristic's return as with four (greedy play 0.999 to 1.000 of it
    # either way), in 64% of the time (docs/training.md).
    "beacon-continuous": dict(env="beacon", env_params=BEACON_CONTINUOUS_ENV, num_envs=32, rollout_steps=30,
                              iterations=60, epochs=1),
    "simple-spread-small": dict(env="simple_spread", env_params=dict(N=3), num_envs=64, rollout_steps=25,
                                iterations=300),
    # One pass: five seeds' adversaries caught more than with four (IQM return 65 against 41), in 60% of the time.
    "simple-tag-small": dict(env="simple_tag", env_params={}, num_envs=64, rollout_steps=25, iterations=150,
                             opponents={"agent": "random"}, epochs=1),
    "simple-speaker-listener-small": dict(env="simple_speaker_listener", env_params={}, num_envs=64,
                                          rollout_steps=25, iterations=1500),
    "simple-spread-1k": dict(env="simple_spread", env_params=dict(MPE_1K_NEAREST, N=1000, num_landmark_neighbors=10),
                             **MPE_1K),
    "simple-tag-1k": dict(env="simple_tag", env_params=dict(MPE_1K_NEAREST, num_adversaries=750, num_good=250),
                          opponents={"agent": "random"}, **MPE_1K),
    "tag-chase": _reference("train-ref", OWN_STATE, iterations=1200, stagger_steps=500,
                            opponents={"runner": "random"}, **CHASE),
    "tag-chase-continuous": _reference("train-ref", dict(OWN_STATE, continuous_actions=True), iterations=1200,
                                       stagger_steps=500, opponents={"runner": "random"}, **CHASE),
    "grid-chase": _reference("grid", GRID_CHASE_RULES, iterations=500, stagger_steps=100,
                             opponents={"runner": "random"}, log_every=10),
    "tag-evade": _reference("train-ref", OWN_STATE, iterations=600, stagger_steps=500,
                            minibatch_size=SELF_PLAY_MINIBATCH, opponents={"tagger": "checkpoint:runs/tag-chase"},
                            **CHASE),
    "train-ref": _reference("train-ref", OWN_STATE, iterations=600, stagger_steps=500,
                            minibatch_size=SELF_PLAY_MINIBATCH, **CHASE),
    "grid": _reference("grid", GRID_CHASE_RULES, iterations=300, stagger_steps=100, log_every=10),
}
"""Settings by preset name; fields not named keep TrainConfig's defaults."""


GPU_NUM_ENVS = 2000
"""A preset of this many environments or more is sized for a GPU (docs/benchmarks.md's scale)."""


def sized_for_gpu(name: str) -> bool:
    """Whether preset ``name`` is sized for a GPU rather than a CPU."""
    return PRESETS[name]["num_envs"] >= GPU_NUM_ENVS
