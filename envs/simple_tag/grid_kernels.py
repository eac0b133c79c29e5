"""simple_tag's searches, one block per environment: the adversaries touching each good agent and the
nearest agents each agent observes, on grids over MPE's box (device code).

The block bins its environment's adversaries, and all its agents where the nearest are observed, in
grids over [-1, 1]^2 (warpsim.kernels.neighbours; a body beyond the box is binned at its edge). Every
search finds what the reference finds by comparing every pair: the same float32 distances, the lower
index first at a tie. The touches are counted per good agent and summed in the block (integers, in any
order), for the adversaries' shared reward and the counter ``tags``. Only the forces still compare
every pair (kernels.push), since their sum runs in agent order; the few obstacles are taken in turn.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np
from numba import cuda, types

from warpsim.envs.simple_tag.kernels import boundary
from warpsim.envs.simple_tag.params import ADVERSARY_SIZE, CATCH_REWARD, GOOD_SIZE
from warpsim.kernels.mpe import BOX_LENGTH, BOX_ORIGIN, two_grids, write_offsets
from warpsim.kernels.nearest_keys import EMPTY_KEY, key_id, nearest_after, pop_nearest
from warpsim.kernels.neighbours import bin_agents, count_within, k_nearest
from warpsim.kernels.rounding import mul, sub

ZERO = np.float32(0)
INFINITY = np.float32(np.inf)
CATCH_REACH = np.float32(ADVERSARY_SIZE + GOOD_SIZE)
"""An adversary touches a good agent closer than the sum of their radii."""
LONGEST_LIST = 64
"""The most nearest a kernel lists in registers (tag_continuous's K cap); an observation of more nearest
compares every pair, one nearest after another (``nearest_after``)."""


class GridKernels(NamedTuple):
    """The two kernels of one configuration, launched with one block per environment."""

    reward_and_observe: Any
    observe_reset: Any


@functools.cache
def grid_kernels(agent_list: int, grids_in_shared: bool) -> GridKernels:
    """The kernels for an observation that lists the ``agent_list`` nearest other agents (0: every one, in
    index order; at most the others there are), with the grids in dynamic shared memory or
    (``grids_in_shared`` False) in the global scratch adversary_grid_* and agent_grid_*. The list is sized
    when a kernel compiles, and lives in registers."""
    agents_on_grid = 0 < agent_list <= LONGEST_LIST
    agent_keys = max(agent_list, 1)
    place_grids = two_grids(grids_in_shared)

    @cuda.jit(device=True)
    def bin_bodies(e, num_adversaries, adversary_grid_agents_per_cell, adversary_grid_cells_capacity,
                   agent_grid_agents_per_cell, agent_grid_cells_capacity, pos_x, pos_y, adversary_grid_x,
                   adversary_grid_y, adversary_grid_ids, adversary_grid_cells, agent_grid_x, agent_grid_y,
                   agent_grid_ids, agent_grid_cells):
        """Environment e's adversaries binned, and all its agents where the nearest are observed (every thread
        of the block calls it). Returns the two grids, (side, xs, ys, cell_end, ids) each (side 0: not binned)."""
        n = pos_x.shape[1]
        partial = cuda.shared.array(0, types.int32)[0:cuda.blockDim.x]
        adversaries, agents = place_grids(
            e, num_adversaries, adversary_grid_cells_capacity, n, agent_grid_cells_capacity,
            (adversary_grid_x, adversary_grid_y, adversary_grid_ids, adversary_grid_cells),
            (agent_grid_x, agent_grid_y, agent_grid_ids, agent_grid_cells))
        xs, ys, cell_end, ids = adversaries
        _count, adversary_side = bin_agents(e, 0, num_adversaries, None, pos_x, pos_y, BOX_LENGTH,
                                            adversary_grid_agents_per_cell, partial, xs, ys, cell_end, ids,
                                            BOX_ORIGIN)
        agent_side = 0
        if agents_on_grid:
            xs, ys, cell_end, ids = agents
            _count, agent_side = bin_agents(e, 0, n, None, pos_x, pos_y, BOX_LENGTH, agent_grid_agents_per_cell,
                                            partial, xs, ys, cell_end, ids, BOX_ORIGIN)
        return ((adversary_side, adversaries[0], adversaries[1], adversaries[2], adversaries[3]),
                (agent_side, agents[0], agents[1], agents[2], agents[3]))

    @cuda.jit(device=True)
    def observe(e, i, num_adversaries, num_obstacles, obstacle_slots, agent_slots, nearest_obstacles, agent_grid,
                pos_x, pos_y, vel_x, vel_y, obstacle_x, obstacle_y, observations):
        """Agent i's observation, MPE2's order: own velocity and position, the obstacles' offsets, the other
        agents' offsets, then the good ones' velocities (nearest first, zeros past those found and for
        adversaries, when partial)."""
        n = pos_x.shape[1]
        x, y = pos_x[e, i], pos_y[e, i]
        observations[e, i, 0] = vel_x[e, i]
        observations[e, i, 1] = vel_y[e, i]
        observations[e, i, 2] = x
        observations[e, i, 3] = y
        at = write_offsets(observations, e, i, 4, obstacle_slots, nearest_obstacles, x, y,
                           obstacle_x[e, :num_obstacles], obstacle_y[e, :num_obstacles], -1)
        if agent_list > 0:
            velocities = at + 2 * agent_slots
            keys = cuda.local.array(agent_keys, np.uint64)
            if agents_on_grid:
                side, xs, ys, cell_end, ids = agent_grid
                k_nearest(x, y, i, INFINITY, side, BOX_LENGTH, xs, ys, cell_end, ids, keys, BOX_ORIGIN)
            floor = np.uint64(0)
            for _ in range(agent_slots):
                if agents_on_grid:
                    key = pop_nearest(keys)
                else:
                    key = nearest_after(floor, x, y, pos_x[e], pos_y[e], i)
                    if key != EMPTY_KEY:
                        floor = key + np.uint64(1)
                write_agent_slot(observations, e, i, at, velocities, key, num_adversaries, x, y, pos_x, pos_y,
                                 vel_x, vel_y)
                at += 2
                velocities += 2
            at = velocities
        else:
            for j in range(n):
                if j != i:
                    observations[e, i, at] = sub(pos_x[e, j], x)
                    observations[e, i, at + 1] = sub(pos_y[e, j], y)
                    at += 2
            for j in range(num_adversaries, n):
                if j != i:
                    observations[e, i, at] = vel_x[e, j]
                    observations[e, i, at + 1] = vel_y[e, j]
                    at += 2
        while at < observations.shape[2]:
            observations[e, i, at] = ZERO
            at += 1

    @cuda.jit
    def reward_and_observe(num_adversaries, num_obstacles, obstacle_slots, agent_slots, nearest_obstacles,
                           adversary_grid_agents_per_cell, adversary_grid_cells_capacity, agent_grid_agents_per_cell,
                           agent_grid_cells_capacity, pos_x, pos_y, vel_x, vel_y, obstacle_x, obstacle_y,
                           adversary_grid_x, adversary_grid_y, adversary_grid_ids, adversary_grid_cells, agent_grid_x,
                           agent_grid_y, agent_grid_ids, agent_grid_cells, tags, rewards, observations):
        """Each agent's reward and observation; block e takes environment e. An adversary earns 10 for every
        touch of a good agent by any adversary; a good agent pays 10 for each adversary touching it, and its
        boundary penalty. The touches add to the environment's ``tags``.

        num_adversaries, num_obstacles, obstacle_slots, agent_slots int32; nearest_obstacles bool;
        adversary_grid_agents_per_cell, adversary_grid_cells_capacity, agent_grid_agents_per_cell,
        agent_grid_cells_capacity int32; pos_x, pos_y, vel_x, vel_y float32[E, N]; obstacle_x, obstacle_y
        float32[E, L]; adversary_grid_x, adversary_grid_y float32[E, A], adversary_grid_ids int32[E, A],
        adversary_grid_cells int32[E, C], agent_grid_x, agent_grid_y float32[E, N], agent_grid_ids int32[E, N],
        agent_grid_cells int32[E, C] (global scratch; 1 x 1 when the grids are in shared memory, or the agents
        not binned); tags int32[E]; rewards float32[E, N]; observations float32[E, N, D] (written).
        """
        e = cuda.blockIdx.x
        if e >= pos_x.shape[0]:
            return
        thread = cuda.threadIdx.x
        threads = cuda.blockDim.x
        n = pos_x.shape[1]
        adversary_grid, agent_grid = bin_bodies(
            e, num_adversaries, adversary_grid_agents_per_cell, adversary_grid_cells_capacity,
            agent_grid_agents_per_cell, agent_grid_cells_capacity, pos_x, pos_y, adversary_grid_x, adversary_grid_y,
            adversary_grid_ids, adversary_grid_cells, agent_grid_x, agent_grid_y, agent_grid_ids, agent_grid_cells)
        touches_of_block = cuda.shared.array(0, types.int32)  # its first word: the binning's sums are done
        if thread == 0:
            touches_of_block[0] = 0
        cuda.syncthreads()
        side, xs, ys, cell_end, ids = adversary_grid
        i = num_adversaries + thread
        while i < n:
            caught = count_within(pos_x[e, i], pos_y[e, i], -1, CATCH_REACH, side, BOX_LENGTH, xs, ys, cell_end,
                                  ids, BOX_ORIGIN)
            if caught:
                cuda.atomic.add(touches_of_block, 0, caught)
            penalty = -mul(CATCH_REWARD, np.float32(caught))
            rewards[e, i] = sub(sub(penalty, boundary(abs(pos_x[e, i]))), boundary(abs(pos_y[e, i])))
            i += threads
        cuda.syncthreads()
        touches = touches_of_block[0]
        if thread == 0:
            tags[e] += touches
        i = thread
        while i < n:
            if i < num_adversaries:
                rewards[e, i] = mul(CATCH_REWARD, np.float32(touches))
            observe(e, i, num_adversaries, num_obstacles, obstacle_slots, agent_slots, nearest_obstacles, agent_grid,
                    pos_x, pos_y, vel_x, vel_y, obstacle_x, obstacle_y, observations)
            i += threads

    @cuda.jit
    def observe_reset(mask, num_adversaries, num_obstacles, obstacle_slots, agent_slots, nearest_obstacles,
                      adversary_grid_agents_per_cell, adversary_grid_cells_capacity, agent_grid_agents_per_cell,
                      agent_grid_cells_capacity, pos_x, pos_y, vel_x, vel_y, obstacle_x, obstacle_y, adversary_grid_x,
                      adversary_grid_y, adversary_grid_ids, adversary_grid_cells, agent_grid_x, agent_grid_y,
                      agent_grid_ids, agent_grid_cells, observations):
        """The first observations where ``mask`` is set (after the resets); block e takes environment e.

        mask bool[E]; num_adversaries, num_obstacles, obstacle_slots, agent_slots int32; nearest_obstacles bool;
        adversary_grid_agents_per_cell, adversary_grid_cells_capacity, agent_grid_agents_per_cell,
        agent_grid_cells_capacity int32; pos_x, pos_y, vel_x, vel_y float32[E, N]; obstacle_x, obstacle_y
        float32[E, L]; adversary_grid_x, adversary_grid_y float32[E, A], adversary_grid_ids int32[E, A],
        adversary_grid_cells int32[E, C], agent_grid_x, agent_grid_y float32[E, N], agent_grid_ids int32[E, N],
        agent_grid_cells int32[E, C] (as reward_and_observe); observations float32[E, N, D] (written).
        """
        e = cuda.blockIdx.x
        if e >= pos_x.shape[0] or not mask[e]:
            return
        _adversary_grid, agent_grid = bin_bodies(
            e, num_adversaries, adversary_grid_agents_per_cell, adversary_grid_cells_capacity,
            agent_grid_agents_per_cell, agent_grid_cells_capacity, pos_x, pos_y, adversary_grid_x, adversary_grid_y,
            adversary_grid_ids, adversary_grid_cells, agent_grid_x, agent_grid_y, agent_grid_ids, agent_grid_cells)
        i = cuda.threadIdx.x
        while i < pos_x.shape[1]:
            observe(e, i, num_adversaries, num_obstacles, obstacle_slots, agent_slots, nearest_obstacles, agent_grid,
                    pos_x, pos_y, vel_x, vel_y, obstacle_x, obstacle_y, observations)
            i += cuda.blockDim.x

    return GridKernels(reward_and_observe, observe_reset)


@cuda.jit(device=True)
def write_agent_slot(observations, e, i, at, velocities, key, num_adversaries, x, y, pos_x, pos_y, vel_x, vel_y):
    """The offset of the agent of ``key`` from (x, y) at ``at`` and, for a good one, its velocity at
    ``velocities``; zeros for EMPTY_KEY (and for an adversary's velocity)."""
    dx, dy, vx, vy = ZERO, ZERO, ZERO, ZERO
    if key != EMPTY_KEY:
        j = key_id(key)
        dx, dy = sub(pos_x[e, j], x), sub(pos_y[e, j], y)
        if j >= num_adversaries:
            vx, vy = vel_x[e, j], vel_y[e, j]
    observations[e, i, at] = dx
    observations[e, i, at + 1] = dy
    observations[e, i, velocities] = vx
    observations[e, i, velocities + 1] = vy
