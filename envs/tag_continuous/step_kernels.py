"""The kernels of tag_continuous: a whole step in one launch, a reset in another (docs/tag_rules.md
section 1).

One block per environment. The block's threads take its agents in turn (agent i by thread
i mod blockDim.x) through each phase of the rules, with a barrier between phases, so that a
phase sees every write of the one before: move, observe, tag, finish (rewards at T, ``done``
and ``terminated``) and, where the episode ended and the launch's mask allows, the reset
and the first observation of the next episode. A step was nine launches before (five
kernels, two torch ops for ``terminated``, and the reset's three); the launch cost and the
re-reads of the state between them are gone, which is what small batches are bound by.

What changes between configurations is fixed when a kernel compiles (``step_kernels``):
full or partial observations with K, the observation grid in shared memory or global
scratch, the taggers binned in shared memory or read from global memory, the observations'
search by rings or by tiles, the state they read staged in shared memory or not. Partial
observations always search a grid (grid_search.py); a grid of one cell is the search of every
pair (``neighbour_search="brute_force"``). Numba compiles a kernel once more for bfloat16
observations (an int16 array: ``warpsim.kernels.bfloat16.store_observation``).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np
from numba import cuda, types

from warpsim.envs.tag_continuous.grid_search import (
    SHARED_WORDS_PER_QUERY,
    STAGED_FEATURES,
    observation_phase,
    tag_environment,
)
from warpsim.envs.tag_continuous.kernels import (
    bounded_action,
    finish_agent,
    move_agent,
    observe_full_agent,
    reset_agent,
    table_action,
    tag_runner,
)
from warpsim.kernels.neighbours import shared_grid, words_after_grid


class StepKernels(NamedTuple):
    """The two kernels of one configuration, launched with one block per environment."""

    step: Any
    reset: Any


@functools.cache
def step_kernels(num_observed: int, observation_grid_in_shared: bool, taggers_in_shared: bool,
                 tile_search: bool, state_in_shared: bool, continuous_actions: bool) -> StepKernels:
    """The step and reset kernels for K = ``num_observed`` nearest (0: full observations), the grid of
    the partial observations in dynamic shared memory or (``observation_grid_in_shared`` False) in
    the global scratch grid_*, the taggers binned in shared memory for the tag or not
    (``taggers_in_shared`` False: every runner reads every tagger from global memory), the
    observations' search by tiles of a warp (``tile_search``) or by rings of each query, and the
    state they read staged in shared memory after the grid (``state_in_shared``, which needs the
    grid there) or read from global memory. One compilation per configuration, so that no
    variant holds another's registers; the K-nearest list is sized when the kernel compiles and
    lives in registers. With ``continuous_actions`` the step reads float32 actions, clamped to
    ``action_bounds``, instead of indices into the tables."""
    list_size = max(num_observed, 1)
    read_action = bounded_action if continuous_actions else table_action
    observe_environment = observation_phase(tile_search, state_in_shared)

    @cuda.jit(device=True)
    def observe(e, observe_own_state, grid_length, episode_length, position_scale, speed_scale,
                observation_grid_agents_per_cell, observation_grid_cells_capacity, agent_type, t, loc_x, loc_y,
                speed, direction, acceleration, still_in_game, grid_x, grid_y, grid_ids, grid_cells, observations):
        """Every agent's observation of environment e (the block's)."""
        if num_observed == 0:
            i = cuda.threadIdx.x
            while i < loc_x.shape[1]:
                observe_full_agent(e, i, observe_own_state, grid_length, episode_length, position_scale,
                                   speed_scale, agent_type, t, loc_x, loc_y, speed, direction, acceleration,
                                   still_in_game, observations)
                i += cuda.blockDim.x
            return
        threads = cuda.blockDim.x
        k = num_observed
        words = cuda.shared.array(0, types.int32)
        shared = (words[0:threads], words[threads:(k + 1) * threads], words[(k + 1) * threads:(k + 2) * threads],
                  words[(k + 2) * threads:(k + 3) * threads])
        keys = cuda.local.array(list_size, np.uint64)
        if observation_grid_in_shared:
            n = loc_x.shape[1]
            floats = cuda.shared.array(0, types.float32)
            start = (k + SHARED_WORDS_PER_QUERY) * threads
            xs, ys, cell_end, ids = shared_grid(words, floats, cuda.shared.array(0, types.int16), n,
                                                observation_grid_cells_capacity, start)
            staged_start = words_after_grid(n, observation_grid_cells_capacity, start)
            observe_environment(e, keys, observation_grid_agents_per_cell, observe_own_state, grid_length,
                                episode_length, position_scale, speed_scale, agent_type, t, loc_x, loc_y, speed,
                                direction, acceleration, still_in_game, shared,
                                floats[staged_start:staged_start + STAGED_FEATURES * n], xs, ys, cell_end, ids,
                                observations)
        else:  # nothing staged (``grid_x[e]`` stands in, unread)
            observe_environment(e, keys, observation_grid_agents_per_cell, observe_own_state, grid_length,
                                episode_length, position_scale, speed_scale, agent_type, t, loc_x, loc_y, speed,
                                direction, acceleration, still_in_game, shared, grid_x[e], grid_x[e], grid_y[e],
                                grid_cells[e], grid_ids[e], observations)

    @cuda.jit(device=True)
    def tag(e, num_taggers, tagger_grid_agents_per_cell, tagger_grid_cells_capacity, grid_length,
            tag_radius_squared, tag_reward_for_tagger, tag_penalty_for_runner, runner_exits_game_after_tagged,
            loc_x, loc_y, still_in_game, num_runners_left, tags, rewards):
        """Every runner of environment e in the game checks its nearest tagger."""
        if taggers_in_shared:
            words = cuda.shared.array(0, types.int32)
            xs, ys, cell_end, ids = shared_grid(words, cuda.shared.array(0, types.float32),
                                                cuda.shared.array(0, types.int16), num_taggers,
                                                tagger_grid_cells_capacity, cuda.blockDim.x)
            tag_environment(e, num_taggers, tagger_grid_agents_per_cell, grid_length, tag_radius_squared,
                            tag_reward_for_tagger, tag_penalty_for_runner, runner_exits_game_after_tagged, loc_x,
                            loc_y, still_in_game, num_runners_left, tags, rewards, words[0:cuda.blockDim.x],
                            xs, ys, cell_end, ids)
            return
        i = num_taggers + cuda.threadIdx.x
        while i < loc_x.shape[1]:
            if still_in_game[e, i] == 1:
                tag_runner(e, i, num_taggers, tag_radius_squared, tag_reward_for_tagger, tag_penalty_for_runner,
                           runner_exits_game_after_tagged, loc_x, loc_y, still_in_game, num_runners_left, tags,
                           rewards)
            i += cuda.blockDim.x

    @cuda.jit(device=True)
    def reset(e, seed, num_runners, grid_length, t, loc_x, loc_y, speed, direction, acceleration, still_in_game,
              num_runners_left, episode):
        """A new episode of environment e: the agents' starts, then the clock, the runners left and the
        episode counter (the stream the starts were drawn from, so it advances after them)."""
        i = cuda.threadIdx.x
        while i < loc_x.shape[1]:
            reset_agent(e, i, seed, episode, grid_length, loc_x, loc_y, speed, direction, acceleration,
                        still_in_game)
            i += cuda.blockDim.x
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            t[e] = 0
            num_runners_left[e] = num_runners
            episode[e] += np.int32(1)
        cuda.syncthreads()

    def step_environments(mask, num_taggers, num_runners, seed, actions, acceleration_table, turn_table,
                          action_bounds, max_speed_by_type, step_reward_by_type, agent_type, grid_length,
                          edge_hit_penalty, episode_length, observe_own_state, position_scale, speed_scale,
                          observation_grid_agents_per_cell, observation_grid_cells_capacity,
                          tagger_grid_agents_per_cell, tagger_grid_cells_capacity, tag_radius_squared,
                          tag_reward_for_tagger, tag_penalty_for_runner, runner_exits_game_after_tagged,
                          end_of_game_reward_for_runner, t, loc_x, loc_y, speed, direction, acceleration,
                          still_in_game, num_runners_left, tags, episode, rewards, done, terminated,
                          grid_x, grid_y, grid_ids, grid_cells, observations):
        """One step of every environment; block e steps environment e and, where it ends and ``mask`` is
        set, resets it (docs/tag_rules.md section 1).

        mask bool[E] (environments that may auto-reset); num_taggers, num_runners int32; seed uint64;
        actions int32[E, N, 2]; acceleration_table float32[A]; turn_table float32[B];
        action_bounds float32[2, 2];
        max_speed_by_type, step_reward_by_type float32[2]; agent_type int32[N]; grid_length,
        edge_hit_penalty float32; episode_length int32; observe_own_state bool; position_scale,
        speed_scale float32; observation_grid_agents_per_cell, observation_grid_cells_capacity,
        tagger_grid_agents_per_cell, tagger_grid_cells_capacity int32; tag_radius_squared,
        tag_reward_for_tagger, tag_penalty_for_runner float32; runner_exits_game_after_tagged bool;
        end_of_game_reward_for_runner float32; t int32[E]; loc_x .. acceleration float32[E, N];
        still_in_game int32[E, N]; num_runners_left, tags, episode int32[E]; rewards float32[E, N];
        done, terminated bool[E] (written); grid_x, grid_y float32[E, N], grid_ids int32[E, N] and
        grid_cells int32[E, C] (global scratch; 1 x 1 when the grid is in shared memory);
        observations float32 or int16[E, N, D] (written; int16: the bits of bfloat16 observations,
        TagContinuousParams.observation_dtype). Dynamic shared memory: what the observation's and the
        tag's grids need, the larger of the two (they take turns).
        """
        e = cuda.blockIdx.x
        if e >= loc_x.shape[0]:
            return
        i = cuda.threadIdx.x
        while i < loc_x.shape[1]:
            acc_change, turn = read_action(e, i, actions, acceleration_table, turn_table, action_bounds)
            move_agent(e, i, acc_change, turn, max_speed_by_type, step_reward_by_type, agent_type, grid_length,
                       edge_hit_penalty, t, loc_x, loc_y, speed, direction, acceleration, still_in_game, rewards)
            i += cuda.blockDim.x
        reset_done = False
        while True:  # at most twice: one call site of the observation, so that it is compiled once
            cuda.syncthreads()
            observe(e, observe_own_state, grid_length, episode_length, position_scale, speed_scale,
                    observation_grid_agents_per_cell, observation_grid_cells_capacity, agent_type, t, loc_x,
                    loc_y, speed, direction, acceleration, still_in_game, grid_x, grid_y, grid_ids, grid_cells,
                    observations)
            if reset_done:
                return
            cuda.syncthreads()
            tag(e, num_taggers, tagger_grid_agents_per_cell, tagger_grid_cells_capacity, grid_length,
                tag_radius_squared, tag_reward_for_tagger, tag_penalty_for_runner, runner_exits_game_after_tagged,
                loc_x, loc_y, still_in_game, num_runners_left, tags, rewards)
            cuda.syncthreads()
            i = cuda.threadIdx.x
            while i < loc_x.shape[1]:
                finish_agent(e, i, num_taggers, episode_length, end_of_game_reward_for_runner, t, still_in_game,
                             rewards)
                i += cuda.blockDim.x
            game_over = num_runners_left[e] == 0
            ended = t[e] >= episode_length or game_over
            if cuda.threadIdx.x == 0:
                done[e] = ended
                terminated[e] = game_over
            # The same for every thread of the block, so that all of them reach the barriers that follow.
            if not (ended and mask[e]):
                return
            cuda.syncthreads()
            reset(e, seed, num_runners, grid_length, t, loc_x, loc_y, speed, direction, acceleration,
                  still_in_game, num_runners_left, episode)
            reset_done = True

    if continuous_actions:  # the docstring declares what run() binds: float32 actions here
        step_environments.__doc__ = str(step_environments.__doc__).replace("actions int32[E, N, 2]",
                                                                           "actions float32[E, N, 2]")

    @cuda.jit
    def reset_environments(mask, num_runners, seed, grid_length, episode_length, observe_own_state,
                           position_scale, speed_scale, observation_grid_agents_per_cell,
                           observation_grid_cells_capacity, agent_type, t, loc_x, loc_y, speed, direction,
                           acceleration, still_in_game, num_runners_left, episode, grid_x, grid_y, grid_ids,
                           grid_cells, observations):
        """A new episode, observed, in the environments where ``mask`` is set; block e resets environment e.

        mask bool[E]; num_runners int32; seed uint64; grid_length float32; episode_length int32;
        observe_own_state bool; position_scale, speed_scale float32; observation_grid_agents_per_cell,
        observation_grid_cells_capacity int32; agent_type int32[N]; t int32[E]; loc_x .. acceleration
        float32[E, N]; still_in_game int32[E, N]; num_runners_left, episode int32[E]; grid_x, grid_y
        float32[E, N], grid_ids int32[E, N], grid_cells int32[E, C] (as step_environments);
        observations float32 or int16[E, N, D] (written, as step_environments).
        """
        e = cuda.blockIdx.x
        if e >= loc_x.shape[0] or not mask[e]:
            return
        reset(e, seed, num_runners, grid_length, t, loc_x, loc_y, speed, direction, acceleration,
              still_in_game, num_runners_left, episode)
        observe(e, observe_own_state, grid_length, episode_length, position_scale, speed_scale,
                observation_grid_agents_per_cell, observation_grid_cells_capacity, agent_type, t, loc_x, loc_y,
                speed, direction, acceleration, still_in_game, grid_x, grid_y, grid_ids, grid_cells, observations)

    return StepKernels(cuda.jit(step_environments), reset_environments)
