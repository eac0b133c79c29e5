"""Numba CUDA kernels of the template environment, one thread per agent or per environment.

A product that feeds a sum is written with ``mul`` (and a squared distance with
``squared_distance``): on a GPU a plain ``a * b + c`` is fused into one multiply-add,
rounded once where the NumPy reference rounds twice.
"""

import numpy as np
from numba import cuda

from warpsim.envs.template.params import DRAWS_PER_AGENT
from warpsim.kernels.actions import clamp_device
from warpsim.kernels.indexing import agent_of_thread
from warpsim.kernels.random import reset_uniform_device
from warpsim.kernels.rounding import add, mul, squared_distance

ZERO = np.float32(0)
ONE = np.float32(1)


@cuda.jit
def advance_clock(episode_length, t, done):
    """t += 1 and the done flags. episode_length int32; t int32[E]; done bool[E]."""
    e = cuda.grid(1)
    if e < t.shape[0]:
        t[e] += 1
        done[e] = t[e] >= episode_length


@cuda.jit
def move_and_observe(actions, moves_x, moves_y, step_size, grid_length, reach_radius_squared,
                     episode_length, beacon_x, beacon_y, t, pos_x, pos_y, rewards, observations):
    """One move, its reward and the next observation of each agent.

    actions int32[E, N, 1]; moves_x, moves_y float32[5]; step_size, grid_length,
    reach_radius_squared float32; episode_length int32; beacon_x, beacon_y float32[E];
    t int32[E]; pos_x, pos_y float32[E, N]; rewards float32[E, N];
    observations float32[E, N, 3].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    move = min(max(actions[e, i, 0], 0), moves_x.shape[0] - 1)
    x = min(max(add(pos_x[e, i], mul(moves_x[move], step_size)), ZERO), grid_length)
    y = min(max(add(pos_y[e, i], mul(moves_y[move], step_size)), ZERO), grid_length)
    pos_x[e, i] = x
    pos_y[e, i] = y
    rewards[e, i] = ONE if squared_distance(beacon_x[e] - x, beacon_y[e] - y) < reach_radius_squared else ZERO
    write_observation(e, i, grid_length, episode_length, beacon_x, beacon_y, t, pos_x, pos_y, observations)


@cuda.jit
def move_and_observe_continuous(actions, step_size, grid_length, reach_radius_squared, episode_length, beacon_x,
                                beacon_y, t, pos_x, pos_y, rewards, observations):
    """``move_and_observe`` with each agent's action a velocity in [-1, 1]^2 (clamped to it).

    actions float32[E, N, 2]; step_size, grid_length, reach_radius_squared float32;
    episode_length int32; beacon_x, beacon_y float32[E]; t int32[E]; pos_x, pos_y float32[E, N];
    rewards float32[E, N]; observations float32[E, N, 3].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    move_x = clamp_device(actions[e, i, 0], -ONE, ONE)
    move_y = clamp_device(actions[e, i, 1], -ONE, ONE)
    x = min(max(add(pos_x[e, i], mul(move_x, step_size)), ZERO), grid_length)
    y = min(max(add(pos_y[e, i], mul(move_y, step_size)), ZERO), grid_length)
    pos_x[e, i] = x
    pos_y[e, i] = y
    rewards[e, i] = ONE if squared_distance(beacon_x[e] - x, beacon_y[e] - y) < reach_radius_squared else ZERO
    write_observation(e, i, grid_length, episode_length, beacon_x, beacon_y, t, pos_x, pos_y, observations)


@cuda.jit(device=True)
def write_observation(e, i, grid_length, episode_length, beacon_x, beacon_y, t, pos_x, pos_y, observations):
    observations[e, i, 0] = (beacon_x[e] - pos_x[e, i]) / grid_length
    observations[e, i, 1] = (beacon_y[e] - pos_y[e, i]) / grid_length
    observations[e, i, 2] = np.float32(t[e]) / np.float32(episode_length)


@cuda.jit
def reset_beacons(mask, seed, episode, grid_length, num_agents, beacon_x, beacon_y, t):
    """New beacon and clock where ``mask`` is set.

    mask bool[E]; seed uint64; episode int32[E]; grid_length float32; num_agents int32;
    beacon_x, beacon_y float32[E]; t int32[E].
    """
    e = cuda.grid(1)
    if e < t.shape[0] and mask[e]:
        beacon_x[e] = reset_uniform_device(seed, e, episode[e], num_agents, 0, DRAWS_PER_AGENT) * grid_length
        beacon_y[e] = reset_uniform_device(seed, e, episode[e], num_agents, 1, DRAWS_PER_AGENT) * grid_length
        t[e] = 0


@cuda.jit
def reset_agents(mask, seed, episode, grid_length, episode_length, beacon_x, beacon_y, t,
                 pos_x, pos_y, observations):
    """New agent positions and first observations where ``mask`` is set (after reset_beacons).

    mask bool[E]; seed uint64; episode int32[E]; grid_length float32; episode_length int32;
    beacon_x, beacon_y float32[E]; t int32[E]; pos_x, pos_y float32[E, N];
    observations float32[E, N, 3].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs or not mask[e]:
        return
    pos_x[e, i] = reset_uniform_device(seed, e, episode[e], i, 0, DRAWS_PER_AGENT) * grid_length
    pos_y[e, i] = reset_uniform_device(seed, e, episode[e], i, 1, DRAWS_PER_AGENT) * grid_length
    write_observation(e, i, grid_length, episode_length, beacon_x, beacon_y, t, pos_x, pos_y, observations)
