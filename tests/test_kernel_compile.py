"""The kernels compile for a real GPU, compute in float32 and round as NumPy does.

The simulator checks none of this. The rounding rule: the compiler fuses no product
into a sum (no ``fma.rn.f32`` beyond those written explicitly, i.e. libdevice's own),
because the NumPy reference rounds the product and the sum apart. tag_continuous's kernels are
checked in test_kernel_resources.py, from the compile that measures their resources.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("compile_kernels.py")

pytestmark = pytest.mark.slow


def compile_all(env_id: str, params: dict) -> list[dict]:
    return run_script(env_id, json.dumps(params))


def run_script(*args: str) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, str(SCRIPT), *args], env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0 and "DynamicLibNotFoundError" in done.stderr:
        pytest.skip("the CUDA compiler libraries are not installed (pip install 'numba-cuda[cu12]')")
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_contraction_is_caught_in_a_planted_kernel():
    results = {r["kernel"]: r for r in run_script("--planted")}
    assert results["planted_squared_distance"]["contracted"] == 1, "dx*dx + dy*dy must show as one fused fma"
    assert results["rounded_squared_distance"]["contracted"] == 0
    with pytest.raises(AssertionError, match="planted_squared_distance fuses 1 multiply-add"):
        assert_compiled_as_numpy_rounds(list(results.values()))


def test_tag_gridworld_kernels_compile_to_float32_ptx():
    results = compile_all("tag_gridworld", {"use_full_observation": True})
    results += compile_all("tag_gridworld", {"use_full_observation": False, "fixed_start": True,
                                             "closing_reward_for_tagger": 0.1})
    assert {r["kernel"] for r in results} == {"move_agents", "detect_tag", "add_outcome_rewards", "finish_step",
                                              "observe_full", "observe_partial", "reset_agents", "reset_envs",
                                              "count_resets", "measure_runner_distance", "add_closing_rewards"}
    assert_compiled_as_numpy_rounds(results)


def test_simple_spread_kernels_compile_to_float32_ptx():
    """Its softplus (warpsim.kernels.exponential), sums and grid searches included (the nearest on grids in
    shared memory and in global scratch, and more nearest than a list holds): no float64, and no product
    fused into a sum."""
    results = compile_all("simple_spread", {"N": 4}) + compile_all("simple_spread", {"N": 4, "continuous_actions": True})
    results += compile_all("simple_spread", {"N": 1000, "num_agent_neighbors": 10, "num_landmark_neighbors": 10})
    results += compile_all("simple_spread", {"N": 4096, "num_agent_neighbors": 10, "num_landmark_neighbors": 70})
    assert {r["kernel"] for r in results} == {"advance_clock", "push_agents", "push_agents_continuous", "move_agents",
                                              "reward_and_observe", "reset_bodies", "observe_reset", "count_resets"}
    assert_compiled_as_numpy_rounds(results)


def test_simple_adversary_kernels_compile_to_float32_ptx():
    results = compile_all("simple_adversary", {}) + compile_all("simple_adversary", {"continuous_actions": True})
    assert {r["kernel"] for r in results} == {"advance_clock", "move_agents", "move_agents_continuous",
                                              "reward_and_observe", "reset_agents", "reset_landmarks",
                                              "observe_reset", "count_resets"}
    assert_compiled_as_numpy_rounds(results)


def test_simple_speaker_listener_kernels_compile_to_float32_ptx():
    results = compile_all("simple_speaker_listener", {}) + compile_all("simple_speaker_listener",
                                                                       {"continuous_actions": True})
    assert {r["kernel"] for r in results} == {"advance_clock", "speak_and_move", "speak_and_move_continuous",
                                              "reward_and_observe", "reset_agents", "reset_landmarks",
                                              "observe_reset", "count_resets"}
    assert_compiled_as_numpy_rounds(results)


def test_simple_tag_kernels_compile_to_float32_ptx():
    """With the nearest 10 of 1000 agents on grids in shared memory, and 70 of 4096 in global scratch."""
    results = compile_all("simple_tag", {}) + compile_all("simple_tag", {"continuous_actions": True})
    results += compile_all("simple_tag", {"num_adversaries": 250, "num_good": 750, "num_agent_neighbors": 10})
    results += compile_all("simple_tag", {"num_adversaries": 1024, "num_good": 3072, "num_agent_neighbors": 70})
    assert {r["kernel"] for r in results} == {"advance_clock", "push_agents", "push_agents_continuous", "move_agents",
                                              "reward_and_observe", "reset_agents", "reset_obstacles",
                                              "observe_reset", "count_resets"}
    assert_compiled_as_numpy_rounds(results)


def test_template_kernels_compile_to_float32_ptx():
    results = compile_all("beacon", {}) + compile_all("beacon", {"continuous_actions": True})
    assert {r["kernel"] for r in results} == {"advance_clock", "move_and_observe", "move_and_observe_continuous",
                                              "reset_beacons", "reset_agents", "count_resets"}
    assert_compiled_as_numpy_rounds(results)


def assert_compiled_as_numpy_rounds(results: list[dict]) -> None:
    for result in results:
        assert result["float64"] == [], f"{result['kernel']} computes in float64: {result['float64']}"
        assert result["contracted"] == 0, (
            f"{result['kernel']} fuses {result['contracted']} multiply-add(s) the NumPy reference rounds "
            f"twice; write the products with warpsim.kernels.rounding.mul (or squared_distance)")


@pytest.mark.gpu
def test_a_new_parameter_value_reuses_the_compiled_kernels():
    import warpsim
    from warpsim.envs.tag_continuous.step_kernels import step_kernels

    configurations = [(0, True, True, False, False, False), (3, True, True, False, True, False)]

    def overloads():
        return [len(kernel.overloads) for configuration in configurations for kernel in step_kernels(*configuration)]

    partial = dict(use_full_observation=False, num_other_agents_observed=3, neighbour_search="grid")
    warpsim.make("tag_continuous", 4, backend="cuda", tagging_distance=0.1).step()
    warpsim.make("tag_continuous", 4, backend="cuda", tagging_distance=0.1, **partial).step()
    compiled = overloads()
    warpsim.make("tag_continuous", 4, backend="cuda", tagging_distance=0.3, episode_length=7,
                 max_speed=2.0, tag_reward_for_tagger=5.0).step()
    warpsim.make("tag_continuous", 4, backend="cuda", tagging_distance=0.3, num_runners=30, **partial).step()
    assert overloads() == compiled
