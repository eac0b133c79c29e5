"""The kernels compile for a real GPU, compute in float32 and round as NumPy does.

The simulator checks none of this. The rounding rule: the compiler fuses no product
into a sum (no ``fma.rn.f32`` beyond those written explicitly, i.e. libdevice's own),
because the NumPy reference rounds the product and the sum apart. tag_continuous's kernels are
checked in test_kernel_resources.py, from the compile that measures their resources.
"""

import json

import pytest
from helpers import compile_kernels

pytestmark = pytest.mark.slow


def compile_all(env_id: str, *configs: dict) -> list[dict]:
    """Each config's kernels, compiled in one process."""
    return compile_kernels(env_id, *map(json.dumps, configs))


def test_contraction_is_caught_in_a_planted_kernel():
    results = {r["kernel"]: r for r in compile_kernels("--planted")}
    assert results["planted_squared_distance"]["contracted"] == 1, "dx*dx + dy*dy must show as one fused fma"
    assert results["rounded_squared_distance"]["contracted"] == 0
    with pytest.raises(AssertionError, match="planted_squared_distance fuses 1 multiply-add"):
        assert_compiled_as_numpy_rounds(list(results.values()))


def test_tag_gridworld_kernels_compile_to_float32_ptx():
    results = compile_all("tag_gridworld", {"use_full_observation": True},
                          {"use_full_observation": False, "fixed_start": True, "closing_reward_for_tagger": 0.1})
    assert {r["kernel"] for r in results} == {"move_agents", "detect_tag", "add_outcome_rewards", "finish_step",
                                              "observe_full", "observe_partial", "reset_agents", "reset_envs",
                                              "count_resets", "measure_runner_distance", "add_closing_rewards"}
    assert_compiled_as_numpy_rounds(results)


def test_simple_spread_kernels_compile_to_float32_ptx():
    """Its softplus (warpsim.kernels.exponential), sums and grid searches included (the nearest on grids in
    shared memory and in global scratch, and more nearest than a list holds): no float64, and no product
    fused into a sum."""
    results = compile_all("simple_spread", {"N": 4}, {"N": 4, "continuous_actions": True},
                          {"N": 1000, "num_agent_neighbors": 10, "num_landmark_neighbors": 10},
                          {"N": 4096, "num_agent_neighbors": 10, "num_landmark_neighbors": 70})
    assert {r["kernel"] for r in results} == {"advance_clock", "push_agents", "push_agents_continuous", "move_agents",
                                              "reward_and_observe", "reset_bodies", "observe_reset", "count_resets"}
    assert_compiled_as_numpy_rounds(results)


def test_simple_adversary_kernels_compile_to_float32_ptx():
    results = compile_all("simple_adversary", {}, {"continuous_actions": True})
    assert {r["kernel"] for r in results} == {"advance_clock", "move_agents", "move_agents_continuous",
                                              "reward_and_observe", "reset_agents", "reset_landmarks",
                                              "observe_reset", "count_resets"}
    assert_compiled_as_numpy_rounds(results)


def test_simple_speaker_listener_kernels_compile_to_float32_ptx():
    results = compile_all("simple_speaker_listener", {}, {"continuous_actions": True})
    assert {r["kernel"] for r in results} == {"advance_clock", "speak_and_move", "speak_and_move_continuous",
                                              "reward_and_observe", "reset_agents", "reset_landmarks",
                                              "observe_reset", "count_resets"}
    assert_compiled_as_numpy_rounds(results)


def test_simple_tag_kernels_compile_to_float32_ptx():
    """With the nearest 10 of 1000 agents on grids in shared memory, and 70 of 4096 in global scratch."""
    results = compile_all("simple_tag", {}, {"continuous_actions": True},
                          {"num_adversaries": 250, "num_good": 750, "num_agent_neighbors": 10},
                          {"num_adversaries": 1024, "num_good": 3072, "num_agent_neighbors": 70})
    assert {r["kernel"] for r in results} == {"advance_clock", "push_agents", "push_agents_continuous", "move_agents",
                                              "reward_and_observe", "reset_agents", "reset_obstacles",
                                              "observe_reset", "count_resets"}
    assert_compiled_as_numpy_rounds(results)


def test_template_kernels_compile_to_float32_ptx():
    results = compile_all("beacon", {}, {"continuous_actions": True})
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
