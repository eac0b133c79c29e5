"""``warpsim check``: consistent kernels pass, and a planted one-line bug is found precisely.

Without a GPU the kernels run on Numba's CUDA simulator (tests/conftest.py), so the
sizes stay tiny. A bug is planted in a copy of tag_continuous's kernels module that
the environment uses only inside the test (``monkeypatch``).
"""

import dataclasses
import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

import warpsim
from warpsim.check import check, default_steps
from warpsim.cli import main
from warpsim.envs.tag_continuous import env as tag_env
from warpsim.envs.tag_continuous import grid_search as tag_grid_search
from warpsim.envs.tag_continuous import kernels as tag_kernels
from warpsim.envs.tag_continuous import step_kernels as tag_step_kernels
from warpsim.registry import env_class

SMALL: dict[str, Any] = dict(num_taggers=1, num_runners=3)
STANDING_STILL: dict[str, Any] = dict(min_acceleration=0.0, max_acceleration=0.0)
"""Nobody moves (speeds start at 0), so the random actions cannot change where tags happen."""
TAG_PENALTY_LINE = "    rewards[e, i] += tag_penalty_for_runner\n"
TIME_FEATURE_LINE = ("    store_observation(observations, e, i, 7 * stride, np.float32(t[e]) / np.float32(episode_length)"
                     " * observer)\n")
END_OF_GAME_LINE = "    if i >= num_taggers and t[e] == episode_length and still_in_game[e, i] == 1:\n"


def plant_bug(monkeypatch, tmp_path: Path, line: str, replacement: str):
    """Makes tag_continuous launch step and reset kernels built from a copy of its kernels module
    with ``line`` replaced (and fresh copies of the modules that import it); returns the copy."""
    source = Path(tag_kernels.__file__).read_text()
    assert source.count(line) == 1, f"the line to replace is not in kernels.py exactly once: {line!r}"
    mutant = load_module(monkeypatch, tmp_path, "kernels", source.replace(line, replacement))
    load_module(monkeypatch, tmp_path, "grid_search", Path(tag_grid_search.__file__).read_text())
    step = load_module(monkeypatch, tmp_path, "step_kernels", Path(tag_step_kernels.__file__).read_text())
    monkeypatch.setattr(tag_env, "step_kernels", step.step_kernels)
    return mutant


def load_module(monkeypatch, tmp_path: Path, name: str, source: str):
    """``source`` as the module warpsim.envs.tag_continuous.<name> while the test runs, so that the
    modules loaded after it import it."""
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"warpsim.envs.tag_continuous.{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def values_per_step(num_envs: int, **params) -> int:
    env = warpsim.make("tag_continuous", num_envs, backend="numpy", **params)
    arrays = [*(array for _, array in env.state.items()), env.observations, env.rewards, env.done, env.terminated]
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
    assert report.arrays_compared == 4 + 11, "observations, rewards, done, terminated and the 11 state arrays"
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

    assert mismatch is not None
    assert not report.consistent and report.steps == 1
    assert (mismatch.array, mismatch.step) == ("rewards", 1)
    assert (mismatch.env, mismatch.agent, mismatch.element) == (*tagged[0], None)
    assert (mismatch.reference, mismatch.kernels) == (-1.0, 1.0)
    assert (mismatch.count, mismatch.size, mismatch.also_differ) == (len(tagged), 12, ())
    e, i = tagged[0]
    assert mismatch.role == "runner", "the report names the agent's role"
    assert str(report).startswith(f"mismatch: rewards[{e}, {i}] (env {e}, agent {i}, role runner) differs after "
                                  f"step 1: reference -1.0, kernels 1.0; {len(tagged)} of 12 values")


def test_planted_observation_bug_is_found_right_after_the_reset(monkeypatch, tmp_path):
    plant_bug(monkeypatch, tmp_path, TIME_FEATURE_LINE, TIME_FEATURE_LINE.replace("t[e]", "t[e] + 1"))
    report = check("tag_continuous", num_envs=2, steps=5, episode_length=4, **SMALL)

    mismatch = report.mismatch

    assert mismatch is not None
    time_feature = 7 * (4 - 1)
    assert (mismatch.array, mismatch.step, mismatch.index) == ("observations", 0, (0, 0, time_feature))
    assert (mismatch.env, mismatch.agent, mismatch.element) == (0, 0, time_feature)
    assert (mismatch.reference, mismatch.kernels) == (0.0, 0.25)
    assert mismatch.count == 2 * 4, "every agent's time feature is wrong"
    assert f"observations[0, 0, {time_feature}] (env 0, agent 0, role tagger, element {time_feature}) differs " \
           f"right after the first reset: reference 0.0, kernels 0.25" in str(report)


def test_planted_end_of_game_bug_is_found_at_the_right_step(monkeypatch, tmp_path):
    plant_bug(monkeypatch, tmp_path, END_OF_GAME_LINE,
              END_OF_GAME_LINE.replace("== episode_length", "== episode_length - 1"))
    params = dict(SMALL, episode_length=3, tagging_distance=0.0)  # no tags: every runner is in at the end
    report = check("tag_continuous", num_envs=2, steps=6, **params)

    mismatch = report.mismatch

    assert mismatch is not None
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


@pytest.mark.slow(seconds=10)
def test_command_line_without_a_gpu_runs_the_kernels_on_the_simulator(tmp_path):
    environment = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-m", "warpsim.cli", "check", "beacon", "--steps", "3",
                           "--set", "episode_length=2"], env=environment, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("consistent: beacon E=2 N=4, kernels on CUDA simulator")
    if not torch.cuda.is_available():
        assert "running the kernels on the CUDA simulator" in done.stderr


def check_params(env_id: str) -> dict:
    """The small parameters an environment's folder declares for this test (``CHECK_PARAMS``)."""
    package = importlib.import_module(env_class(env_id).__module__.rpartition(".")[0])
    return package.CHECK_PARAMS


@pytest.mark.parametrize("env_id", warpsim.registered())
def test_every_shipped_environment_is_consistent(env_id):
    report = check(env_id, num_envs=2, steps=16, **check_params(env_id))
    assert report.consistent, str(report)
    assert report.episodes_ended >= 4, "the comparison must cover resets"


TURN_LINE = "    heading = wrap_angle(direction[e, i] + turn) * alive_f\n"
POSITION_LINE = "    loc_x[e, i] = min(max(x, ZERO), grid_length)\n"


def test_arrays_that_differ_are_named_in_the_order_the_step_computes_them(monkeypatch, tmp_path):
    # A wrong turn changes the heading, which moves the agent and changes what it observes:
    # the report must name direction first, not loc_x or loc_y (declared first).
    plant_bug(monkeypatch, tmp_path, TURN_LINE, TURN_LINE.replace("+ turn", "- turn"))
    report = check("tag_continuous", num_envs=2, steps=3, **SMALL)

    mismatch = report.mismatch

    assert mismatch is not None
    assert (mismatch.array, mismatch.step) == ("direction", 1)
    assert mismatch.also_differ in (("loc_y", "observations"), ("loc_x", "loc_y", "observations"))
    assert f"(also differing at this step, in the order it computes them: {', '.join(mismatch.also_differ)})" \
        in str(report)


def test_write_order_must_name_arrays_the_step_writes():
    from warpsim.environment import EnvSpec
    from warpsim.envs.template import Beacon

    class Misnamed(Beacon):
        def describe(self) -> EnvSpec:
            return dataclasses.replace(super().describe(), write_order=("t", "pos_z", "actions"))

    with pytest.raises(ValueError, match=r"names 'pos_z', 'actions' in write_order; name arrays a step writes: "):
        warpsim.make(Misnamed, 1, backend="numpy")


def test_every_step_starts_the_kernels_from_the_references_state(monkeypatch, tmp_path):
    # The kernels move every agent 6e-4 too far each step: within atol=1e-3 at any one step,
    # beyond it after two steps if the error could add up.
    mutant = plant_bug(monkeypatch, tmp_path, POSITION_LINE, POSITION_LINE.replace("grid_length)", "grid_length) + DRIFT"))
    monkeypatch.setattr(mutant, "DRIFT", np.float32(6e-4), raising=False)
    params = dict(SMALL, episode_length=50, tagging_distance=0.0)
    report = check("tag_continuous", num_envs=2, steps=6, rtol=0.0, atol=1e-3, **params)
    assert report.consistent, str(report)
    mismatch = check("tag_continuous", num_envs=2, steps=6, rtol=0.0, atol=1e-4, **params).mismatch
    assert mismatch is not None and mismatch.array == "loc_x"


def test_default_steps_cover_three_episodes():
    report = check("beacon", num_envs=2, num_agents=2, episode_length=3)
    assert report.consistent, str(report)
    assert (report.steps, report.episodes_ended) == (9, 6)
    assert default_steps(SimpleNamespace(params=SimpleNamespace())) == 64, "no episode_length parameter"  # type: ignore[arg-type]


def test_command_line_help_states_the_default_steps(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--steps STEPS random steps after the reset (default: three episodes, 3 x the environment's " \
           "episode_length, or 64 if it has none)" in help_text


TAG_AT_THE_RADIUS: dict[str, Any] = dict(num_taggers=1, num_runners=2, grid_length=8.0, tagging_distance=0.0625, **STANDING_STILL)
"""Tag radius 0.5 exactly (0.0625 * 8): a runner 0.5 from the tagger is not tagged (the rule is strict)."""


def step_from(env, loc_x) -> tuple[dict, dict]:
    """The arrays after one step from: tagger at (4, 4), runner 1 at (loc_x, 4), runner 2 far away."""
    check_module = importlib.import_module("warpsim.check")
    env.state.loc_x.copy_(torch.tensor([[4.0, loc_x, 1.0]]))
    env.state.loc_y.copy_(torch.tensor([[4.0, 4.0, 1.0]]))
    before = {name: array.copy() for name, array in check_module._arrays(env).items()}
    env.step(np.zeros((1, 3, 2), np.int32), auto_reset=False)
    return before, {name: array.copy() for name, array in check_module._arrays(env).items()}


def test_a_difference_the_reference_gives_one_ulp_away_is_a_near_tie():
    check_module = importlib.import_module("warpsim.check")
    env = warpsim.make("tag_continuous", 1, backend="numpy", **TAG_AT_THE_RADIUS)
    before, reference = step_from(env, 4.5)
    assert reference["rewards"].tolist() == [[0.0, 0.0, 0.0]], "exactly at the radius: no tag"
    # Kernels that round the runner's distance one ulp lower tag it: what they would report.
    twin = warpsim.make("tag_continuous", 1, backend="numpy", **TAG_AT_THE_RADIUS)
    _, kernels = step_from(twin, float(np.nextafter(np.float32(4.5), np.float32(0))))
    kernels["loc_x"] = reference["loc_x"]
    assert kernels["rewards"].tolist() == [[1.0, -1.0, 0.0]]
    differing = {name: where for name in reference
                 if (where := check_module._differs(reference[name], kernels[name], 1e-5, 1e-6)).any()}
    assert set(differing) == {"rewards", "still_in_game", "num_runners_left", "tags"}

    probe = check_module._NearTieProbe(type(env), 1, 0, dataclasses.asdict(env.params), rtol=1e-5, atol=1e-6)
    actions = np.zeros((1, 3, 2), np.int32)
    assert probe.explains(before, actions, kernels, differing)
    wrong_sign = dict(kernels, rewards=-kernels["rewards"])
    assert not probe.explains(before, actions, wrong_sign, differing), "a real bug is no near-tie"


def test_near_ties_are_named_and_allowed_only_when_asked(monkeypatch, tmp_path):
    plant_bug(monkeypatch, tmp_path, TAG_PENALTY_LINE, TAG_PENALTY_LINE.replace("+=", "-="))
    monkeypatch.setattr(importlib.import_module("warpsim.check")._NearTieProbe, "explains", lambda *args: True)
    params = dict(num_taggers=1, num_runners=5, tagging_distance=0.5, **STANDING_STILL)

    stopped = check("tag_continuous", num_envs=2, steps=3, seed=4, **params)
    assert stopped.mismatch is not None and stopped.mismatch.near_tie and stopped.steps == 1
    assert "a near-tie: the reference gives the kernels' values when its float inputs move by one ulp" in str(stopped)

    allowed = check("tag_continuous", num_envs=2, steps=3, seed=4, allow_near_ties=True, **params)
    assert allowed.consistent and allowed.steps == 3
    assert [tie.step for tie in allowed.near_ties][:1] == [1] and all(t.array == "rewards" for t in allowed.near_ties)
    assert "\n  allowed rewards[" in str(allowed)


@pytest.mark.parametrize("env_id, params", [
    ("tag_continuous", dict(num_taggers=3, num_runners=9, use_full_observation=False, num_other_agents_observed=4,
                            episode_length=6, tagging_distance=0.15)),
    ("tag_continuous", dict(num_taggers=2, num_runners=3, observe_own_state=True, episode_length=4,
                            tagging_distance=0.2)),
    ("tag_continuous", dict(num_taggers=2, num_runners=4, use_full_observation=False, num_other_agents_observed=2,
                            neighbour_search="grid", observe_own_state=True, episode_length=4, tagging_distance=0.2)),
    ("tag_gridworld", dict(num_taggers=3, grid_length=3, episode_length=6)),
    ("beacon", dict(num_agents=3, episode_length=4)),
])
def test_shipped_environments_agree_bit_for_bit(env_id, params):
    report = check(env_id, num_envs=2, steps=12, rtol=0.0, atol=0.0, **params)
    assert report.consistent, str(report)
