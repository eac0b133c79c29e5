"""``warpsim check``: consistent kernels pass, and a planted one-line bug is found precisely.

Without a GPU the kernels run on Numba's CUDA simulator (tests/conftest.py), so the
sizes stay tiny. A bug is planted in a copy of tag_continuous's kernels module that
the environment uses only inside the test (``monkeypatch``).
"""

import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import warpsim
from warpsim.check import check
from warpsim.cli import main
from warpsim.envs.tag_continuous import env as tag_env
from warpsim.envs.tag_continuous import kernels as tag_kernels

SMALL = dict(num_taggers=1, num_runners=3)
STANDING_STILL = dict(min_acceleration=0.0, max_acceleration=0.0)
"""Nobody moves (speeds start at 0), so the random actions cannot change where tags happen."""
TAG_PENALTY_LINE = "        rewards[e, i] += tag_penalty_for_runner\n"
TIME_FEATURE_LINE = ("    observations[e, i, 7 * stride] = np.float32(t[e]) / np.float32(episode_length)"
                     " * observer\n")
END_OF_GAME_LINE = "    if i >= num_taggers and t[e] == episode_length and still_in_game[e, i] == 1:\n"


def plant_bug(monkeypatch, tmp_path: Path, line: str, replacement: str) -> None:
    """Makes tag_continuous launch a copy of its kernels with ``line`` replaced."""
    source = Path(tag_kernels.__file__).read_text()
    assert source.count(line) == 1, f"the line to replace is not in kernels.py exactly once: {line!r}"
    path = tmp_path / "mutant_kernels.py"
    path.write_text(source.replace(line, replacement))
    spec = importlib.util.spec_from_file_location("mutant_kernels", path)
    mutant = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mutant)
    monkeypatch.setattr(tag_env, "kernels", mutant)


def values_per_step(num_envs: int, **params) -> int:
    env = warpsim.make("tag_continuous", num_envs, backend="numpy", **params)
    arrays = [*(array for _, array in env.state.items()), env.observations, env.rewards, env.done]
    return sum(array.numel() for array in arrays)


@pytest.mark.parametrize("observation", [dict(use_full_observation=True),
                                         dict(use_full_observation=False, num_other_agents_observed=2)],
                         ids=["full", "partial"])
def test_kernels_are_consistent_over_several_episodes(observation):
    params = dict(SMALL, episode_length=4, tagging_distance=0.2, **observation)
    report = check("tag_continuous", num_envs=2, steps=12, seed=3, **params)
    assert report.consistent and report.mismatch is None, str(report)
    assert report.steps == 12
    assert report.episodes_ended >= 2 * (12 // 4), "every environment ends at least every 4 steps"
    assert report.arrays_compared == 3 + 11, "observations, rewards, done and the 11 state arrays"
    assert report.values_compared == 13 * values_per_step(2, **params)
    assert (report.num_envs, report.num_agents) == (2, 4)
    assert str(report).startswith("consistent: tag_continuous E=2 N=4") and "12 steps" in str(report)


def test_planted_tag_penalty_bug_is_found_at_the_first_tag(monkeypatch, tmp_path):
    plant_bug(monkeypatch, tmp_path, TAG_PENALTY_LINE, TAG_PENALTY_LINE.replace("+=", "-="))
    params = dict(num_taggers=1, num_runners=5, tagging_distance=0.5, **STANDING_STILL)
    # Where the first step tags runners follows from the seeded starts alone.
    reference = warpsim.make("tag_continuous", 2, backend="numpy", seed=4, **params)
    reference.step(np.zeros(tuple(reference.actions.shape), np.int32))
    tagged = np.argwhere(reference.rewards.numpy() == -1.0)
    assert len(tagged) > 0, "the scenario must tag a runner on step 1"

    report = check("tag_continuous", num_envs=2, steps=5, seed=4, **params)

    mismatch = report.mismatch
    assert not report.consistent and report.steps == 1
    assert (mismatch.array, mismatch.step) == ("rewards", 1)
    assert (mismatch.env, mismatch.agent, mismatch.element) == (*tagged[0], None)
    assert (mismatch.reference, mismatch.kernels) == (-1.0, 1.0)
    assert (mismatch.count, mismatch.size, mismatch.also_differ) == (len(tagged), 12, ())
    e, i = tagged[0]
    assert str(report).startswith(f"mismatch: rewards[{e}, {i}] (env {e}, agent {i}) differs after step 1: "
                                  f"reference -1.0, kernels 1.0; {len(tagged)} of 12 values")


def test_planted_observation_bug_is_found_right_after_the_reset(monkeypatch, tmp_path):
    plant_bug(monkeypatch, tmp_path, TIME_FEATURE_LINE, TIME_FEATURE_LINE.replace("t[e]", "t[e] + 1"))
    report = check("tag_continuous", num_envs=2, steps=5, episode_length=4, **SMALL)

    mismatch = report.mismatch
    time_feature = 7 * (4 - 1)
    assert (mismatch.array, mismatch.step, mismatch.index) == ("observations", 0, (0, 0, time_feature))
    assert (mismatch.env, mismatch.agent, mismatch.element) == (0, 0, time_feature)
    assert (mismatch.reference, mismatch.kernels) == (0.0, 0.25)
    assert mismatch.count == 2 * 4, "every agent's time feature is wrong"
    assert f"observations[0, 0, {time_feature}] (env 0, agent 0, element {time_feature}) differs right after " \
           f"the first reset: reference 0.0, kernels 0.25" in str(report)


def test_planted_end_of_game_bug_is_found_at_the_right_step(monkeypatch, tmp_path):
    plant_bug(monkeypatch, tmp_path, END_OF_GAME_LINE,
              END_OF_GAME_LINE.replace("== episode_length", "== episode_length - 1"))
    params = dict(SMALL, episode_length=3, tagging_distance=0.0)  # no tags: every runner is in at the end
    report = check("tag_continuous", num_envs=2, steps=6, **params)

    mismatch = report.mismatch
    assert (mismatch.array, mismatch.step, mismatch.env, mismatch.agent) == ("rewards", 2, 0, 1)
    assert (mismatch.reference, mismatch.kernels) == (0.0, 1.0)
    assert mismatch.count == 2 * 3, "every runner of every environment"
    assert report.episodes_ended == 0, "no episode ended before the mismatching step"


def test_check_refuses_bad_options():
    with pytest.raises(ValueError, match=r"steps=0 is not allowed; give an integer >= 1"):
        check("tag_continuous", steps=0)
    with pytest.raises(ValueError, match=r"atol=-1.0 is not allowed"):
        check("tag_continuous", atol=-1.0)
    with pytest.raises(TypeError, match=r"remove 'backend'"):
        check("tag_continuous", backend="numpy")


def test_check_without_gpu_or_simulator_says_how_to_enable_the_simulator(monkeypatch):
    check_module = importlib.import_module("warpsim.check")  # warpsim.check is the function
    monkeypatch.setattr(check_module, "simulator_enabled", lambda: False)
    monkeypatch.setattr(check_module, "gpu_available", lambda: False)
    with pytest.raises(RuntimeError, match="NUMBA_ENABLE_CUDASIM=1"):
        check("tag_continuous")


def test_command_line_prints_consistent_and_exits_0(capsys):
    code = main(["check", "tag_continuous", "--num-envs", "2", "--steps", "12", "--set", "num_runners=3",
                 "--set", "episode_length=4"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.startswith("consistent: tag_continuous E=2 N=4") and "12 steps" in captured.out
    assert "step 10/12: consistent so far" in captured.err


def test_command_line_exits_1_on_a_mismatch(monkeypatch, tmp_path, capsys):
    plant_bug(monkeypatch, tmp_path, TIME_FEATURE_LINE, TIME_FEATURE_LINE.replace("t[e]", "t[e] + 1"))
    assert main(["check", "tag_continuous", "--steps", "3", "--set", "num_runners=3"]) == 1
    assert capsys.readouterr().out.startswith("mismatch: observations[0, 0, 21]")


@pytest.mark.parametrize("argv, message", [
    (["tag_continuous", "--set", "num_runerz=3"], "'num_runerz=3': expected NAME=VALUE with NAME one of"),
    (["tag_continuous", "--set", "num_runners=0"], "num_runners=0 is not allowed"),
    (["tag_continuous", "--steps", "0"], "steps=0 is not allowed"),
    (["tag_kontinuous"], "unknown environment 'tag_kontinuous'"),
])
def test_command_line_bad_input_exits_2_with_a_clear_message(argv, message, capsys):
    assert main(["check", *argv]) == 2
    assert message in capsys.readouterr().err


def test_command_line_without_a_gpu_runs_the_kernels_on_the_simulator(tmp_path):
    environment = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-m", "warpsim.cli", "check", "beacon", "--steps", "3",
                           "--set", "episode_length=2"], env=environment, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("consistent: beacon E=2 N=4, kernels on CUDA simulator")
    if not torch.cuda.is_available():
        assert "running the kernels on the CUDA simulator" in done.stderr


@pytest.mark.parametrize("env_id, params", [
    ("tag_continuous", dict(num_taggers=2, num_runners=3, episode_length=5, tagging_distance=0.2)),
    ("tag_gridworld", dict(num_taggers=3, grid_length=3, episode_length=6)),
    ("beacon", dict(num_agents=3, episode_length=4)),
])
def test_every_shipped_environment_is_consistent(env_id, params):
    report = check(env_id, num_envs=2, steps=16, **params)
    assert report.consistent, str(report)
    assert report.episodes_ended >= 4, "the comparison must cover resets"
