"""tag_continuous with the grid search against the NumPy reference, state for state, on adversarial states.

Each state is injected into the reference and into the kernels with
``neighbour_search="grid"`` (or ``"grid_tiles"``); a first step with zero actions and zero speeds leaves every
agent where it was put, so the observations and tags of exactly that layout are compared
(exactly: nothing but float32 subtractions, divisions and rounded squared distances).
Random steps follow. Layouts: a coarse lattice (exact distance ties, agents on cell
borders and on the walls), one-cell pile-ups, clusters, two piles, most agents out of
the game (K greater than the agents left). The ``gpu`` tests run the same at N = 1000,
2048 and 4096.
"""

from typing import Any

import numpy as np
import pytest
from helpers import KERNEL_TARGETS, assert_same, compared_arrays, random_actions, require_target, write_state
from tag_continuous_helpers import random_state, twin_envs

LENGTH = 4.0


def adversarial_positions(layout: str, rng, num_envs: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    f32 = np.float32
    if layout == "lattice":  # multiples of L/4: cell borders, walls, many equal distances
        return tuple(rng.integers(0, 5, (2, num_envs, n)).astype(f32) * f32(LENGTH / 4))
    if layout == "pile-up":  # everybody in one cell, most on one point
        point = np.where(rng.random((2, num_envs, n)) < 0.7, f32(1.3), rng.uniform(1.2, 1.4, (2, num_envs, n)))
        return tuple(point.astype(f32))
    if layout == "clusters":
        centres = rng.uniform(0, LENGTH, (2, num_envs, 3))
        which = rng.integers(0, 3, (num_envs, n))
        spread = rng.normal(0, LENGTH / 200, (2, num_envs, n))
        points = np.take_along_axis(centres, which[None], axis=2) + spread
        return tuple(np.clip(points, 0, LENGTH).astype(f32))
    if layout == "walls-and-corners":
        return tuple(rng.choice(np.array([0, LENGTH / 2, LENGTH], f32), (2, num_envs, n)))
    raise ValueError(layout)


def inject(envs, state):
    for env in envs:
        write_state(env, state)


def still_state(env, rng, layout, out_fraction):
    """A state whose agents stand still for one step of zero actions."""
    state = random_state(env, rng, out_fraction)
    state["loc_x"], state["loc_y"] = adversarial_positions(layout, rng, env.num_envs, env.num_agents)
    state["speed"] = np.zeros_like(state["speed"])
    state["acceleration"] = np.zeros_like(state["acceleration"])
    return state


def assert_layout_then_steps_agree(num_envs, layout, out_fraction, steps, seed, search="grid", **params):
    reference, kernels = twin_envs(num_envs, seed=seed, grid_length=LENGTH, neighbour_search=search, **params)
    rng = np.random.default_rng(seed)
    inject((reference, kernels), still_state(reference, rng, layout, out_fraction))
    zero_actions = np.zeros(tuple(reference.actions.shape), np.int32)
    reference.step(zero_actions, auto_reset=False)
    kernels.step(zero_actions, auto_reset=False)
    expected, got = compared_arrays(reference), compared_arrays(kernels)
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=f"{name} of layout {layout!r}")
    reference.reset(reference.done)
    kernels.reset(kernels.done)
    for step in range(steps):
        actions = random_actions(reference, rng)
        reference.step(actions)
        kernels.step(actions)
        assert_same(compared_arrays(reference), compared_arrays(kernels), f"after step {step} of {layout!r}")


@pytest.mark.parametrize("layout", ["lattice", "pile-up", "clusters", "walls-and-corners"])
@pytest.mark.parametrize("num_observed, out_fraction", [(3, 0.2), (9, 0.6)])
def test_grid_observations_and_tags_match_the_reference(layout, num_observed, out_fraction):
    """N = 20 spans several simulator blocks; at out_fraction 0.6 fewer than K + 1 agents are often left."""
    require_target("simulator")
    assert_layout_then_steps_agree(4, layout, out_fraction, steps=3, seed=len(layout) * 10 + num_observed,
                                   num_taggers=4, num_runners=16, use_full_observation=False,
                                   num_other_agents_observed=num_observed, tagging_distance=0.3)


@pytest.mark.parametrize("layout", ["lattice", "pile-up", "clusters", "walls-and-corners"])
def test_tile_search_observations_match_the_reference(layout):
    """N = 100 at K = 3: 7 x 7 cells, so a group's tile is smaller than the grid and its bound decides."""
    require_target("simulator")
    assert_layout_then_steps_agree(2, layout, 0.2, steps=2, seed=len(layout) * 10 + 7, search="grid_tiles",
                                   num_taggers=5, num_runners=95, use_full_observation=False,
                                   num_other_agents_observed=3, tagging_distance=0.3)


def test_grid_in_global_scratch_matches_the_reference(monkeypatch):
    """With no shared memory to spare, the grid goes to the environment's global scratch."""
    require_target("simulator")
    monkeypatch.setattr("warpsim.kernels.grid_layout.SHARED_MEMORY_BYTES", 0)
    _reference, kernels = twin_envs(1, num_taggers=2, num_runners=8, use_full_observation=False,
                                    num_other_agents_observed=3, neighbour_search="grid")
    assert not kernels._observation_grid.in_shared and kernels.scratch.grid_x.shape == (1, 10)
    assert_layout_then_steps_agree(3, "lattice", 0.3, steps=3, seed=5, num_taggers=4, num_runners=16,
                                   use_full_observation=False, num_other_agents_observed=5, tagging_distance=0.3)


def test_state_left_in_global_memory_beside_a_grid_in_shared_memory_matches_the_reference(monkeypatch):
    """Shared memory for the grid but not for the staged state: the observations read the state from
    global memory and are written slot by slot; by default (more room) the state is staged."""
    require_target("simulator")
    from warpsim.envs.tag_continuous.grid_search import observation_words_per_thread, staged_state_bytes
    from warpsim.kernels.grid_layout import GridLayout, agents_per_cell

    params: dict[str, Any] = dict(num_taggers=4, num_runners=16, use_full_observation=False, num_other_agents_observed=5,
                  tagging_distance=0.3)
    assert twin_envs(1, neighbour_search="grid", **params)[1]._state_in_shared
    layout = GridLayout(20, agents_per_cell(5), words_per_thread=observation_words_per_thread(5))
    monkeypatch.setattr("warpsim.kernels.grid_layout.SHARED_MEMORY_BYTES",
                        layout.shared_bytes_with(staged_state_bytes(20)) - 4)
    kernels = twin_envs(1, neighbour_search="grid", **params)[1]
    assert kernels._observation_grid.in_shared and not kernels._state_in_shared
    assert_layout_then_steps_agree(3, "lattice", 0.3, steps=3, seed=6, observe_own_state=True, **params)


@pytest.mark.parametrize("search, agent_cells, tagger_cells", [("brute_force", 1, 1), ("grid", 8, 4)])
def test_every_pair_is_searched_in_a_grid_of_one_cell(search, agent_cells, tagger_cells):
    """brute_force bins every agent (every tagger) into one cell; the scratch is a placeholder either way."""
    _reference, kernels = twin_envs(1, num_taggers=8, num_runners=8, use_full_observation=False,
                                    num_other_agents_observed=3, neighbour_search=search)
    assert kernels._observation_grid.cells_capacity == agent_cells
    assert kernels._tagger_grid.cells_capacity == tagger_cells
    assert all(array.dims == (1, 1) for array in kernels.spec.scratch)


@pytest.mark.parametrize("layout", ["lattice", "pile-up"])
def test_the_search_of_every_pair_matches_the_reference(layout):
    require_target("simulator")
    assert_layout_then_steps_agree(3, layout, 0.3, steps=2, seed=len(layout), search="brute_force", num_taggers=4,
                                   num_runners=16, use_full_observation=False, num_other_agents_observed=5,
                                   tagging_distance=0.3)


@pytest.mark.gpu
@pytest.mark.parametrize("target", [t for t in KERNEL_TARGETS if t.id == "gpu"])
@pytest.mark.parametrize("num_agents", [1000, 2048, 4096])
@pytest.mark.parametrize("layout", ["lattice", "pile-up", "clusters"])
@pytest.mark.parametrize("search", ["grid", "grid_tiles"])
def test_grid_matches_the_reference_at_real_sizes(target, num_agents, layout, search):
    require_target(target)
    taggers = max(1, num_agents // 20)
    assert_layout_then_steps_agree(2, layout, 0.3, steps=1, seed=num_agents, search=search, num_taggers=taggers,
                                   num_runners=num_agents - taggers, use_full_observation=False,
                                   num_other_agents_observed=10, tagging_distance=0.01)


@pytest.mark.gpu
@pytest.mark.parametrize("target", [t for t in KERNEL_TARGETS if t.id == "gpu"])
@pytest.mark.parametrize("num_agents, num_observed", [(1000, 10), (2048, 64), (4096, 10), (5000, 10)])
@pytest.mark.parametrize("search", ["grid", "grid_tiles"])
def test_grid_and_brute_force_kernels_agree_step_for_step(target, num_agents, num_observed, search):
    """A grid search and brute force on the GPU from the same states, for an episode of random steps:
    exactly equal. At N = 5000 the grid does not fit in shared memory and goes to global scratch."""
    require_target(target)
    import warpsim

    taggers = max(1, num_agents // 20)
    params: dict[str, Any] = dict(num_taggers=taggers, num_runners=num_agents - taggers, use_full_observation=False,
                  num_other_agents_observed=num_observed, tagging_distance=0.02, episode_length=30)
    grid = warpsim.make("tag_continuous", 8, backend="cuda", seed=3, neighbour_search=search, **params)
    brute = warpsim.make("tag_continuous", 8, backend="cuda", seed=3, neighbour_search="brute_force", **params)
    rng = np.random.default_rng(num_agents)
    for step in range(40):
        actions = random_actions(grid, rng)
        grid.step(actions)
        brute.step(actions)
        expected, got = compared_arrays(brute), compared_arrays(grid)
        for name in expected:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=f"{name} after step {step}")


def test_an_unknown_neighbour_search_is_refused_with_the_choices():
    import warpsim
    from warpsim.errors import InvalidValueError

    choices = "choose one of auto, grid, grid_tiles, brute_force"
    with pytest.raises(InvalidValueError, match=f"neighbour_search='cells'.*{choices}"):
        warpsim.make("tag_continuous", 1, backend="numpy", neighbour_search="cells")


def test_the_global_scratch_counts_in_the_memory_check(monkeypatch):
    """Memory for every array but the scratch is not enough: the environment is refused before allocating."""
    import warpsim
    from warpsim.errors import DoesNotFitError

    monkeypatch.setattr("warpsim.kernels.grid_layout.SHARED_MEMORY_BYTES", 0)
    params: dict[str, Any] = dict(num_taggers=2, num_runners=30, use_full_observation=False, num_other_agents_observed=3,
                  neighbour_search="grid")
    env = warpsim.make("tag_continuous", 64, backend="numpy", **params)
    scratch = sum(array.nbytes for _name, array in env.scratch.items())
    arrays = sum(array.nbytes for _name, array in env.views.items())
    assert scratch == 64 * 32 * 12 + 64 * (32 // 2) * 4  # x, y, ids per agent and one end per cell
    monkeypatch.setattr("warpsim.environment.available_bytes", lambda placement: int((arrays + scratch // 2) / 0.9))
    with pytest.raises(DoesNotFitError):
        warpsim.make("tag_continuous", 64, backend="numpy", **params)
