"""The MPE scenarios' grid searches (envs/simple_spread/grid_kernels.py, envs/simple_tag/grid_kernels.py)
against the NumPy references, which compare every pair, on states built to break a search: exactly
equal, state for state.

Each state is injected into both at rest, so that a first step with no moves leaves every agent where it
was put (MPE moves by the velocity before it changes): the coverage or the touches, the collisions and
the observations of exactly that layout are compared, then random steps follow. Layouts: bodies beyond
MPE's box [-1, 1]^2 on every side, far and near; a lattice (ties between distances, pairs at exactly
the contact distance, 0.3 for simple_spread, and near simple_tag's reach of 0.125, points on the cells'
borders); one pile, in a cell or a few; and two agents met at one point, whose NaN positions no search
finds.
"""

from typing import cast

import numpy as np
import pytest
from helpers import KERNEL_TARGETS, compared_arrays, require_target, write_state

import warpsim
from warpsim.envs.simple_spread.env import SimpleSpread
from warpsim.envs.simple_tag.env import SimpleTag

BODIES = {"simple_spread": ("pos_x", "pos_y", "landmark_x", "landmark_y"), "simple_tag": ("pos_x", "pos_y")}
"""The positions a layout sets: the agents', and simple_spread's landmarks (simple_tag's obstacles stay
where the reset drew them)."""
LATTICE = {"simple_spread": 0.15, "simple_tag": 0.125}
"""A lattice's spacing: half the contact distance, or the touch's reach."""
TAG = dict(num_adversaries=14, num_good=10, num_obstacles=2)


def layout_positions(scenario: str, layout: str, rng, num_envs: int, n: int) -> dict:
    f32 = np.float32
    shape = (len(BODIES[scenario]), num_envs, n)
    if layout == "beyond the box":
        near = rng.uniform(-2.5, 2.5, shape)
        far = rng.choice(np.array([-45, 50], f32), shape) + rng.uniform(0, 5, shape)  # spread: no two at one point
        positions = np.where(rng.random(shape) < 0.15, far, near)
    elif layout == "lattice":  # at least 17 x 17 points, distinct within a kind (two agents at one point push with NaN)
        side = max(17, int(np.ceil(np.sqrt(n))))
        coordinates = []
        for _kind in range(shape[0] // 2):
            points = np.array([rng.permutation(side * side)[:n] for _ in range(num_envs)])
            coordinates += [points % side - side // 2, points // side - side // 2]
        positions = np.array(coordinates) * f32(LATTICE[scenario])
    elif layout == "pile":
        positions = f32(0.35) + rng.normal(0, 0.02, shape)
    else:
        raise ValueError(layout)
    return dict(zip(BODIES[scenario], positions.astype(f32)))


def spread(num_envs: int, backend: str = "numpy", **params) -> SimpleSpread:
    return cast(SimpleSpread, warpsim.make("simple_spread", num_envs, backend=backend, **params))


def tag(num_envs: int, backend: str = "numpy", **params) -> SimpleTag:
    return cast(SimpleTag, warpsim.make("simple_tag", num_envs, backend=backend, **params))


def twins(scenario: str, num_envs: int, seed: int, **params):
    make = spread if scenario == "simple_spread" else tag
    return make(num_envs, seed=seed, **params), make(num_envs, "cuda", seed=seed, **params)


def assert_equal(reference, kernels, when: str) -> None:
    expected, got = compared_arrays(reference), compared_arrays(kernels)
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=f"{name} {when}")


def assert_layout_then_steps_agree(scenario: str, layout: str, num_envs: int, steps: int, seed: int,
                                   **params) -> None:
    reference, kernels = twins(scenario, num_envs, seed, **params)
    rng = np.random.default_rng(seed)
    state = layout_positions(scenario, layout, rng, num_envs, reference.num_agents)
    state.update(vel_x=np.zeros((num_envs, reference.num_agents), np.float32),
                 vel_y=np.zeros((num_envs, reference.num_agents), np.float32))
    for env in (reference, kernels):
        write_state(env, state)
    still = np.zeros(tuple(reference.actions.shape), reference.actions.numpy().dtype)
    reference.step(still, auto_reset=False)
    kernels.step(still, auto_reset=False)
    np.testing.assert_array_equal(compared_arrays(kernels)["pos_x"], state["pos_x"],
                                  err_msg="the layout must stand still")
    assert_equal(reference, kernels, f"on layout {layout!r}")
    for step in range(steps):
        actions = rng.integers(0, 5, tuple(reference.actions.shape)).astype(np.int32)
        reference.step(actions)
        kernels.step(actions)
        assert_equal(reference, kernels, f"after step {step} from layout {layout!r}")


@pytest.mark.parametrize("layout", ["beyond the box", "lattice", "pile"])
@pytest.mark.parametrize("neighbours", [dict(num_agent_neighbors=5, num_landmark_neighbors=3),
                                        dict(num_agent_neighbors=30), dict()], ids=["nearest", "more", "full"])
def test_simple_spreads_grids_find_what_every_pair_finds(layout, neighbours):
    """Nearest 5 agents and 3 landmarks (grids of several cells at N = 24); more nearest than there are
    others (zeros after them); every body in index order (the agents' grid still serves the coverage and
    the collisions)."""
    require_target("simulator")
    assert_layout_then_steps_agree("simple_spread", layout, 2, steps=2, seed=len(layout), N=24, max_cycles=2,
                                   **neighbours)


@pytest.mark.parametrize("layout", ["beyond the box", "lattice", "pile"])
@pytest.mark.parametrize("neighbours", [dict(num_agent_neighbors=5, num_landmark_neighbors=1),
                                        dict(num_agent_neighbors=30), dict()], ids=["nearest", "more", "full"])
def test_simple_tags_grids_find_what_every_pair_finds(layout, neighbours):
    """14 adversaries and 10 good agents: the touches of each good agent (the adversaries' grid), the
    nearest 5 agents, with the good ones' velocities, more nearest than there are others, and every agent
    in index order."""
    require_target("simulator")
    assert_layout_then_steps_agree("simple_tag", layout, 2, steps=2, seed=len(layout), max_cycles=2,
                                   **TAG, **neighbours)


def test_lists_longer_than_the_registers_hold_compare_every_pair(monkeypatch):
    """More nearest than LONGEST_LIST (4 here, to keep the simulator quick): the observation takes the
    nearest one after another, comparing every pair."""
    require_target("simulator")
    from warpsim.envs.simple_spread import grid_kernels as spread_kernels
    from warpsim.envs.simple_tag import grid_kernels as tag_kernels

    for module in (spread_kernels, tag_kernels):
        monkeypatch.setattr(module, "LONGEST_LIST", 4)
        module.grid_kernels.cache_clear()
    try:
        assert_layout_then_steps_agree("simple_spread", "lattice", 2, steps=1, seed=2, N=12, num_agent_neighbors=6,
                                       num_landmark_neighbors=5)
        assert_layout_then_steps_agree("simple_tag", "lattice", 2, steps=1, seed=2, num_agent_neighbors=6, **TAG)
    finally:
        for module in (spread_kernels, tag_kernels):
            module.grid_kernels.cache_clear()


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("scenario, params", [
    ("simple_spread", dict(N=6, num_landmark_neighbors=2)),
    ("simple_tag", dict(num_adversaries=3, num_good=3, num_obstacles=2, num_landmark_neighbors=2)),
])
def test_agents_met_at_one_point_are_found_by_no_search(scenario, params):
    """Agents 0 and 1 at exactly one point push each other with a NaN force (as in MPE2) and stand at NaN
    after the next step (checked mode would refuse it): nobody observes them among its 5 nearest (the last
    two slots stay empty), no simple_spread landmark counts them as its nearest, nobody touches them."""
    require_target("simulator")
    reference, kernels = twins(scenario, 1, 3, num_agent_neighbors=5, checked=False, **params)
    state = {name: np.linspace(-0.9, 0.9, 6, dtype=np.float32)[None] for name in BODIES[scenario]}
    state["pos_x"][0, 1], state["pos_y"][0, 1] = state["pos_x"][0, 0], state["pos_y"][0, 0]
    for env in (reference, kernels):
        write_state(env, state)
    still = np.zeros((1, 6, 1), np.int32)
    for _ in range(2):
        reference.step(still)
        kernels.step(still)
    assert np.isnan(kernels.state.pos_x[0, :2].numpy()).all() and np.isfinite(kernels.rewards.numpy()).all()
    observed = kernels.observations[0, 2].numpy()
    agents_from = 4 + 2 * 2  # own velocity and position, then the 2 nearest landmarks (obstacles)
    assert np.isfinite(observed).all() and (observed[agents_from + 2 * 3:agents_from + 2 * 5] == 0).all()
    assert_equal(reference, kernels, "with two agents at NaN")


def test_grids_in_global_scratch_find_what_every_pair_finds(monkeypatch):
    """With no shared memory to spare, both grids go to the environment's global scratch."""
    require_target("simulator")
    monkeypatch.setattr("warpsim.kernels.grid_layout.SHARED_MEMORY_BYTES", 0)
    _reference, kernels = twins("simple_spread", 1, 0, N=20, num_agent_neighbors=4, num_landmark_neighbors=4)
    assert not kernels._grids_in_shared and kernels.scratch.agent_grid_x.shape == (1, 20)
    assert kernels.scratch.landmark_grid_cells.shape == (1, 10)
    assert_layout_then_steps_agree("simple_spread", "beyond the box", 2, steps=2, seed=9, N=20,
                                   num_agent_neighbors=4, num_landmark_neighbors=4)
    _reference, tagging = twins("simple_tag", 1, 0, num_agent_neighbors=4, **TAG)
    assert not tagging._grids_in_shared and tagging.scratch.adversary_grid_x.shape == (1, 14)
    assert_layout_then_steps_agree("simple_tag", "lattice", 2, steps=2, seed=9, num_agent_neighbors=4, **TAG)


def test_the_grids_stay_in_shared_memory_to_a_thousand_agents_and_leave_the_landmarks_unbinned_when_all_are_seen():
    """Both grids fit in a block's 48 KiB up to N = 1000 with the 10 nearest observed; with every landmark
    observed in order their grid is one empty cell, and nothing is kept in global scratch."""
    env = spread(1, N=1000, num_agent_neighbors=10, num_landmark_neighbors=10)
    assert env._grids_in_shared and all(array.dims == (1, 1) for array in env.spec.scratch if "grid" in array.name)
    assert env._shared_bytes <= 48 * 1024
    full = spread(1, N=1000)
    assert full._landmark_grid.cells_capacity == 1 and full._shared_bytes < env._shared_bytes
    beyond = spread(1, N=4096, num_agent_neighbors=10, num_landmark_neighbors=10)
    assert not beyond._grids_in_shared and beyond.scratch.agent_grid_x.shape == (1, 4096)


@pytest.mark.parametrize("scenario", ["simple_spread", "simple_tag"])
@pytest.mark.parametrize("layout", ["beyond the box", "lattice", "pile"])
def test_the_layouts_of_the_gpu_test_place_every_agent_apart(scenario, layout):
    """The GPU test's layouts at N = 1000 and 4096, here where no GPU runs it: every body placed, the agents
    at distinct points (two at one point push each other with NaN, which the checked step refuses)."""
    for n in (1000, 4096):
        positions = layout_positions(scenario, layout, np.random.default_rng(n), 2, n)
        assert set(positions) == set(BODIES[scenario])
        assert all(value.shape == (2, n) and value.dtype == np.float32 for value in positions.values())
        points = np.stack([positions["pos_x"], positions["pos_y"]], axis=-1)
        assert all(len(np.unique(row, axis=0)) == n for row in points), f"{layout} at N = {n}"


@pytest.mark.gpu
@pytest.mark.parametrize("target", [t for t in KERNEL_TARGETS if t.id == "gpu"])
@pytest.mark.parametrize("n, neighbours", [(1000, 10), (4096, 10), (300, 64)])
@pytest.mark.parametrize("layout", ["beyond the box", "lattice", "pile"])
def test_the_grids_find_what_every_pair_finds_at_scale(target, n, neighbours, layout):
    """On the GPU at N = 1000 (grids in shared memory) and 4096 (global scratch), and 64 nearest; simple_tag
    with one adversary in four. At N = 4096 one step after the layout's: the NumPy reference's step takes
    about 13 s there (both scenarios), and three made each layout's test over two minutes of a GPU session."""
    require_target(target)
    steps = 1 if n > 1000 else 3
    assert_layout_then_steps_agree("simple_spread", layout, 2, steps=steps, seed=n, N=n,
                                   num_agent_neighbors=neighbours, num_landmark_neighbors=neighbours, max_cycles=3)
    assert_layout_then_steps_agree("simple_tag", layout, 2, steps=steps, seed=n, num_adversaries=n // 4,
                                   num_good=n - n // 4, num_agent_neighbors=neighbours, max_cycles=3)
