"""The scripted simple_spread team (envs/simple_spread/heuristic.py), the bar a trained team is
held to: the least-distance assignment, moves towards the landmark, and landmarks covered."""

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import load_script

import warpsim
from warpsim.envs.simple_spread.heuristic import ScriptedTeam, assignment, coverage, moves
from warpsim.errors import InvalidValueError
from warpsim.train.config import build_config
from warpsim.train.experiment import ExperimentDirectory, plan_runs


def test_the_assignment_has_the_least_total_distance_where_the_greedy_one_does_not():
    """Agent 0 is nearest landmark 0, but giving it landmark 1 leaves agent 1 far less to walk."""
    agents_x, landmarks_x = np.array([[0.0, 1.0]]), np.array([[0.1, -1.0]])
    zeros = np.zeros((1, 2))
    assert assignment(agents_x, zeros, landmarks_x, zeros).tolist() == [[1, 0]]


@pytest.mark.parametrize("target, move", [((1.0, 0.0), 2), ((-1.0, 0.0), 1), ((0.0, 1.0), 4), ((0.0, -1.0), 3),
                                          ((0.0, 0.0), 0)])
def test_an_agent_at_rest_moves_towards_its_landmark_or_stays_on_it(target, move):
    zero = np.zeros((1, 1), np.float32)
    assert moves(zero, zero, zero, zero, np.full((1, 1), target[0], np.float32),
                 np.full((1, 1), target[1], np.float32)).tolist() == [[move]]


def test_an_agent_rushing_past_its_landmark_brakes():
    """At 1.5 a step to the right of a landmark 0.1 ahead, holding right overshoots: it pushes left."""
    zero = np.zeros((1, 1), np.float32)
    assert moves(zero, zero, np.full((1, 1), 1.5, np.float32), zero, np.full((1, 1), 0.1, np.float32),
                 zero).tolist() == [[1]]


def episode_coverage(team: str, agents: int) -> float:
    env = warpsim.make("simple_spread", 32, backend="numpy", seed=5, N=agents)
    env.reset()
    scripted, generator = ScriptedTeam(env), torch.Generator().manual_seed(0)
    for _ in range(env.params.max_cycles):
        if team == "scripted":
            scripted.act()
        else:
            env.actions.copy_(torch.randint(0, 5, env.actions.shape, generator=generator))
        env.step(auto_reset=False)
    return float(coverage(env).mean())


@pytest.mark.parametrize("agents", [3, 6])
def test_the_scripted_team_covers_the_landmarks_far_closer_than_random_play(agents):
    assert episode_coverage("scripted", agents) <= 0.25 * episode_coverage("random", agents)


@pytest.mark.parametrize("params, message", [({"continuous_actions": True}, "discrete"), ({}, "simple_spread")])
def test_it_plays_simple_spread_with_discrete_actions_alone(params, message):
    env = warpsim.make("simple_spread" if params else "simple_tag", 2, backend="numpy", **params)
    with pytest.raises(InvalidValueError, match=message):
        ScriptedTeam(env)


@pytest.mark.parametrize("arguments, message", [
    (["{missing}"], "holds no experiment; make one with warpsim train"),
    (["{experiment}", "--episodes", "0"], "argument --episodes: 0 is not allowed"),
    (["{tag_experiment}"], "is not an experiment of simple_spread runs"),
    (["{experiment}", "--json", "{experiment}/experiment.json"], "which warpsim never replaces")])
def test_the_learning_script_refuses_what_it_cannot_measure_in_one_line(tmp_path, capsys, arguments, message):
    """benchmarks/mpe_spread_learning.py: checked before anything is played."""
    for name, env in (("experiment", "simple_spread"), ("tag_experiment", "simple_tag")):
        base = build_config({"env": env, "num_envs": 2, "iterations": 1})
        ExperimentDirectory(tmp_path / name, resume=False).create(base, (0,), {}, plan_runs(base, (0,), {}))
    script = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "mpe_spread_learning.py")
    paths = {name: str(tmp_path / name) for name in ("missing", "experiment", "tag_experiment")}
    with pytest.raises(SystemExit) as exit_:
        script.main([argument.format(**paths) for argument in arguments])
    assert exit_.value.code == 2 and message in capsys.readouterr().err
