"""The rules of tag_continuous for one agent (docs/tag_rules.md section 1), as device functions.

The step and reset kernels (step_kernels.py) call them for agent i of environment e.
All arithmetic is float32 with the same order of operations as the NumPy reference; every
observation is written with ``store_observation``, which rounds it to bfloat16 where the
observations are (TagContinuousParams.observation_dtype).
"""

import math

import numpy as np
from numba import cuda

from warpsim.envs.tag_continuous.params import DRAWS_PER_AGENT, HALF_PI, TWO_PI, ZERO
from warpsim.kernels.actions import clamp_device
from warpsim.kernels.bfloat16 import store_observation
from warpsim.kernels.nearest_keys import EMPTY_KEY, key_id, pop_nearest
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


@cuda.jit(device=True)
def table_action(e, i, actions, acceleration_table, turn_table, action_bounds):
    """Agent i's acceleration change and turn: the table entries its indices pick (clamped to the tables)."""
    acc_index = min(max(actions[e, i, 0], 0), acceleration_table.shape[0] - 1)
    turn_index = min(max(actions[e, i, 1], 0), turn_table.shape[0] - 1)
    return acceleration_table[acc_index], turn_table[turn_index]


@cuda.jit(device=True)
def bounded_action(e, i, actions, acceleration_table, turn_table, action_bounds):
    """Agent i's acceleration change and turn: its two numbers, clamped to their bounds (continuous_actions)."""
    return (clamp_device(actions[e, i, 0], action_bounds[0, 0], action_bounds[1, 0]),
            clamp_device(actions[e, i, 1], action_bounds[0, 1], action_bounds[1, 1]))


@cuda.jit(device=True)
def move_agent(e, i, acc_change, turn, max_speed_by_type, step_reward_by_type, agent_type, grid_length,
               edge_hit_penalty, t, loc_x, loc_y, speed, direction, acceleration, still_in_game, rewards):
    """docs/tag_rules.md section 1 steps 1, 2 and 4 for agent i of environment e, given its action's
    acceleration change and turn: clock (agent 0), motion, edge clipping, base reward (written)."""
    if i == 0:
        t[e] += 1
    alive = still_in_game[e, i]
    alive_f = np.float32(alive)
    kind = agent_type[i]
    max_speed = max_speed_by_type[kind]

    acc = acceleration[e, i] + acc_change
    heading = wrap_angle(direction[e, i] + turn) * alive_f
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
    store_observation(observations, e, i, slot, (loc_x[e, j] - loc_x[e, i]) / position_scale * scale)
    store_observation(observations, e, i, stride + slot, (loc_y[e, j] - loc_y[e, i]) / position_scale * scale)
    store_observation(observations, e, i, 2 * stride + slot, (speed[e, j] - speed[e, i]) / speed_scale * scale)
    store_observation(observations, e, i, 3 * stride + slot,
                      (acceleration[e, j] - acceleration[e, i]) / speed_scale * scale)
    store_observation(observations, e, i, 4 * stride + slot, (direction[e, j] - direction[e, i]) / TWO_PI * scale)


@cuda.jit(device=True)
def write_own_state(observations, e, i, start, loc_x, loc_y, speed, direction, grid_length, speed_scale, scale):
    """Agent i's own state (TagContinuousParams.observe_own_state), times ``scale``, from entry ``start``."""
    sine, cosine = sin_cos_device(direction[e, i])
    store_observation(observations, e, i, start, cosine * scale)
    store_observation(observations, e, i, start + 1, sine * scale)
    store_observation(observations, e, i, start + 2, speed[e, i] / speed_scale * scale)
    store_observation(observations, e, i, start + 3, loc_x[e, i] / grid_length * scale)
    store_observation(observations, e, i, start + 4, loc_y[e, i] / grid_length * scale)


@cuda.jit(device=True)
def observe_full_agent(e, i, own_state, grid_length, episode_length, position_scale, speed_scale, agent_type,
                       t, loc_x, loc_y, speed, direction, acceleration, still_in_game, observations):
    """Agent i's full observation (every other agent); all zeros for an agent out of the game."""
    n = loc_x.shape[1]
    stride = n - 1
    observer = np.float32(still_in_game[e, i])
    for j in range(n):
        if j == i:
            continue
        slot = j if j < i else j - 1
        write_relative(observations, e, i, j, slot, stride, loc_x, loc_y, speed, acceleration,
                       direction, position_scale, speed_scale, observer)
        store_observation(observations, e, i, 5 * stride + slot, np.float32(agent_type[j]))
        store_observation(observations, e, i, 6 * stride + slot, np.float32(still_in_game[e, j]))
    store_observation(observations, e, i, 7 * stride, np.float32(t[e]) / np.float32(episode_length) * observer)
    if own_state:
        write_own_state(observations, e, i, 7 * stride + 1, loc_x, loc_y, speed, direction, grid_length,
                        speed_scale, observer)


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
    store_observation(observations, e, i, 7 * k, time)
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
        store_observation(observations, e, i, 5 * k + slot, np.float32(agent_type[j]))
        store_observation(observations, e, i, 6 * k + slot, one)
    else:
        for feature in range(7):
            store_observation(observations, e, i, feature * k + slot, ZERO)


@cuda.jit(device=True)
def tag_runner(e, i, num_taggers, tag_radius_squared, tag_reward_for_tagger, tag_penalty_for_runner,
               runner_exits_game, loc_x, loc_y, still_in_game, num_runners_left, tags, rewards):
    """docs/tag_rules.md section 1 step 5 for runner i in the game: its nearest tagger (lowest id on a
    tie), every tagger read from global memory."""
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
        apply_tag(e, i, best, tag_reward_for_tagger, tag_penalty_for_runner, runner_exits_game,
                  still_in_game, num_runners_left, tags, rewards)


@cuda.jit(device=True)
def apply_tag(e, i, tagger, tag_reward_for_tagger, tag_penalty_for_runner, runner_exits_game,
              still_in_game, num_runners_left, tags, rewards):
    """Runner i of environment e is tagged by ``tagger``: rewards, the tag count, the exit. A
    tagger's reward gets one atomic add per tag, so simultaneous tags all count."""
    rewards[e, i] += tag_penalty_for_runner
    cuda.atomic.add(rewards, (e, tagger), tag_reward_for_tagger)
    cuda.atomic.add(tags, e, 1)
    if runner_exits_game:
        still_in_game[e, i] = 0
        cuda.atomic.sub(num_runners_left, e, 1)


@cuda.jit(device=True)
def finish_agent(e, i, num_taggers, episode_length, end_of_game_reward_for_runner, t, still_in_game, rewards):
    """docs/tag_rules.md section 1 step 6: the end-of-game reward of runner i, still in at t == T."""
    if i >= num_taggers and t[e] == episode_length and still_in_game[e, i] == 1:
        rewards[e, i] += end_of_game_reward_for_runner


@cuda.jit(device=True)
def reset_agent(e, i, seed, episode, grid_length, loc_x, loc_y, speed, direction, acceleration, still_in_game):
    """A new start for agent i of environment e, drawn from the stream of the episode counter."""
    loc_x[e, i] = reset_uniform_device(seed, e, episode[e], i, 0, DRAWS_PER_AGENT) * grid_length
    loc_y[e, i] = reset_uniform_device(seed, e, episode[e], i, 1, DRAWS_PER_AGENT) * grid_length
    quadrant = np.int32(reset_uniform_device(seed, e, episode[e], i, 2, DRAWS_PER_AGENT) * FOUR)
    direction[e, i] = np.float32(quadrant) * HALF_PI
    speed[e, i] = ZERO
    acceleration[e, i] = ZERO
    still_in_game[e, i] = 1
