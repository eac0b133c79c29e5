"""tag_continuous's observe_own_state: the agent's own heading, speed and position after t/T.

The reference's entries are checked against values computed here from the state; the
kernels (brute force and grid search, full and partial observations) against the
reference bit for bit, from random states through steps and resets.
"""

from typing import Any

import numpy as np
import pytest
from helpers import compared_arrays, random_actions, require_target, write_state
from tag_continuous_helpers import random_state, twin_envs

import warpsim
from warpsim.envs.tag_continuous import TagContinuousParams, reference
from warpsim.errors import InvalidTypeError

OWN_STATE = 5
SMALL: dict[str, Any] = dict(num_taggers=2, num_runners=4, grid_length=4.0, max_speed=0.75, episode_length=4,
             tagging_distance=0.2, observe_own_state=True)
OBSERVATIONS: dict[str, Any] = {
    "full": dict(use_full_observation=True),
    "partial": dict(use_full_observation=False, num_other_agents_observed=3, neighbour_search="brute_force"),
    "partial-grid": dict(use_full_observation=False, num_other_agents_observed=3, neighbour_search="grid"),
}


def observed(env, state: dict) -> np.ndarray:
    """The reference's observations of ``state``, written into ``env`` (NumPy backend)."""
    write_state(env, state)
    reference.observe(env.views, env.params, env.constants, np.arange(env.num_envs))
    return env.views.observations.copy()


@pytest.mark.parametrize("observation", ["full", "partial"])
def test_own_state_follows_the_warpdrive_observation_and_holds_heading_speed_and_position(observation):
    params = dict(SMALL, **OBSERVATIONS[observation])
    env = warpsim.make("tag_continuous", 3, backend="numpy", **params)
    without = warpsim.make("tag_continuous", 3, backend="numpy", **dict(params, observe_own_state=False))
    state = random_state(env, np.random.default_rng(7), out_fraction=0.4)
    state["still_in_game"][0, -1] = 0  # a runner out of the game, still heading somewhere at some speed
    warpdrive_size = without.spec.observation_size
    assert env.spec.observation_size == warpdrive_size + OWN_STATE
    assert warpdrive_size == (7 * 5 + 1 if observation == "full" else 7 * 3 + 1)

    with_own, warpdrive = observed(env, state), observed(without, state)

    np.testing.assert_array_equal(with_own[:, :, :warpdrive_size], warpdrive)
    alive = state["still_in_game"] == 1
    direction = state["direction"].astype(np.float32).astype(np.float64)
    expected = np.stack([np.cos(direction), np.sin(direction), state["speed"].astype(np.float32) / (0.75 + 1e-10),
                         state["loc_x"].astype(np.float32) / 4.0, state["loc_y"].astype(np.float32) / 4.0], axis=2)
    own = with_own[:, :, warpdrive_size:]
    np.testing.assert_allclose(own[alive], expected[alive], rtol=0, atol=3e-7)
    assert not own[~alive].any(), "an agent out of the game observes zeros for its own state"


def test_own_state_of_a_tagger_facing_back_and_of_a_runner_out_of_the_game():
    env = warpsim.make("tag_continuous", 1, backend="numpy", num_taggers=1, num_runners=1, grid_length=8.0,
                       max_speed=2.0, num_other_agents_observed=1, observe_own_state=True)
    state = {"loc_x": [[2.0, 6.0]], "loc_y": [[4.0, 1.0]], "speed": [[1.0, 0.0]],
             "direction": [[np.float32(np.pi), 0.0]], "acceleration": [[0.0, 0.0]], "still_in_game": [[1, 0]]}
    own = observed(env, state)[0, :, 7 + 1:]
    assert own[0].tolist() == pytest.approx([-1.0, 0.0, 0.5, 0.25, 0.5], abs=2e-7)
    assert own[1].tolist() == [0.0] * OWN_STATE


@pytest.mark.parametrize("observation", sorted(OBSERVATIONS))
def test_kernels_match_the_reference_bit_for_bit_through_steps_and_resets(observation):
    require_target("simulator")
    reference_env, kernels_env = twin_envs(2, seed=3, **SMALL, **OBSERVATIONS[observation])
    rng = np.random.default_rng(len(observation))
    state = random_state(reference_env, rng, out_fraction=0.4)
    write_state(reference_env, state)
    write_state(kernels_env, state)
    saw_done = False
    for step in range(5):
        actions = random_actions(reference_env, rng)
        reference_env.step(actions)
        kernels_env.step(actions)
        expected, got = compared_arrays(reference_env), compared_arrays(kernels_env)
        for name in expected:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=f"{name} after step {step}")
        saw_done |= bool(expected["done"].any())
    assert saw_done, "the comparison must cover resets"


@pytest.mark.parametrize("value", [2, "True"])
def test_a_value_other_than_a_bool_is_refused_in_one_line(value):
    with pytest.raises(InvalidTypeError, match=f"^observe_own_state={value!r} is not allowed; give True or False$"):
        TagContinuousParams(observe_own_state=value)


def test_the_bench_label_names_the_own_state():
    env = warpsim.make("tag_continuous", 1, backend="numpy", observe_own_state=True, use_full_observation=False)
    assert env.spec.observation_label == "partial K=2 + own state"
