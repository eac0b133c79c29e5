"""tag_continuous's neighbour searches on a uniform grid: the phases of the step kernel that
observe (partial observations) and tag, for the block's environment (device code).

The block bins its environment's agents (warpsim.kernels.neighbours), then each thread
answers queries, taking them in the grid's order so that the threads of a warp search
nearby cells: each its own rings of cells, or (the tile search) first the tile the warp
shares. A grid of one cell is the search of every pair. Results equal those of a
brute force exactly: the same K nearest with the lower id first on a tie, the same
nearest tagger.
"""

import functools

import numpy as np
from numba import cuda

from warpsim.envs.tag_continuous.kernels import (
    apply_tag,
    write_observed_slot,
    write_own_state,
    write_partial_observation,
)
from warpsim.envs.tag_continuous.params import OWN_STATE_SIZE, TWO_PI, ZERO
from warpsim.kernels.bfloat16 import store_observation
from warpsim.kernels.indexing import quotient
from warpsim.kernels.nearest_keys import EMPTY_KEY, clear_keys, count_keys, key_id
from warpsim.kernels.neighbours import NO_CELL, bin_agents, group_tile, k_nearest, k_nearest_in_tile, query_cell
from warpsim.kernels.trig import sin_cos_device

INFINITY = np.float32(np.inf)
ONE = np.float32(1)


SHARED_WORDS_PER_QUERY = 3
"""Shared int32 words per thread of the observation phase besides its K nearest: the partial
sum of the binning, and the observer and the number found of its query."""


STAGED_FEATURES = 5
"""Arrays of the state a partial observation reads of each agent, staged in shared memory where
they fit: loc_x, loc_y, speed, acceleration and direction, in the observation's feature order."""


def observation_words_per_thread(num_observed: int) -> int:
    """``GridLayout.words_per_thread`` of the observation phase for K = ``num_observed``."""
    return num_observed + SHARED_WORDS_PER_QUERY


def staged_state_bytes(num_agents: int) -> int:
    """Shared memory of the state the observation phase stages after its grid, where it fits."""
    return 4 * STAGED_FEATURES * num_agents


@functools.cache
def observation_phase(tile_search: bool, state_in_shared: bool):
    """The observation phase, ``observe_environment``, with each query's ring search or (``tile_search``)
    the tile search of warpsim.kernels.neighbours, and the observations written from the state in
    global memory slot by slot or (``state_in_shared``) from the state staged in shared memory row by
    row; compiled apart so that each holds one variant's code."""

    @cuda.jit(device=True)
    def observe_environment(e, keys, agents_per_cell, own_state, grid_length, episode_length, position_scale,
                            speed_scale, agent_type, t, loc_x, loc_y, speed, direction, acceleration, still_in_game,
                            shared, staged, xs, ys, cell_end, ids, observations):
        """The block's queries go in rounds of one per thread. Each round the threads share their
        results (``shared``: partial sums, then the K nearest slot by slot, the observers and
        the numbers found, one word per thread each), and then write the round's observations
        together: neighbouring threads on neighbouring entries of a row (``state_in_shared``: whole
        rows, their features read from ``staged``, float32[5 * N], the STAGED_FEATURES of every agent)
        or on neighbouring slots, so that the stores of a warp fall in a few rows instead of 32. The
        tile search first shares the rounds' query cells (``partial``, free once the agents are
        binned). keys uint64[K]: the thread's K-nearest list."""
        partial, listed, observer_of, found_of = shared
        thread = cuda.threadIdx.x
        threads = cuda.blockDim.x
        n = loc_x.shape[1]
        k = keys.shape[0]
        if state_in_shared:  # the binning's barriers order these stores before every read
            j = thread
            while j < n:
                staged[j] = loc_x[e, j]
                staged[n + j] = loc_y[e, j]
                staged[2 * n + j] = speed[e, j]
                staged[3 * n + j] = acceleration[e, j]
                staged[4 * n + j] = direction[e, j]
                j += threads
        count, side = bin_agents(e, 0, n, still_in_game, loc_x, loc_y, grid_length, agents_per_cell,
                                 partial, xs, ys, cell_end, ids)
        time = np.float32(t[e]) / np.float32(episode_length)
        first = 0
        while first < count:
            place = first + thread
            if tile_search:
                partial[thread] = NO_CELL if place >= count else query_cell(xs[place], ys[place], side,
                                                                            grid_length)
                cuda.syncthreads()
            if place < count:
                i = np.int32(ids[place])
                if tile_search:
                    k_nearest_in_tile(xs[place], ys[place], i, group_tile(partial, side), side, grid_length, xs, ys,
                                      cell_end, ids, keys)
                else:
                    k_nearest(xs[place], ys[place], i, INFINITY, side, grid_length, xs, ys, cell_end, ids, keys)
                found = count_keys(keys)
                for slot in range(k):  # every slot, so that the list stays in registers
                    if slot < found:
                        listed[slot * threads + thread] = key_id(keys[slot])
                observer_of[thread] = i
                found_of[thread] = found
            cuda.syncthreads()
            queries = min(threads, count - first)
            if state_in_shared:
                write_rows(e, queries, k, own_state, grid_length, position_scale, speed_scale, time, agent_type,
                           staged, listed, observer_of, found_of, observations)
            else:
                pair = thread
                while pair < queries * k:
                    query = quotient(pair, k)
                    slot = pair - query * k
                    j = -1
                    if slot < found_of[query]:
                        j = listed[slot * threads + query]
                    write_observed_slot(observations, e, observer_of[query], k, slot, j, position_scale,
                                        speed_scale, agent_type, loc_x, loc_y, speed, direction, acceleration)
                    pair += threads
                query = thread
                while query < queries:
                    store_observation(observations, e, observer_of[query], 7 * k, time)
                    if own_state:
                        write_own_state(observations, e, observer_of[query], 7 * k + 1, loc_x, loc_y, speed,
                                        direction, grid_length, speed_scale, ONE)
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

    return observe_environment


@cuda.jit(device=True)
def write_rows(e, queries, k, own_state, grid_length, position_scale, speed_scale, time, agent_type, staged, listed,
               observer_of, found_of, observations):
    """The observation rows of a round's ``queries`` observers, entry by entry: thread after thread
    on consecutive entries of a row, so that a warp's stores fill whole sectors. Each entry is
    computed as kernels.write_observed_slot and kernels.write_own_state compute it (features
    from ``staged``, float32[5 * N]; the shared lists as in observe_environment)."""
    threads = cuda.blockDim.x
    n = agent_type.shape[0]
    features = 7 * k
    row = features + 1 + (OWN_STATE_SIZE if own_state else 0)
    entry_of_pair = cuda.threadIdx.x
    while entry_of_pair < queries * row:
        query = quotient(entry_of_pair, row)
        entry = entry_of_pair - query * row
        i = observer_of[query]
        value = time
        if entry < features:
            feature = quotient(entry, k)
            slot = entry - feature * k
            value = ZERO
            if slot < found_of[query]:
                j = listed[slot * threads + query]
                if feature < STAGED_FEATURES:
                    scale = position_scale if feature < 2 else (speed_scale if feature < 4 else TWO_PI)
                    value = (staged[feature * n + j] - staged[feature * n + i]) / scale
                elif feature == STAGED_FEATURES:
                    value = np.float32(agent_type[j])
                else:
                    value = ONE
        elif entry > features:
            own = entry - features - 1
            if own < 2:
                sine, cosine = sin_cos_device(staged[4 * n + i])
                value = cosine if own == 0 else sine
            elif own == 2:
                value = staged[2 * n + i] / speed_scale
            else:
                value = staged[(own - 3) * n + i] / grid_length
        store_observation(observations, e, i, entry, value)
        entry_of_pair += threads


@cuda.jit(device=True)
def tag_environment(e, num_taggers, agents_per_cell, grid_length, tag_radius_squared, tag_reward_for_tagger,
                    tag_penalty_for_runner, runner_exits_game, loc_x, loc_y, still_in_game, num_runners_left, tags,
                    rewards, partial, xs, ys, cell_end, ids):
    """docs/tag_rules.md section 1 step 5 for environment e, as kernels.tag_runner does it per runner,
    the taggers binned first (every thread of the block calls it). Taggers never leave the game, so
    binning those in the game bins all. Only taggers closer than the tagging radius are candidates:
    the nearest of them is the nearest tagger whenever a tag happens."""
    _count, side = bin_agents(e, 0, num_taggers, still_in_game, loc_x, loc_y, grid_length, agents_per_cell,
                              partial, xs, ys, cell_end, ids)
    nearest = cuda.local.array(1, np.uint64)
    i = num_taggers + cuda.threadIdx.x
    while i < loc_x.shape[1]:
        if still_in_game[e, i] == 1:
            k_nearest(loc_x[e, i], loc_y[e, i], -1, tag_radius_squared, side, grid_length, xs, ys, cell_end, ids,
                      nearest)
            if nearest[0] != EMPTY_KEY:
                apply_tag(e, i, key_id(nearest[0]), tag_reward_for_tagger, tag_penalty_for_runner,
                          runner_exits_game, still_in_game, num_runners_left, tags, rewards)
        i += cuda.blockDim.x
