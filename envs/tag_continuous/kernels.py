"""Numba CUDA kernels of tag_continuous (docs/tag_rules.md section 1).

One thread per agent over the flattened (environment, agent) index, so any N works
(an environment may span several blocks) and small N packs several environments into
a block. A step is five launches (move, observe, tag, finish, then the masked reset
and its observation); each launch sees the previous one's writes. All arithmetic is
float32 with the same order of operations as the NumPy reference.
"""

import functools
import math

import numpy as np
from numba import cuda

from warpsim.envs.tag_continuous.params import DRAWS_PER_AGENT, HALF_PI, TWO_PI, ZERO
from warpsim.kernels.indexing import agent_of_thread
from warpsim.kernels.nearest_keys import EMPTY_KEY, clear_keys, key_id, offer_key, pop_nearest
from warpsim.kernels.random import reset_uniform_device
from warpsim.kernels.rounding import add, mul, squared_distance
from warpsim.kernels.trig import sin_cos_device

FOUR = np.float32(4)
INFINITY = np.float32(np.inf)


@cuda.jit(device=True)
def wrap_angle(angle):
    """angle mod 2pi in [0, 2pi); float32."""
    wrapped = math.fmod(angle, TWO_PI)
    if wrapped < ZERO:
        wrapped += TWO_PI
    if wrapped >= TWO_PI:
        wrapped = ZERO
    return wrapped


@cuda.jit
def move_agents(actions, acceleration_table, turn_table, max_speed_by_type, step_reward_by_type,
                agent_type, grid_length, edge_hit_penalty,
                t, loc_x, loc_y, speed, direction, acceleration, still_in_game, rewards):
    """docs/tag_rules.md section 1 steps 1, 2 and 4: clock, motion, edge clipping, base rewards.

    actions int32[E, N, 2]; acceleration_table float32[A]; turn_table float32[B];
    max_speed_by_type float32[2]; step_reward_by_type float32[2]; agent_type int32[N];
    grid_length float32; edge_hit_penalty float32; t int32[E];
    loc_x, loc_y, speed, direction, acceleration float32[E, N];
    still_in_game int32[E, N]; rewards float32[E, N] (written).
    """
    num_envs, n = loc_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    if i == 0:
        t[e] += 1
    alive = still_in_game[e, i]
    alive_f = np.float32(alive)
    kind = agent_type[i]
    max_speed = max_speed_by_type[kind]
    acc_index = min(max(actions[e, i, 0], 0), acceleration_table.shape[0] - 1)
    turn_index = min(max(actions[e, i, 1], 0), turn_table.shape[0] - 1)

    acc = acceleration[e, i] + acceleration_table[acc_index]
    heading = wrap_angle(direction[e, i] + turn_table[turn_index]) * alive_f
    velocity = min(max(speed[e, i] + acc, ZERO), max_speed) * alive_f
    if velocity <= ZERO or velocity >= max_speed:
        acc = ZERO
    sine, cosine = sin_cos_device(heading)
    x = add(loc_x[e, i], mul(velocity, cosine))
    y = add(loc_y[e, i], mul(velocity, sine))
    hit_edge = x < ZERO or x > grid_length or y < ZERO or y > grid_length

    acceleration[e, i] = acc
    direction[e, i] = heading
    speed[e, i] = velocity
    loc_x[e, i] = min(max(x, ZERO), grid_length)
    loc_y[e, i] = min(max(y, ZERO), grid_length)
    reward = ZERO
    if alive == 1:
        edge = edge_hit_penalty if hit_edge else ZERO
        reward = edge + step_reward_by_type[kind]
    rewards[e, i] = reward


@cuda.jit(device=True)
def write_relative(observations, e, i, j, slot, stride, loc_x, loc_y, speed, acceleration, direction,
                   position_scale, speed_scale, scale):
    """Features 1-5 of agent j seen from agent i, into ``slot`` of each feature block."""
    observations[e, i, slot] = (loc_x[e, j] - loc_x[e, i]) / position_scale * scale
    observations[e, i, stride + slot] = (loc_y[e, j] - loc_y[e, i]) / position_scale * scale
    observations[e, i, 2 * stride + slot] = (speed[e, j] - speed[e, i]) / speed_scale * scale
    observations[e, i, 3 * stride + slot] = (acceleration[e, j] - acceleration[e, i]) / speed_scale * scale
    observations[e, i, 4 * stride + slot] = (direction[e, j] - direction[e, i]) / TWO_PI * scale


@cuda.jit(device=True)
def write_own_state(observations, e, i, start, loc_x, loc_y, speed, direction, grid_length, speed_scale, scale):
    """Agent i's own state (TagContinuousParams.observe_own_state), times ``scale``, from entry ``start``."""
    sine, cosine = sin_cos_device(direction[e, i])
    observations[e, i, start] = cosine * scale
    observations[e, i, start + 1] = sine * scale
    observations[e, i, start + 2] = speed[e, i] / speed_scale * scale
    observations[e, i, start + 3] = loc_x[e, i] / grid_length * scale
    observations[e, i, start + 4] = loc_y[e, i] / grid_length * scale


@cuda.jit
def observe_full(mask, observe_own_state, grid_length, episode_length, position_scale, speed_scale, agent_type,
                 t, loc_x, loc_y, speed, direction, acceleration, still_in_game, observations):
    """Full observations of the environments where ``mask`` is set.

    mask bool[E]; observe_own_state bool; grid_length float32; episode_length int32;
    position_scale, speed_scale float32; agent_type int32[N]; t int32[E];
    loc_x .. acceleration float32[E, N]; still_in_game int32[E, N];
    observations float32[E, N, 7 (N-1) + 1, + 5 with observe_own_state] (written).
    """
    num_envs, n = loc_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs or not mask[e]:
        return
    stride = n - 1
    observer = np.float32(still_in_game[e, i])
    for j in range(n):
        if j == i:
            continue
        slot = j if j < i else j - 1
        write_relative(observations, e, i, j, slot, stride, loc_x, loc_y, speed, acceleration,
                       direction, position_scale, speed_scale, observer)
        observations[e, i, 5 * stride + slot] = np.float32(agent_type[j])
        observations[e, i, 6 * stride + slot] = np.float32(still_in_game[e, j])
    observations[e, i, 7 * stride] = np.float32(t[e]) / np.float32(episode_length) * observer
    if observe_own_state:
        write_own_state(observations, e, i, 7 * stride + 1, loc_x, loc_y, speed, direction, grid_length,
                        speed_scale, observer)


@functools.cache
def observe_partial_kernel(num_observed: int):
    """observe_partial compiled for K = ``num_observed``: its K-nearest list lives in registers."""

    @cuda.jit
    def observe_partial(mask, observe_own_state, grid_length, episode_length, position_scale, speed_scale,
                        agent_type, t, loc_x, loc_y, speed, direction, acceleration, still_in_game, observations):
        """Partial observations (K nearest agents in the game) where ``mask`` is set.

        mask bool[E]; observe_own_state bool; grid_length float32; episode_length int32;
        position_scale, speed_scale float32; agent_type int32[N]; t int32[E];
        loc_x .. acceleration float32[E, N]; still_in_game int32[E, N];
        observations float32[E, N, 7 K + 1, + 5 with observe_own_state] (written).
        """
        num_envs, n = loc_x.shape
        e, i = agent_of_thread(n)
        if e >= num_envs or not mask[e]:
            return
        keys = cuda.local.array(num_observed, np.uint64)
        clear_keys(keys)
        observer_alive = still_in_game[e, i] == 1
        if observer_alive:
            x = loc_x[e, i]
            y = loc_y[e, i]
            for j in range(n):
                if j != i and still_in_game[e, j] == 1:
                    offer_key(keys, squared_distance(loc_x[e, j] - x, loc_y[e, j] - y), j)
        write_partial_observation(observations, e, i, keys, observer_alive, observe_own_state, grid_length,
                                  episode_length, position_scale, speed_scale, agent_type, t, loc_x, loc_y, speed,
                                  direction, acceleration)

    return observe_partial


@cuda.jit(device=True)
def write_partial_observation(observations, e, i, keys, observer_alive, own_state, grid_length,
                              episode_length, position_scale, speed_scale, agent_type, t, loc_x, loc_y, speed,
                              direction, acceleration):
    """Agent i's partial observation from its K nearest (keys uint64[K] of warpsim.kernels.nearest_keys,
    emptied); empty slots and the time and own state of an observer out of the game are zeros."""
    k = keys.shape[0]
    for slot in range(k):
        key = pop_nearest(keys)
        j = -1
        if key != EMPTY_KEY:
            j = key_id(key)
        write_observed_slot(observations, e, i, k, slot, j, position_scale, speed_scale, agent_type,
                            loc_x, loc_y, speed, direction, acceleration)
    time = ZERO
    if observer_alive:
        time = np.float32(t[e]) / np.float32(episode_length)
    observations[e, i, 7 * k] = time
    if own_state:
        write_own_state(observations, e, i, 7 * k + 1, loc_x, loc_y, speed, direction, grid_length, speed_scale,
                        np.float32(observer_alive))


@cuda.jit(device=True)
def write_observed_slot(observations, e, i, k, slot, j, position_scale, speed_scale, agent_type,
                        loc_x, loc_y, speed, direction, acceleration):
    """The 7 features of ``slot`` in agent i's partial observation: agent j, or zeros where j is -1."""
    if j >= 0:
        one = np.float32(1)
        write_relative(observations, e, i, j, slot, k, loc_x, loc_y, speed, acceleration,
                       direction, position_scale, speed_scale, one)
        observations[e, i, 5 * k + slot] = np.float32(agent_type[j])
        observations[e, i, 6 * k + slot] = one
    else:
        for feature in range(7):
            observations[e, i, feature * k + slot] = ZERO


@cuda.jit
def tag_runners(num_taggers, tag_radius_squared, tag_reward_for_tagger, tag_penalty_for_runner,
                runner_exits_game_after_tagged, loc_x, loc_y, still_in_game, num_runners_left, tags, rewards):
    """docs/tag_rules.md section 1 step 5: each runner in the game checks its nearest tagger (lowest id on a tie).

    num_taggers int32; tag_radius_squared, tag_reward_for_tagger, tag_penalty_for_runner
    float32; runner_exits_game_after_tagged bool; loc_x, loc_y float32[E, N];
    still_in_game int32[E, N]; num_runners_left, tags int32[E]; rewards float32[E, N].
    A tagger's reward gets one atomic add per tag, so simultaneous tags all count.
    """
    num_envs, n = loc_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    if i < num_taggers or still_in_game[e, i] != 1:
        return
    best_d2 = INFINITY
    best = 0
    for g in range(num_taggers):
        dx = loc_x[e, g] - loc_x[e, i]
        dy = loc_y[e, g] - loc_y[e, i]
        d2 = squared_distance(dx, dy)
        if d2 < best_d2:
            best_d2 = d2
            best = g
    if best_d2 < tag_radius_squared:
        apply_tag(e, i, best, tag_reward_for_tagger, tag_penalty_for_runner, runner_exits_game_after_tagged,
                  still_in_game, num_runners_left, tags, rewards)


@cuda.jit(device=True)
def apply_tag(e, i, tagger, tag_reward_for_tagger, tag_penalty_for_runner, runner_exits_game,
              still_in_game, num_runners_left, tags, rewards):
    """Runner i of environment e is tagged by ``tagger``: rewards, the tag count, the exit."""
    rewards[e, i] += tag_penalty_for_runner
    cuda.atomic.add(rewards, (e, tagger), tag_reward_for_tagger)
    cuda.atomic.add(tags, e, 1)
    if runner_exits_game:
        still_in_game[e, i] = 0
        cuda.atomic.sub(num_runners_left, e, 1)


@cuda.jit
def finish_step(num_taggers, episode_length, end_of_game_reward_for_runner,
                t, still_in_game, num_runners_left, rewards, done):
    """docs/tag_rules.md section 1 steps 6 and 7: end-of-game reward for runners still in at t == T, done flags.

    num_taggers, episode_length int32; end_of_game_reward_for_runner float32;
    t int32[E]; still_in_game int32[E, N]; num_runners_left int32[E];
    rewards float32[E, N]; done bool[E] (written).
    """
    num_envs, n = rewards.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    if i >= num_taggers and t[e] == episode_length and still_in_game[e, i] == 1:
        rewards[e, i] += end_of_game_reward_for_runner
    if i == 0:
        done[e] = t[e] >= episode_length or num_runners_left[e] == 0


@cuda.jit
def reset_agents(mask, seed, episode, grid_length,
                 loc_x, loc_y, speed, direction, acceleration, still_in_game):
    """Draws new starts for the agents of environments where ``mask`` is set.

    mask bool[E]; seed uint64; episode int32[E] (the stream's counter);
    grid_length float32; loc_x .. acceleration float32[E, N]; still_in_game int32[E, N].
    """
    num_envs, n = loc_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs or not mask[e]:
        return
    loc_x[e, i] = reset_uniform_device(seed, e, episode[e], i, 0, DRAWS_PER_AGENT) * grid_length
    loc_y[e, i] = reset_uniform_device(seed, e, episode[e], i, 1, DRAWS_PER_AGENT) * grid_length
    quadrant = np.int32(reset_uniform_device(seed, e, episode[e], i, 2, DRAWS_PER_AGENT) * FOUR)
    direction[e, i] = np.float32(quadrant) * HALF_PI
    speed[e, i] = ZERO
    acceleration[e, i] = ZERO
    still_in_game[e, i] = 1


@cuda.jit
def reset_envs(mask, num_runners, t, num_runners_left, episode):
    """Per-environment part of a reset where ``mask`` is set, after ``reset_agents`` (which
    reads the episode counter).

    mask bool[E]; num_runners int32; t int32[E]; num_runners_left int32[E];
    episode int32[E] (advanced by one).
    """
    e = cuda.grid(1)
    if e < t.shape[0] and mask[e]:
        t[e] = 0
        num_runners_left[e] = num_runners
        episode[e] += np.int32(1)
