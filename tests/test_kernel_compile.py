"""The kernels compile for a real GPU and compute in float32 (the simulator checks neither)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("compile_kernels.py")
TAG_CONTINUOUS_KERNELS = {"move_agents", "observe_full", "observe_partial", "tag_runners", "finish_step",
                          "reset_agents", "reset_envs", "count_resets", "observe_partial_grid", "tag_runners_grid"}


def compile_all(env_id: str, params: dict) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, str(SCRIPT), env_id, json.dumps(params)], env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0 and "DynamicLibNotFoundError" in done.stderr:
        pytest.skip("the CUDA compiler libraries are not installed (pip install 'numba-cuda[cu12]')")
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_tag_continuous_kernels_compile_to_float32_ptx():
    results = compile_all("tag_continuous", {"use_full_observation": True})
    results += compile_all("tag_continuous", {"use_full_observation": False,
                                              "num_other_agents_observed": 3})
    results += compile_all("tag_continuous", {"use_full_observation": False, "num_other_agents_observed": 3,
                                              "neighbour_search": "grid"})
    assert {r["kernel"] for r in results} == TAG_CONTINUOUS_KERNELS
    assert_float32(results)


def test_tag_gridworld_kernels_compile_to_float32_ptx():
    results = compile_all("tag_gridworld", {"use_full_observation": True})
    results += compile_all("tag_gridworld", {"use_full_observation": False, "fixed_start": True})
    assert {r["kernel"] for r in results} == {"move_agents", "detect_tag", "add_outcome_rewards", "finish_step",
                                              "observe_full", "observe_partial", "reset_agents", "reset_envs",
                                              "count_resets"}
    assert_float32(results)


def test_template_kernels_compile_to_float32_ptx():
    results = compile_all("beacon", {})
    assert {r["kernel"] for r in results} == {"advance_clock", "move_and_observe", "reset_beacons",
                                              "reset_agents", "count_resets"}
    assert_float32(results)


def assert_float32(results: list[dict]) -> None:
    for result in results:
        assert result["float64"] == [], f"{result['kernel']} computes in float64: {result['float64']}"


@pytest.mark.gpu
def test_a_new_parameter_value_reuses_the_compiled_kernels():
    import warpsim
    from warpsim.envs.tag_continuous import grid_kernels, kernels

    def overloads():
        return {name: len((getattr(kernels, name, None) or getattr(grid_kernels, name)).overloads)
                for name in TAG_CONTINUOUS_KERNELS - {"count_resets"}}

    partial = dict(use_full_observation=False, num_other_agents_observed=3, neighbour_search="grid")
    warpsim.make("tag_continuous", 4, backend="cuda", tagging_distance=0.1).step()
    warpsim.make("tag_continuous", 4, backend="cuda", tagging_distance=0.1, **partial).step()
    compiled = overloads()
    warpsim.make("tag_continuous", 4, backend="cuda", tagging_distance=0.3, episode_length=7,
                 max_speed=2.0, tag_reward_for_tagger=5.0).step()
    warpsim.make("tag_continuous", 4, backend="cuda", tagging_distance=0.3, num_runners=30, **partial).step()
    assert overloads() == compiled
