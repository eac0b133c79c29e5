"""The grid search of warpsim.kernels.neighbours against a NumPy brute force, on random and adversarial points.

A test kernel bins each environment's members and asks the K nearest of every member
(and of fixed outside points), in shared memory or in global scratch, with the ring search
of each query or with the tile search of each group of threads (a wider tile where the group's
cannot decide). The brute force
computes float32 squared distances the way the NumPy reference does and sorts by
(distance, id). Layouts are chosen to break a careless stopping rule: exact ties at
the boundary of the searched square, points on cell borders and on the walls, one-cell
pile-ups, clusters, few members, and a distance cutoff.
"""

import functools

import numpy as np
import pytest
from numba import cuda, types

from warpsim.device import SIMULATOR_THREADS_PER_BLOCK, THREADS_PER_BLOCK, simulator_enabled
from warpsim.kernels.grid_layout import GridLayout
from warpsim.kernels.nearest_keys import count_keys, key_id
from warpsim.kernels.neighbours import (
    NO_CELL,
    bin_agents,
    count_within,
    group_tile,
    k_nearest,
    k_nearest_in_tile,
    query_cell,
    shared_grid,
)


@cuda.jit(device=True)
def answer_queries(e, keys, max_d2, origin, length, agents_per_cell, member, loc_x, loc_y, query_x, query_y,
                   partial, xs, ys, cell_end, ids, nearest_out, found_out):
    n = loc_x.shape[1]
    count, side = bin_agents(e, 0, n, member, loc_x, loc_y, length, agents_per_cell, partial, xs, ys, cell_end, ids,
                             origin)
    for q in range(cuda.threadIdx.x, query_x.shape[1], cuda.blockDim.x):
        skip = q if q < n else -1  # queries 0..N-1 are the agents themselves, the rest outside points
        k_nearest(query_x[e, q], query_y[e, q], skip, max_d2, side, length, xs, ys, cell_end, ids, keys, origin)
        found = count_keys(keys)
        found_out[e, q] = found
        for slot in range(found):
            nearest_out[e, q, slot] = key_id(keys[slot])


@cuda.jit(device=True)
def answer_in_tiles(e, keys, origin, length, agents_per_cell, member, loc_x, loc_y, query_x, query_y,
                    partial, xs, ys, cell_end, ids, nearest_out, found_out, decided_out):
    """The members in the binned order (as the observations take them), then the outside points,
    one round of a query per thread; decided_out int32[E, Q]: 1 where the tile alone decided."""
    n = loc_x.shape[1]
    count, side = bin_agents(e, 0, n, member, loc_x, loc_y, length, agents_per_cell, partial, xs, ys, cell_end, ids,
                             origin)
    queries = count + query_x.shape[1] - n
    first = 0
    while first < queries:
        place = first + cuda.threadIdx.x
        q = -1
        if place < count:
            q = np.int32(ids[place])
        elif place < queries:
            q = n + place - count
        partial[cuda.threadIdx.x] = NO_CELL if q < 0 else query_cell(query_x[e, q], query_y[e, q], side, length, origin)
        cuda.syncthreads()
        if q >= 0:
            skip = q if q < n else -1
            qx, qy = query_x[e, q], query_y[e, q]
            decided_out[e, q] = k_nearest_in_tile(qx, qy, skip, group_tile(partial, side), side, length, xs, ys,
                                                  cell_end, ids, keys, origin) == 1
            found = count_keys(keys)
            found_out[e, q] = found
            for slot in range(found):
                nearest_out[e, q, slot] = key_id(keys[slot])
        cuda.syncthreads()
        first += cuda.blockDim.x


@functools.cache
def nearest_kernel(k, tiles):
    """The test kernel for K = ``k`` (a K-nearest list is sized when the kernel compiles), with the
    tile search (``tiles``) or the ring search alone."""

    @cuda.jit(device=True)
    def answer(e, keys, max_d2, origin, length, agents_per_cell, member, loc_x, loc_y, query_x, query_y,
               partial, xs, ys, cell_end, ids, nearest_out, found_out, decided_out):
        if tiles:
            answer_in_tiles(e, keys, origin, length, agents_per_cell, member, loc_x, loc_y, query_x, query_y,
                            partial, xs, ys, cell_end, ids, nearest_out, found_out, decided_out)
        else:
            answer_queries(e, keys, max_d2, origin, length, agents_per_cell, member, loc_x, loc_y, query_x,
                           query_y, partial, xs, ys, cell_end, ids, nearest_out, found_out)

    @cuda.jit
    def nearest(max_d2, origin, length, agents_per_cell, cells_capacity, in_shared, member, loc_x, loc_y,
                query_x, query_y, grid_x, grid_y, grid_ids, grid_cells, nearest_out, found_out, decided_out):
        """One block per environment: member int32[E, N]; loc_x, loc_y float32[E, N]; query_x, query_y
        float32[E, Q]; grid_* the global scratch; nearest_out int32[E, Q, K]; found_out int32[E, Q];
        decided_out int32[E, Q]."""
        e = cuda.blockIdx.x
        words = cuda.shared.array(0, types.int32)
        partial = words[0:cuda.blockDim.x]
        keys = cuda.local.array(k, np.uint64)
        if in_shared:
            xs, ys, cell_end, ids = shared_grid(words, cuda.shared.array(0, types.float32),
                                                cuda.shared.array(0, types.int16), loc_x.shape[1], cells_capacity,
                                                cuda.blockDim.x)
            answer(e, keys, max_d2, origin, length, agents_per_cell, member, loc_x, loc_y, query_x, query_y,
                   partial, xs, ys, cell_end, ids, nearest_out, found_out, decided_out)
        else:
            answer(e, keys, max_d2, origin, length, agents_per_cell, member, loc_x, loc_y, query_x, query_y,
                   partial, grid_x[e], grid_y[e], grid_cells[e], grid_ids[e], nearest_out, found_out, decided_out)

    return nearest


def grid_nearest(x, y, member, k, length, max_d2=np.inf, agents_per_cell=1, in_shared=True,
                 extra_x=None, extra_y=None, tiles=False, origin=0.0):
    """(ids, found) of the grid search for every agent, then every extra point; with ``tiles``, the tile
    search (no distance cutoff) for the members and the extra points, and also decided: 1 where the
    tile alone decided, 0 where the ring search finished, -1 for the agents out of the game."""
    num_envs, n = x.shape
    threads = SIMULATOR_THREADS_PER_BLOCK if simulator_enabled() else THREADS_PER_BLOCK
    layout = GridLayout(n, agents_per_cell, threads)
    query_x = x if extra_x is None else np.concatenate([x, extra_x], axis=1)
    query_y = y if extra_y is None else np.concatenate([y, extra_y], axis=1)
    cells = layout.cells_capacity
    scratch_rows = num_envs if not in_shared else 1
    nearest_out = np.full((num_envs, query_x.shape[1], k), -1, np.int32)
    found_out = np.zeros((num_envs, query_x.shape[1]), np.int32)
    decided_out = np.full((num_envs, query_x.shape[1]), -1, np.int32)
    arrays = [cuda.to_device(np.ascontiguousarray(a)) for a in (
        member.astype(np.int32), x, y, query_x, query_y,
        np.zeros((scratch_rows, n), np.float32), np.zeros((scratch_rows, n), np.float32),
        np.zeros((scratch_rows, n), np.int32), np.zeros((scratch_rows, cells), np.int32), nearest_out, found_out,
        decided_out)]
    shared_bytes = layout.shared_bytes if in_shared else 4 * threads
    nearest_kernel(k, tiles)[num_envs, threads, 0, shared_bytes](
        np.float32(max_d2), np.float32(origin), np.float32(length), np.int32(agents_per_cell), np.int32(cells),
        in_shared, *arrays)
    ids, found, decided = (a.copy_to_host() for a in arrays[-3:])
    return (ids, found, decided) if tiles else (ids, found)


def brute_nearest(x, y, member, k, max_d2=np.inf, extra_x=None, extra_y=None):
    """The same answer by brute force: float32 dx*dx + dy*dy, sorted by (distance, id)."""
    num_envs, n = x.shape
    query_x = x if extra_x is None else np.concatenate([x, extra_x], axis=1)
    query_y = y if extra_y is None else np.concatenate([y, extra_y], axis=1)
    ids = np.full((num_envs, query_x.shape[1], k), -1, np.int32)
    found = np.zeros((num_envs, query_x.shape[1]), np.int32)
    for e in range(num_envs):
        for q in range(query_x.shape[1]):
            dx = x[e] - query_x[e, q]
            dy = y[e] - query_y[e, q]
            d2 = dx * dx + dy * dy
            keep = (member[e] == 1) & (d2 < np.float32(max_d2)) & (np.arange(n) != q)
            order = sorted(np.flatnonzero(keep), key=lambda j: (d2[j], j))[:k]
            ids[e, q, :len(order)] = order
            found[e, q] = len(order)
    return ids, found


def layouts(rng, num_envs, n, length):
    """Named adversarial point sets, float32[E, N] each."""
    f32 = np.float32
    lattice = rng.integers(0, 5, (2, num_envs, n)).astype(f32) * f32(length / 4)  # borders, walls, ties
    cluster_centre = rng.uniform(0, length, (2, num_envs, 1))
    clustered = np.where(rng.random((2, num_envs, n)) < 0.7,
                         cluster_centre + rng.normal(0, length / 100, (2, num_envs, n)),
                         rng.uniform(0, length, (2, num_envs, n)))
    return {
        "uniform": rng.uniform(0, length, (2, num_envs, n)).astype(f32),
        "lattice": lattice,
        "clustered": np.clip(clustered, 0, length).astype(f32),
        "one point": np.full((2, num_envs, n), f32(length / 3)),
        "walls": np.stack([rng.choice([f32(0), f32(length)], (num_envs, n)),
                           rng.uniform(0, length, (num_envs, n)).astype(f32)]),
        "two piles": np.where(rng.random((1, num_envs, n)) < 0.5, f32(0.1 * length), f32(0.9 * length)),
    }


@pytest.mark.parametrize("layout", ["uniform", "lattice", "clustered", "one point", "walls", "two piles"])
@pytest.mark.parametrize("k, out_fraction", [(1, 0.0), (3, 0.3), (10, 0.5), (25, 0.0)])
def test_grid_search_matches_brute_force(layout, k, out_fraction):
    num_envs, n, length = 3, 24, 4.0
    rng = np.random.default_rng([k, int(out_fraction * 10), len(layout)])
    x, y = np.broadcast_to(layouts(rng, num_envs, n, length)[layout], (2, num_envs, n)).astype(np.float32)
    member = (rng.random((num_envs, n)) >= out_fraction).astype(np.int32)
    extra_x = rng.integers(0, 9, (num_envs, 4)).astype(np.float32) * np.float32(length / 8)
    extra_y = rng.integers(0, 9, (num_envs, 4)).astype(np.float32) * np.float32(length / 8)
    expected = brute_nearest(x, y, member, k, extra_x=extra_x, extra_y=extra_y)
    got = grid_nearest(x, y, member, k, length, extra_x=extra_x, extra_y=extra_y)
    for name, want, have in zip(("ids", "found"), expected, got):
        np.testing.assert_array_equal(have, want, err_msg=f"{name} of layout {layout!r}, K={k}")


def members_and_extras(found, member):
    """bool[E, Q]: the rows the tile search answers (members and the extra points)."""
    return np.concatenate([member == 1, np.ones((member.shape[0], found.shape[1] - member.shape[1]), bool)], axis=1)


@pytest.mark.parametrize("layout", ["uniform", "lattice", "clustered", "one point", "walls", "two piles"])
@pytest.mark.parametrize("k, out_fraction", [(3, 0.3), (10, 0.5), (25, 0.0)])
def test_tile_search_matches_brute_force(layout, k, out_fraction):
    """Enough agents for tiles smaller than the grid (9 x 9 cells of one agent)."""
    num_envs, n, length = 2, 81, 9.0
    rng = np.random.default_rng([k, int(out_fraction * 10), len(layout), 1])
    x, y = np.broadcast_to(layouts(rng, num_envs, n, length)[layout], (2, num_envs, n)).astype(np.float32)
    member = (rng.random((num_envs, n)) >= out_fraction).astype(np.int32)
    extra_x = rng.integers(0, 9, (num_envs, 4)).astype(np.float32) * np.float32(length / 8)
    extra_y = rng.integers(0, 9, (num_envs, 4)).astype(np.float32) * np.float32(length / 8)
    expected_ids, expected_found = brute_nearest(x, y, member, k, extra_x=extra_x, extra_y=extra_y)
    ids, found, decided = grid_nearest(x, y, member, k, length, extra_x=extra_x, extra_y=extra_y, tiles=True)
    asked = members_and_extras(found, member)
    assert (decided[asked] >= 0).all() and (decided[~asked] == -1).all()
    np.testing.assert_array_equal(found[asked], expected_found[asked], err_msg=f"layout {layout!r}, K={k}")
    np.testing.assert_array_equal(ids[asked], expected_ids[asked], err_msg=f"layout {layout!r}, K={k}")


def test_the_tile_decides_most_queries_and_the_ring_search_finishes_the_rest():
    """Uniform agents, one a cell, K = 10, binned order: both ways of ending a search are taken, the
    tile's most often, and both agree with brute force."""
    num_envs, n, length = 1, 300, 10.0
    rng = np.random.default_rng(11)
    x, y = rng.uniform(0, length, (2, num_envs, n)).astype(np.float32)
    member = np.ones((num_envs, n), np.int32)
    ids, found, decided = grid_nearest(x, y, member, 10, length, agents_per_cell=1, tiles=True)
    assert 0.5 < decided.mean() < 1, decided.mean()
    expected_ids, expected_found = brute_nearest(x, y, member, 10)
    np.testing.assert_array_equal(found, expected_found)
    np.testing.assert_array_equal(ids, expected_ids)


@pytest.mark.parametrize("in_shared", [True, False], ids=["shared", "global"])
def test_grid_search_in_shared_and_global_memory_agree_with_brute_force(in_shared):
    num_envs, n, length = 2, 40, 10.0
    rng = np.random.default_rng(7)
    x = rng.integers(0, 11, (num_envs, n)).astype(np.float32)
    y = rng.integers(0, 11, (num_envs, n)).astype(np.float32)
    member = (rng.random((num_envs, n)) >= 0.2).astype(np.int32)
    expected = brute_nearest(x, y, member, 6)
    got = grid_nearest(x, y, member, 6, length, agents_per_cell=1, in_shared=in_shared)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])


def test_distance_cutoff_is_strict_and_ties_at_the_cutoff_are_left_out():
    """Query at the centre; members at distance exactly 1 (the cutoff), 0.5 and 2."""
    x = np.array([[2.0, 3.0, 2.5, 4.0, 1.0, 2.0]], np.float32)
    y = np.array([[2.0, 2.0, 2.0, 2.0, 2.0, 1.5]], np.float32)
    member = np.ones((1, 6), np.int32)
    ids, found = grid_nearest(x, y, member, 4, 4.0, max_d2=1.0)
    assert found[0, 0] == 2 and ids[0, 0, :2].tolist() == [2, 5]  # 1 and 4 sit at exactly 1: out
    expected = brute_nearest(x, y, member, 4, max_d2=1.0)
    np.testing.assert_array_equal(ids, expected[0])


def test_a_tie_at_the_edge_of_the_searched_square_goes_to_the_lower_id_beyond_it():
    """A 4 x 4 grid of cells of 4 (L = 16, 16 members). Agent 0 at (3, 2) queries K = 1: agent 8 at (6, 6)
    in ring 1 and agent 2 at (8, 2), the first column of ring 2, both at d2 = 25 exactly, which is also the
    distance to the searched square. Stopping on ``d2_k <= bound`` would answer 8; the rule must go on to 2."""
    x = np.full((1, 16), 15.5, np.float32)
    y = np.full((1, 16), 15.5, np.float32)
    x[0, [0, 2, 8]] = [3.0, 8.0, 6.0]
    y[0, [0, 2, 8]] = [2.0, 2.0, 6.0]
    member = np.ones((1, 16), np.int32)
    ids, found = grid_nearest(x, y, member, 1, 16.0, agents_per_cell=1)
    assert found[0, 0] == 1 and ids[0, 0, 0] == 2
    np.testing.assert_array_equal(ids, brute_nearest(x, y, member, 1)[0])


def test_the_words_each_thread_keeps_count_against_the_shared_memory_of_the_grid():
    """observe_partial_grid keeps K + 3 words per thread before the grid: a grid that fits
    alone can then need global scratch, and the launch asks for the words either way."""
    alone, after_words = GridLayout(4000, 3, 128), GridLayout(4000, 3, 128, words_per_thread=13)
    assert alone.in_shared and not after_words.in_shared
    assert after_words.shared_bytes == 13 * 4 * 128
    small = GridLayout(1000, 3, 128, words_per_thread=13)
    assert small.in_shared and small.shared_bytes == 13 * 4 * 128 + small.grid_bytes


@pytest.mark.gpu
@pytest.mark.parametrize("num_agents, in_shared", [(1000, True), (4096, True), (6000, False)])
@pytest.mark.parametrize("layout", ["uniform", "lattice", "clustered", "two piles"])
@pytest.mark.parametrize("k", [10, 64])
def test_grid_search_matches_the_reference_search_at_real_sizes(num_agents, in_shared, layout, k):
    """On the GPU, against the NumPy reference's own search (nearest_in_game); 6000 agents need global scratch."""
    if simulator_enabled():
        pytest.skip("needs a CUDA GPU")
    from warpsim.envs.tag_continuous.nearest import nearest_in_game

    num_envs, length = 2, 10.0
    rng = np.random.default_rng(num_agents + k)
    x, y = np.broadcast_to(layouts(rng, num_envs, num_agents, length)[layout], (2, num_envs, num_agents))
    x, y = np.ascontiguousarray(x, np.float32), np.ascontiguousarray(y, np.float32)
    member = (rng.random((num_envs, num_agents)) >= 0.2).astype(np.int32)
    assert GridLayout(num_agents, 3, THREADS_PER_BLOCK).in_shared == in_shared
    ids, found = grid_nearest(x, y, member, k, length, agents_per_cell=3, in_shared=in_shared)
    expected_ids, expected_found = nearest_in_game(x, y, member == 1, k)
    for e in range(num_envs):
        for i in np.flatnonzero(member[e]):
            count = int(expected_found[e, i].sum())
            assert found[e, i] == count, f"environment {e}, agent {i}"
            np.testing.assert_array_equal(ids[e, i, :count], expected_ids[e, i, :count], err_msg=f"env {e}, agent {i}")


def test_neighbours_are_ordered_by_squared_distance_not_by_its_rounded_root():
    """Agents 1 and 2 lie at different float32 squared distances from agent 0, whose float32 square roots
    are equal: WarpDrive, which orders by the root, sees a tie and puts agent 1 first; warpsim orders by
    the squared distance and puts the truly nearer agent 2 first (docs/tag_rules.md)."""
    x = np.array([[0.0, 0.5998001, 0.59980005, 3.5]], np.float32)
    y = np.array([[0.0, 0.8, 0.8, 3.5]], np.float32)
    d2 = x[0, 1:3] * x[0, 1:3] + y[0, 1:3] * y[0, 1:3]
    assert d2[1] < d2[0] and np.sqrt(d2[1]) == np.sqrt(d2[0]), "the case needs equal roots of unequal squares"
    member = np.ones((1, 4), np.int32)
    ids, found = grid_nearest(x, y, member, 2, 4.0)
    assert found[0, 0] == 2 and ids[0, 0].tolist() == [2, 1]
    np.testing.assert_array_equal(ids, brute_nearest(x, y, member, 2)[0])


def outside_the_box(rng, num_envs, n):
    """Points of the box [-1, 1]^2 (MPE's) and beyond it on every side, some far, some on its borders
    and on the borders of its cells, and a pile where many meet."""
    f32 = np.float32
    spread = rng.uniform(-4, 4, (2, num_envs, n))
    borders = rng.integers(-8, 9, (2, num_envs, n)) * f32(0.25)
    far = rng.choice([f32(-60), f32(75)], (2, num_envs, n))
    which = rng.integers(0, 4, (1, num_envs, n))
    return np.choose(which, [spread, borders, far, np.full_like(spread, f32(1.5))]).astype(f32)


@pytest.mark.parametrize("k", [1, 4, 9])
@pytest.mark.parametrize("tiles", [False, True], ids=["rings", "tiles"])
def test_points_outside_the_box_are_found_as_brute_force_finds_them(k, tiles):
    """The box [-1, 1]^2 and agents and queries on all sides of it, far and near: the search of a grid
    over the box is still exact (a point outside is binned in the cell nearest it)."""
    num_envs, n = 2, 48
    rng = np.random.default_rng(k + 10 * tiles)
    x, y = outside_the_box(rng, num_envs, n)
    member = (rng.random((num_envs, n)) >= 0.1).astype(np.int32)
    extra_x, extra_y = rng.uniform(-3, 3, (2, num_envs, 5)).astype(np.float32)
    expected_ids, expected_found = brute_nearest(x, y, member, k, extra_x=extra_x, extra_y=extra_y)
    got = grid_nearest(x, y, member, k, 2.0, agents_per_cell=1, extra_x=extra_x, extra_y=extra_y, tiles=tiles,
                       origin=-1.0)
    asked = members_and_extras(got[1], member) if tiles else np.ones_like(got[1], bool)
    np.testing.assert_array_equal(got[1][asked], expected_found[asked])
    np.testing.assert_array_equal(got[0][asked], expected_ids[asked])


@cuda.jit
def count_kernel(reach, origin, length, agents_per_cell, cells_capacity, loc_x, loc_y, grid_x, grid_y, grid_ids,
                 grid_cells, count_out):
    """One block per environment, every agent binned (member None), each counting the others within reach:
    loc_x, loc_y float32[E, N]; grid_* global scratch rows; count_out int32[E, N]."""
    e = cuda.blockIdx.x
    words = cuda.shared.array(0, types.int32)
    partial = words[0:cuda.blockDim.x]
    _count, side = bin_agents(e, 0, loc_x.shape[1], None, loc_x, loc_y, length, agents_per_cell, partial,
                              grid_x[e], grid_y[e], grid_cells[e], grid_ids[e], origin)
    for i in range(cuda.threadIdx.x, loc_x.shape[1], cuda.blockDim.x):
        count_out[e, i] = count_within(loc_x[e, i], loc_y[e, i], i, reach, side, length, grid_x[e], grid_y[e],
                                       grid_cells[e], grid_ids[e], origin)


@pytest.mark.parametrize("reach", [0.3, 0.25, 2.0])
def test_agents_within_a_distance_are_counted_as_brute_force_counts_them(reach):
    """Every other agent whose float32 distance is below the reach, inside the box and out, with distances
    of exactly the reach (points on a lattice of 0.25), and agents at NaN, which nobody counts."""
    num_envs, n = 2, 64
    rng = np.random.default_rng(int(reach * 100))
    x, y = outside_the_box(rng, num_envs, n)
    x[0, :3] = np.nan
    threads = SIMULATOR_THREADS_PER_BLOCK if simulator_enabled() else THREADS_PER_BLOCK
    cells = GridLayout(n, 2, threads).cells_capacity
    count_out = np.zeros((num_envs, n), np.int32)
    arrays = [cuda.to_device(a) for a in (x, y, np.zeros((num_envs, n), np.float32),
                                          np.zeros((num_envs, n), np.float32), np.zeros((num_envs, n), np.int32),
                                          np.zeros((num_envs, cells), np.int32), count_out)]
    count_kernel[num_envs, threads, 0, 4 * threads](np.float32(reach), np.float32(-1), np.float32(2), np.int32(2),
                                                     np.int32(cells), *arrays)
    dx, dy = x[:, :, None] - x[:, None, :], y[:, :, None] - y[:, None, :]
    within = (np.sqrt(dx * dx + dy * dy) < np.float32(reach)) & ~np.eye(n, dtype=bool)
    expected = within.sum(axis=2)
    assert expected[1].max() > 3 and expected[0, :3].tolist() == [0, 0, 0], "the layout must test something"
    np.testing.assert_array_equal(arrays[-1].copy_to_host(), expected)
