"""simple_spread's searches, one block per environment: each landmark's nearest agent, the agents each
agent touches and the nearest agents and landmarks it observes, on grids over MPE's box (device code).

The block bins its environment's agents, and the landmarks where an agent observes the nearest ones,
in grids over [-1, 1]^2 (warpsim.kernels.neighbours; a body beyond the box is binned at its edge).
Every search finds what the reference finds by comparing every pair: the same float32 distances, the
lower index first at a tie. Only the forces still compare every pair (kernels.push_agents), since
their sum runs in agent order. At N = 1000 with the 10 nearest observed, the searches read about 200
bodies per agent instead of 22,000 (benchmarks/mpe_search_work.py).
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np
from numba import cuda, types

from warpsim.envs.simple_spread.params import CONTACT_DISTANCE
from warpsim.kernels.mpe import BOX_LENGTH, BOX_ORIGIN, two_grids, write_listed_offsets, write_offsets
from warpsim.kernels.nearest_keys import EMPTY_KEY, key_id
from warpsim.kernels.neighbours import bin_agents, count_within, k_nearest
from warpsim.kernels.rounding import add, mul, squared_distance, sub

ZERO = np.float32(0)
INFINITY = np.float32(np.inf)
LONGEST_LIST = 64
"""The most nearest a kernel lists in registers (tag_continuous's K cap); an observation of more nearest
compares every pair, one nearest after another (warpsim.kernels.mpe.write_offsets)."""


class GridKernels(NamedTuple):
    """The two kernels of one configuration, launched with one block per environment."""

    reward_and_observe: Any
    observe_reset: Any


@functools.cache
def grid_kernels(agent_list: int, landmark_list: int, grids_in_shared: bool) -> GridKernels:
    """The kernels for an observation that lists the ``agent_list`` nearest other agents and the
    ``landmark_list`` nearest landmarks (0: every one, in index order; at most the others there are,
    so that a list never holds empty slots it need not), with the grids in dynamic shared memory or
    (``grids_in_shared`` False) in the global scratch agent_grid_* and landmark_grid_*. A list is sized
    when a kernel compiles, and lives in registers."""
    agents_on_grid = 0 < agent_list <= LONGEST_LIST
    landmarks_on_grid = 0 < landmark_list <= LONGEST_LIST
    agent_keys = max(agent_list, 1)
    landmark_keys = max(landmark_list, 1)
    place_grids = two_grids(grids_in_shared)

    @cuda.jit(device=True)
    def bin_bodies(e, agent_grid_agents_per_cell, agent_grid_cells_capacity, landmark_grid_agents_per_cell,
                   landmark_grid_cells_capacity, pos_x, pos_y, landmark_x, landmark_y, agent_grid_x, agent_grid_y,
                   agent_grid_ids, agent_grid_cells, landmark_grid_x, landmark_grid_y, landmark_grid_ids,
                   landmark_grid_cells):
        """Environment e's agents binned, and its landmarks where the nearest are observed (every thread of the
        block calls it). Returns the two grids, (side, xs, ys, cell_end, ids) each (side 0: not binned)."""
        n = pos_x.shape[1]
        partial = cuda.shared.array(0, types.int32)[0:cuda.blockDim.x]
        agents, landmarks = place_grids(e, n, agent_grid_cells_capacity, n, landmark_grid_cells_capacity,
                                        (agent_grid_x, agent_grid_y, agent_grid_ids, agent_grid_cells),
                                        (landmark_grid_x, landmark_grid_y, landmark_grid_ids, landmark_grid_cells))
        xs, ys, cell_end, ids = agents
        _count, agent_side = bin_agents(e, 0, n, None, pos_x, pos_y, BOX_LENGTH, agent_grid_agents_per_cell,
                                        partial, xs, ys, cell_end, ids, BOX_ORIGIN)
        landmark_side = 0
        if landmarks_on_grid:
            xs, ys, cell_end, ids = landmarks
            _count, landmark_side = bin_agents(e, 0, n, None, landmark_x, landmark_y, BOX_LENGTH,
                                               landmark_grid_agents_per_cell, partial, xs, ys, cell_end, ids,
                                               BOX_ORIGIN)
        return ((agent_side, agents[0], agents[1], agents[2], agents[3]),
                (landmark_side, landmarks[0], landmarks[1], landmarks[2], landmarks[3]))

    @cuda.jit(device=True)
    def observe(e, i, landmark_slots, agent_slots, agent_grid, landmark_grid, pos_x, pos_y, vel_x, vel_y, landmark_x,
                landmark_y, observations):
        """Agent i's observation, MPE2's order: own velocity and position, the landmarks' offsets, the other
        agents', then zeros (the utterances of silent agents)."""
        x, y = pos_x[e, i], pos_y[e, i]
        observations[e, i, 0] = vel_x[e, i]
        observations[e, i, 1] = vel_y[e, i]
        observations[e, i, 2] = x
        observations[e, i, 3] = y
        if landmarks_on_grid:
            side, xs, ys, cell_end, ids = landmark_grid
            keys = cuda.local.array(landmark_keys, np.uint64)
            k_nearest(x, y, -1, INFINITY, side, BOX_LENGTH, xs, ys, cell_end, ids, keys, BOX_ORIGIN)
            at = write_listed_offsets(observations, e, i, 4, landmark_slots, keys, x, y, landmark_x[e],
                                      landmark_y[e])
        else:
            at = write_offsets(observations, e, i, 4, landmark_slots, landmark_list > 0, x, y, landmark_x[e],
                               landmark_y[e], -1)
        if agents_on_grid:
            side, xs, ys, cell_end, ids = agent_grid
            keys = cuda.local.array(agent_keys, np.uint64)
            k_nearest(x, y, i, INFINITY, side, BOX_LENGTH, xs, ys, cell_end, ids, keys, BOX_ORIGIN)
            at = write_listed_offsets(observations, e, i, at, agent_slots, keys, x, y, pos_x[e], pos_y[e])
        else:
            at = write_offsets(observations, e, i, at, agent_slots, agent_list > 0, x, y, pos_x[e], pos_y[e], i)
        while at < observations.shape[2]:
            observations[e, i, at] = ZERO
            at += 1

    @cuda.jit
    def reward_and_observe(global_weight, local_weight, landmark_slots, agent_slots, agent_grid_agents_per_cell,
                           agent_grid_cells_capacity, landmark_grid_agents_per_cell, landmark_grid_cells_capacity,
                           pos_x, pos_y, vel_x, vel_y, landmark_x, landmark_y, nearest_distance, agent_grid_x,
                           agent_grid_y, agent_grid_ids, agent_grid_cells, landmark_grid_x, landmark_grid_y,
                           landmark_grid_ids, landmark_grid_cells, rewards, observations):
        """Each agent's reward, the shared coverage and its own collisions weighed, and its observation; block e
        takes environment e.

        global_weight, local_weight float32; landmark_slots, agent_slots int32 (the landmarks and other agents an
        observation holds); agent_grid_agents_per_cell, agent_grid_cells_capacity,
        landmark_grid_agents_per_cell, landmark_grid_cells_capacity int32; pos_x .. landmark_y float32[E, N];
        nearest_distance float32[E, N] (written: landmark i's distance to its nearest agent);
        agent_grid_x, agent_grid_y float32[E, N], agent_grid_ids int32[E, N], agent_grid_cells int32[E, C],
        landmark_grid_x, landmark_grid_y float32[E, N], landmark_grid_ids int32[E, N], landmark_grid_cells
        int32[E, C] (global scratch; 1 x 1 when the grids are in shared memory, or the landmarks not binned);
        rewards float32[E, N]; observations float32[E, N, D] (written).
        """
        e = cuda.blockIdx.x
        if e >= pos_x.shape[0]:
            return
        thread = cuda.threadIdx.x
        threads = cuda.blockDim.x
        n = pos_x.shape[1]
        agent_grid, landmark_grid = bin_bodies(
            e, agent_grid_agents_per_cell, agent_grid_cells_capacity, landmark_grid_agents_per_cell,
            landmark_grid_cells_capacity, pos_x, pos_y, landmark_x, landmark_y, agent_grid_x, agent_grid_y,
            agent_grid_ids, agent_grid_cells, landmark_grid_x, landmark_grid_y, landmark_grid_ids,
            landmark_grid_cells)
        side, xs, ys, cell_end, ids = agent_grid
        nearest = cuda.local.array(1, np.uint64)
        landmark = thread
        while landmark < n:
            lx, ly = landmark_x[e, landmark], landmark_y[e, landmark]
            k_nearest(lx, ly, -1, INFINITY, side, BOX_LENGTH, xs, ys, cell_end, ids, nearest, BOX_ORIGIN)
            distance = INFINITY
            if nearest[0] != EMPTY_KEY:
                j = key_id(nearest[0])
                distance = math.sqrt(squared_distance(sub(pos_x[e, j], lx), sub(pos_y[e, j], ly)))
            nearest_distance[e, landmark] = distance
            landmark += threads
        cuda.syncthreads()
        coverage_of_block = cuda.shared.array(0, types.float32)  # its first word: the binning's sums are done
        if thread == 0:
            coverage = ZERO
            for landmark in range(n):  # landmark 0 first, as the reference sums
                coverage = sub(coverage, nearest_distance[e, landmark])
            coverage_of_block[0] = coverage
        cuda.syncthreads()
        shared_reward = mul(coverage_of_block[0], global_weight)
        i = thread
        while i < n:
            touching = count_within(pos_x[e, i], pos_y[e, i], i, CONTACT_DISTANCE, side, BOX_LENGTH, xs, ys,
                                    cell_end, ids, BOX_ORIGIN)
            rewards[e, i] = add(shared_reward, mul(-np.float32(touching), local_weight))
            observe(e, i, landmark_slots, agent_slots, agent_grid, landmark_grid, pos_x, pos_y, vel_x, vel_y,
                    landmark_x, landmark_y, observations)
            i += threads

    @cuda.jit
    def observe_reset(mask, landmark_slots, agent_slots, agent_grid_agents_per_cell, agent_grid_cells_capacity,
                      landmark_grid_agents_per_cell, landmark_grid_cells_capacity, pos_x, pos_y, vel_x, vel_y,
                      landmark_x, landmark_y, agent_grid_x, agent_grid_y, agent_grid_ids, agent_grid_cells,
                      landmark_grid_x, landmark_grid_y, landmark_grid_ids, landmark_grid_cells, observations):
        """The first observations where ``mask`` is set (after reset_bodies); block e takes environment e.

        mask bool[E]; landmark_slots, agent_slots int32; agent_grid_agents_per_cell, agent_grid_cells_capacity,
        landmark_grid_agents_per_cell, landmark_grid_cells_capacity int32; pos_x .. landmark_y float32[E, N];
        agent_grid_x, agent_grid_y float32[E, N], agent_grid_ids int32[E, N], agent_grid_cells int32[E, C],
        landmark_grid_x, landmark_grid_y float32[E, N], landmark_grid_ids int32[E, N], landmark_grid_cells
        int32[E, C] (as reward_and_observe); observations float32[E, N, D] (written).
        """
        e = cuda.blockIdx.x
        if e >= pos_x.shape[0] or not mask[e]:
            return
        agent_grid, landmark_grid = bin_bodies(
            e, agent_grid_agents_per_cell, agent_grid_cells_capacity, landmark_grid_agents_per_cell,
            landmark_grid_cells_capacity, pos_x, pos_y, landmark_x, landmark_y, agent_grid_x, agent_grid_y,
            agent_grid_ids, agent_grid_cells, landmark_grid_x, landmark_grid_y, landmark_grid_ids,
            landmark_grid_cells)
        i = cuda.threadIdx.x
        while i < pos_x.shape[1]:
            observe(e, i, landmark_slots, agent_slots, agent_grid, landmark_grid, pos_x, pos_y, vel_x, vel_y,
                    landmark_x, landmark_y, observations)
            i += cuda.blockDim.x

    return GridKernels(reward_and_observe, observe_reset)
