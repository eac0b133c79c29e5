"""Training learns, on the CPU presets as the README runs them (NumPy backend): trained taggers
against the same uniformly random runners do better than uniformly random taggers, on the
same seeds. tag-small: at least twice the tags per episode. tag-chase-small and grid-small,
the CPU-sized versions of the reference learning tasks tag-chase and grid-chase: games over
at least 1.5x sooner. Continuous actions: tag-small-continuous's taggers at least twice the
tags of random play, beacon-continuous's walkers at least 90% of the obvious heuristic's return.
MPE: simple-spread-small's agents, on each of five seeds, cover the landmarks closer than random play
does (a return at most 0.8x random play's, returns being negative) and close at least a third of
the distance between random play's coverage and the scripted team's; simple-tag-small's
adversaries, against good agents at random, earn at least 3x the return of random adversaries;
simple-speaker-listener-small's pair brings the listener nearer the goal than random play (at most
0.5x its return), and the listener heeds the words (a speaker at random costs it at least 1 per
episode). Each test trains for seconds to a minute on two cores, with no progress output: the test log
keeps pytest's own lines (``warpsim train --config PRESET`` shows the progress)."""

import json
from pathlib import Path

import pytest
from helpers import load_script

import warpsim
from warpsim.analysis.play import Evaluation, Player, evaluate
from warpsim.envs.template.heuristic import walk_to_beacon
from warpsim.roles import roles_of
from warpsim.train.config import build_config
from warpsim.train.episodes import EpisodeStats
from warpsim.train.loop import train, train_experiment
from warpsim.train.presets import PRESETS

pytestmark = pytest.mark.slow


def play(config, policies) -> Evaluation:
    env = warpsim.make(config.env, 64, backend="numpy", seed=1234, **config.env_params)
    random_roles = tuple(config.opponents) if policies else ()
    player = Player(env, policies, random_roles=random_roles, stack_observations=config.stack_observations, seed=99)
    return evaluate(player, episodes=400)


def heuristic_return(config) -> float:
    """The mean return of walking straight at the beacon, on the episodes ``play`` plays."""
    env = warpsim.make(config.env, 64, backend="numpy", seed=1234, **config.env_params)
    episodes_per_env = 400 // 64 + 1
    stats = EpisodeStats(env, roles_of(env.spec, env.device), episodes_per_env=episodes_per_env)
    while stats.finished.min() < episodes_per_env:
        env.step(walk_to_beacon(env))
        stats.record()
    return stats.read()["return_walker"]


def test_tag_small_taggers_tag_at_least_twice_as_often_as_random_ones(tmp_path):
    config = build_config(PRESETS["tag-small"], {"backend": "numpy"})
    trainer = train(config, tmp_path, progress=None)
    trained, random = play(config, trainer.run_policies()), play(config, None)
    assert random.counters["tags"] > 0.1, "the config lets random taggers tag now and then"
    assert trained.counters["tags"] >= 2 * random.counters["tags"], f"trained: {trained}\nrandom: {random}"


@pytest.mark.parametrize("preset", ["tag-chase-small", "grid-small"])
def test_taggers_end_games_at_least_one_and_a_half_times_sooner_than_random_ones(preset, tmp_path):
    config = build_config(PRESETS[preset], {"backend": "numpy"})
    trainer = train(config, tmp_path, progress=None)
    trained, random = play(config, trainer.run_policies()), play(config, None)
    assert random.terminated_fraction < 0.9, "random taggers often run out of time"
    assert 1.5 * trained.episode_length <= random.episode_length, f"trained: {trained}\nrandom: {random}"


def test_a_gaussian_policy_walks_to_the_beacon_as_well_as_the_obvious_heuristic(tmp_path):
    """beacon-continuous: the trained walkers' greedy play earns at least 90% of the return of
    walking straight at the beacon at full speed (envs/template/heuristic.py), on the same seeds."""
    config = build_config(PRESETS["beacon-continuous"], {"backend": "numpy"})
    trainer = train(config, tmp_path, progress=None)
    trained = play(config, trainer.run_policies())
    heuristic = heuristic_return(config)
    assert trained.returns["walker"] >= 0.9 * heuristic, f"trained: {trained}\nheuristic: {heuristic}"
    assert play(config, None).returns["walker"] < 0.2 * heuristic, "random play does not"


def test_continuous_taggers_tag_at_least_twice_as_often_as_random_play(tmp_path):
    """tag-small-continuous: tag-small with each tagger's action two numbers, learned by a Gaussian policy."""
    config = build_config(PRESETS["tag-small-continuous"], {"backend": "numpy"})
    trainer = train(config, tmp_path, progress=None)
    trained, random = play(config, trainer.run_policies()), play(config, None)
    assert trained.counters["tags"] >= 2 * random.counters["tags"], f"trained: {trained}\nrandom: {random}"


@pytest.mark.slow(seconds=260)
def test_five_seeds_of_simple_spread_each_beat_random_play_and_close_a_third_of_its_gap_to_the_scripted_team(tmp_path):
    """As docs/mpe.md reports it (benchmarks/mpe_spread_learning.py), every seed's team sampling its actions: a
    return at most 0.8x random play's, and a coverage at an episode's end that closes at least a third of the
    distance between random play's and the scripted team's."""
    config = build_config(PRESETS["simple-spread-small"], {"backend": "numpy"})
    train_experiment(config, tmp_path / "spread", seeds=(0, 1, 2, 3, 4), progress=None)
    script = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "mpe_spread_learning.py")
    assert script.main([str(tmp_path / "spread"), "--episodes", "256", "--json", str(tmp_path / "spread.json")]) == 0
    result = json.loads((tmp_path / "spread.json").read_text())
    seeds, random = result["seeds"], result["random"]
    assert random["return"] < 0 and all(seed["return"] >= 0.8 * random["return"] for seed in seeds.values()), result
    scripted = result["scripted"]["coverage"]
    closed = {name: (random["coverage"] - seed["coverage"]) / (random["coverage"] - scripted)
              for name, seed in seeds.items()}
    assert scripted < random["coverage"] and min(closed.values()) >= 1 / 3, f"{closed}\n{result}"


def test_simple_tag_adversaries_catch_random_prey_far_more_often_than_random_ones(tmp_path):
    config = build_config(PRESETS["simple-tag-small"], {"backend": "numpy"})
    trainer = train(config, tmp_path, progress=None)
    trained, random = play(config, trainer.run_policies()), play(config, None)
    assert random.returns["adversary"] > 0, "random adversaries catch now and then"
    assert trained.returns["adversary"] >= 3 * random.returns["adversary"], f"trained: {trained}\nrandom: {random}"


@pytest.mark.slow(seconds=390)
def test_the_speaker_and_the_listener_learn_to_talk_and_to_reach_the_goal(tmp_path):
    """Roles with actions of their own (3 words, 5 moves) trained together."""
    config = build_config(PRESETS["simple-speaker-listener-small"], {"backend": "numpy"})
    trainer = train(config, tmp_path, progress=None)
    trained, random = play(config, trainer.run_policies()), play(config, None)
    assert trained.returns["listener"] >= 0.5 * random.returns["listener"], f"trained: {trained}\nrandom: {random}"
    env = warpsim.make(config.env, 64, backend="numpy", seed=1234, **config.env_params)
    babbling = evaluate(Player(env, trainer.run_policies(), random_roles=("speaker",), seed=99), episodes=400)
    assert trained.returns["listener"] >= babbling.returns["listener"] + 1.0, f"trained: {trained}\n" \
                                                                              f"random speaker: {babbling}"
