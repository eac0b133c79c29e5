"""tag_continuous's neighbour searches on a uniform grid: one block per environment.

The block bins its environment's agents (warpsim.kernels.neighbours), then each thread
answers queries, taking them in the grid's order so that the threads of a warp search
nearby cells. Results equal those of the brute-force kernels (kernels.py) exactly: the
same K nearest with the lower id first on a tie, the same nearest tagger.
"""

import functools

import numpy as np
from numba import cuda, types

from warpsim.envs.tag_continuous.kernels import (
    apply_tag,
    write_observed_slot,
    write_own_state,
    write_partial_observation,
)
from warpsim.kernels.indexing import quotient
from warpsim.kernels.nearest_keys import EMPTY_KEY, clear_keys, count_keys, key_id
from warpsim.kernels.neighbours import bin_agents, k_nearest, shared_grid

INFINITY = np.float32(np.inf)


SHARED_WORDS_PER_QUERY = 3
"""Shared int32 words per thread of observe_partial_grid besides its K nearest: the partial
sum of the binning, and the observer and the number found of its query."""


def observation_words_per_thread(num_observed: int) -> int:
    """``GridLayout.words_per_thread`` of observe_partial_grid for K = ``num_observed``."""
    return num_observed + SHARED_WORDS_PER_QUERY


@functools.cache
def observe_partial_grid_kernel(num_observed: int, grid_in_shared: bool):
    """observe_partial_grid compiled for K = ``num_observed``, its K-nearest list in registers, and
    for the grid in dynamic shared memory or (``grid_in_shared`` False) in the global scratch
    grid_*: one variant per kernel, so that the other's registers are not held too."""

    @cuda.jit
    def observe_partial_grid(mask, observation_grid_agents_per_cell, observation_grid_cells_capacity,
                             observe_own_state, grid_length, episode_length,
                             position_scale, speed_scale, agent_type, t, loc_x, loc_y, speed, direction,
                             acceleration, still_in_game, grid_x, grid_y, grid_ids, grid_cells, observations):
        """Partial observations (K nearest agents in the game) where ``mask`` is set; block e handles
        environment e.

        mask bool[E]; observation_grid_agents_per_cell, observation_grid_cells_capacity int32;
        observe_own_state bool; grid_length float32; episode_length int32; position_scale,
        speed_scale float32; agent_type int32[N]; t int32[E]; loc_x .. acceleration float32[E, N];
        still_in_game int32[E, N]; grid_x, grid_y float32[E, N] and grid_ids int32[E, N],
        grid_cells int32[E, C] (global scratch; 1 x 1 when the grid is in shared memory);
        observations float32[E, N, 7 K + 1, + 5 with observe_own_state] (written).
        Dynamic shared memory: ``observation_words_per_thread(K)`` words per thread, then the grid.
        """
        e = cuda.blockIdx.x
        if e >= loc_x.shape[0] or not mask[e]:
            return
        threads = cuda.blockDim.x
        k = num_observed
        words = cuda.shared.array(0, types.int32)
        shared = (words[0:threads], words[threads:(k + 1) * threads], words[(k + 1) * threads:(k + 2) * threads],
                  words[(k + 2) * threads:(k + 3) * threads])
        keys = cuda.local.array(num_observed, np.uint64)
        if grid_in_shared:
            xs, ys, cell_end, ids = shared_grid(words, cuda.shared.array(0, types.float32),
                                                cuda.shared.array(0, types.int16), loc_x.shape[1],
                                                observation_grid_cells_capacity,
                                                (k + SHARED_WORDS_PER_QUERY) * threads)
            observe_environment(e, keys, observation_grid_agents_per_cell, observe_own_state, grid_length,
                                episode_length, position_scale, speed_scale, agent_type, t, loc_x, loc_y, speed,
                                direction, acceleration, still_in_game, shared, xs, ys, cell_end, ids, observations)
        else:
            observe_environment(e, keys, observation_grid_agents_per_cell, observe_own_state, grid_length,
                                episode_length, position_scale, speed_scale, agent_type, t, loc_x, loc_y, speed,
                                direction, acceleration, still_in_game, shared, grid_x[e], grid_y[e],
                                grid_cells[e], grid_ids[e], observations)

    return observe_partial_grid


@cuda.jit(device=True)
def observe_environment(e, keys, agents_per_cell, own_state, grid_length, episode_length, position_scale,
                        speed_scale, agent_type, t, loc_x, loc_y, speed, direction, acceleration, still_in_game,
                        shared, xs, ys, cell_end, ids, observations):
    """The block's queries go in rounds of one per thread. Each round the threads share their
    results (``shared``: partial sums, then the K nearest slot by slot, the observers and
    the numbers found, one word per thread each), and then write the round's observations
    together, neighbouring threads on neighbouring slots, so that the stores of a warp
    fall in a few rows instead of 32. keys uint64[K]: the thread's K-nearest list."""
    partial, listed, observer_of, found_of = shared
    thread = cuda.threadIdx.x
    threads = cuda.blockDim.x
    n = loc_x.shape[1]
    k = keys.shape[0]
    count, side = bin_agents(e, 0, n, still_in_game, loc_x, loc_y, grid_length, agents_per_cell,
                             partial, xs, ys, cell_end, ids)
    time = np.float32(t[e]) / np.float32(episode_length)
    first = 0
    while first < count:
        place = first + thread
        if place < count:
            i = np.int32(ids[place])
            k_nearest(xs[place], ys[place], i, INFINITY, side, grid_length, xs, ys, cell_end, ids, keys)
            found = count_keys(keys)
            for slot in range(k):  # every slot, so that the list stays in registers
                if slot < found:
                    listed[slot * threads + thread] = key_id(keys[slot])
            observer_of[thread] = i
            found_of[thread] = found
        cuda.syncthreads()
        queries = min(threads, count - first)
        pair = thread
        while pair < queries * k:
            query = quotient(pair, k)
            slot = pair - query * k
            j = -1
            if slot < found_of[query]:
                j = listed[slot * threads + query]
            write_observed_slot(observations, e, observer_of[query], k, slot, j, position_scale, speed_scale,
                                agent_type, loc_x, loc_y, speed, direction, acceleration)
            pair += threads
        query = thread
        while query < queries:
            observations[e, observer_of[query], 7 * k] = time
            if own_state:
                write_own_state(observations, e, observer_of[query], 7 * k + 1, loc_x, loc_y, speed, direction,
                                grid_length, speed_scale, np.float32(1))
            query += threads
        cuda.syncthreads()
        first += threads
    clear_keys(keys)
    i = thread
    while i < n:
        if still_in_game[e, i] != 1:
            write_partial_observation(observations, e, i, keys, False, own_state, grid_length,
                                      episode_length, position_scale, speed_scale, agent_type, t, loc_x, loc_y,
                                      speed, direction, acceleration)
        i += threads


@cuda.jit
def tag_runners_grid(num_taggers, tagger_grid_agents_per_cell, tagger_grid_cells_capacity, grid_length,
                     tag_radius_squared, tag_reward_for_tagger, tag_penalty_for_runner,
                     runner_exits_game_after_tagged, loc_x, loc_y, still_in_game, num_runners_left, tags, rewards):
    """docs/tag_rules.md section 1 step 5 as tag_runners does it, the taggers binned in shared memory;
    block e handles environment e.

    num_taggers, tagger_grid_agents_per_cell, tagger_grid_cells_capacity int32; grid_length,
    tag_radius_squared, tag_reward_for_tagger, tag_penalty_for_runner float32;
    runner_exits_game_after_tagged bool;
    loc_x, loc_y float32[E, N]; still_in_game int32[E, N]; num_runners_left, tags int32[E];
    rewards float32[E, N]. Taggers never leave the game, so binning those in the game bins all.
    Only taggers closer than the tagging radius are candidates: the nearest of them is the
    nearest tagger whenever a tag happens.
    """
    e = cuda.blockIdx.x
    if e >= loc_x.shape[0]:
        return
    words = cuda.shared.array(0, types.int32)
    partial = words[0:cuda.blockDim.x]
    xs, ys, cell_end, ids = shared_grid(words, cuda.shared.array(0, types.float32), cuda.shared.array(0, types.int16),
                                        num_taggers, tagger_grid_cells_capacity, cuda.blockDim.x)
    _count, side = bin_agents(e, 0, num_taggers, still_in_game, loc_x, loc_y, grid_length,
                              tagger_grid_agents_per_cell, partial, xs, ys, cell_end, ids)
    nearest = cuda.local.array(1, np.uint64)
    i = num_taggers + cuda.threadIdx.x
    while i < loc_x.shape[1]:
        if still_in_game[e, i] == 1:
            k_nearest(loc_x[e, i], loc_y[e, i], -1, tag_radius_squared, side, grid_length, xs, ys, cell_end, ids,
                      nearest)
            if nearest[0] != EMPTY_KEY:
                apply_tag(e, i, key_id(nearest[0]), tag_reward_for_tagger, tag_penalty_for_runner,
                          runner_exits_game_after_tagged, still_in_game, num_runners_left, tags, rewards)
        i += cuda.blockDim.x
