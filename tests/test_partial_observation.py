"""The NumPy partial observation (partition-based neighbour search) against a plain per-agent oracle.

The oracle follows the words of docs/tag_rules.md section 1 with a full stable sort per agent. States put the
agents on a coarse lattice, so equal distances (ties) are everywhere and several agents
share a cell, and take many agents out of the game, so some observers see fewer than K.
"""

import numpy as np
import pytest

import warpsim
from warpsim.envs.tag_continuous import TagContinuous, reference
from warpsim.envs.tag_continuous.nearest import nearest_in_game


def random_tie_state(env, rng, out_fraction):
    p = env.params
    e, n = env.num_envs, env.num_agents
    alive = (rng.random((e, n)) >= out_fraction).astype(np.int32)
    return {
        "loc_x": rng.integers(0, 4, (e, n)).astype(np.float32),  # a 4 x 4 lattice: many equal distances
        "loc_y": rng.integers(0, 4, (e, n)).astype(np.float32),
        "speed": rng.uniform(0, 1, (e, n)).astype(np.float32) * alive,
        "direction": rng.uniform(0, 2 * np.pi, (e, n)).astype(np.float32) * alive,
        "acceleration": rng.uniform(-0.5, 0.5, (e, n)).astype(np.float32) * alive,
        "still_in_game": alive,
        "t": rng.integers(0, p.episode_length, e).astype(np.int32),
    }


def oracle_observation(state, env, e, i):
    """The partial observation (docs/tag_rules.md section 1) of agent i in environment e, one agent at a time."""
    p, c = env.params, env.constants
    k, f32 = p.num_other_agents_observed, np.float32
    observation = np.zeros(7 * k + 1, np.float32)
    if state["still_in_game"][e, i] != 1:
        return observation
    x, y = state["loc_x"][e], state["loc_y"][e]
    distance_squared = [(x[j] - x[i]) * (x[j] - x[i]) + (y[j] - y[i]) * (y[j] - y[i])
                        for j in range(env.num_agents)]
    others = [j for j in np.argsort(distance_squared, kind="stable")
              if j != i and state["still_in_game"][e, j] == 1][:k]
    scales = (c.position_scale, c.position_scale, c.speed_scale, c.speed_scale, f32(2 * np.pi))
    names = ("loc_x", "loc_y", "speed", "acceleration", "direction")
    for slot, j in enumerate(others):
        for feature, (name, scale) in enumerate(zip(names, scales)):
            observation[feature * k + slot] = (state[name][e, j] - state[name][e, i]) / scale
        observation[5 * k + slot] = 1.0 if j < p.num_taggers else 0.0
        observation[6 * k + slot] = 1.0
    observation[7 * k] = f32(state["t"][e]) / f32(p.episode_length)
    return observation


@pytest.mark.parametrize("num_observed, out_fraction", [(1, 0.3), (4, 0.3), (6, 0.8), (29, 0.3), (29, 0.0)])
def test_partial_observation_matches_the_oracle_on_ties_and_agents_out_of_game(num_observed, out_fraction):
    env = warpsim.make("tag_continuous", 5, backend="numpy", num_taggers=3, num_runners=27, grid_length=4.0,
                       use_full_observation=False, num_other_agents_observed=num_observed)
    rng = np.random.default_rng(num_observed * 100 + int(out_fraction * 10))
    state = random_tie_state(env, rng, out_fraction)
    for name, value in state.items():
        getattr(env.views, name)[...] = value
    state = {name: getattr(env.views, name).copy() for name in state}  # as stored: float32 and int32
    envs = np.array([3, 0, 4])  # a reset's subset, out of order
    assert isinstance(env, TagContinuous)
    reference.observe(env.views, env.params, env.constants, envs)
    for e in envs:
        for i in range(env.num_agents):
            np.testing.assert_array_equal(env.views.observations[e, i], oracle_observation(state, env, e, i),
                                          err_msg=f"environment {e}, agent {i}")


def test_nearest_in_game_breaks_ties_by_lower_id_and_marks_empty_slots():
    """Agent 0 at the centre; agents 1-4 at distance 1 (a four-way tie), 5 out of the game at 0."""
    x = np.array([[2, 3, 1, 2, 2, 2]], np.float32)
    y = np.array([[2, 2, 2, 3, 1, 2]], np.float32)
    in_game = np.array([[1, 1, 1, 1, 1, 0]], bool)
    ids, found = nearest_in_game(x, y, in_game, 5)
    assert ids[0, 0].tolist() == [1, 2, 3, 4, 0] and found[0, 0].tolist() == [True] * 4 + [False]
    assert ids[0, 5].tolist() == [5] * 5 and not found[0, 5].any()  # out of the game: observes nobody
