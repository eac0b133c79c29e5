"""Numba CUDA kernels of simple_tag, one thread per agent (per environment for the obstacles' reset).

A step is five launches, each reading what the one before wrote: the clock, the agents' forces
(from the positions before anyone moves), the motion, each good agent's catches, then the rewards
and the observations. Every product that feeds a sum is written with ``mul`` and every sum with
``add`` or ``sub``, in the reference's order (warpsim.kernels.rounding).
"""

import math

import numpy as np
from numba import cuda

from warpsim.envs.simple_tag.params import CATCH_REWARD, DRAWS_PER_AGENT, OBSTACLE_SIZE, OBSTACLE_SPREAD
from warpsim.kernels.actions import clamp_device
from warpsim.kernels.exponential import exp_device
from warpsim.kernels.indexing import agent_of_thread
from warpsim.kernels.mpe import DT, KEPT_VELOCITY, contact_device
from warpsim.kernels.nearest_keys import EMPTY_KEY, key_id, nearest_after
from warpsim.kernels.random import reset_uniform_device
from warpsim.kernels.rounding import add, mul, squared_distance, sub

ZERO = np.float32(0)
ONE = np.float32(1)
TWO = np.float32(2)
TEN = np.float32(10)
EDGE = np.float32(0.9)
WALL = np.float32(1.0)


@cuda.jit(device=True)
def push(e, i, force_x, force_y, num_obstacles, size, pos_x, pos_y, obstacle_x, obstacle_y, forces_x, forces_y):
    """Agent i's force: its own, then the contact force of every other agent (agent 0 first) and obstacle."""
    x, y = pos_x[e, i], pos_y[e, i]
    for j in range(pos_x.shape[1]):
        if j != i:
            force_x, force_y = contact_device(force_x, force_y, sub(x, pos_x[e, j]), sub(y, pos_y[e, j]),
                                              add(size[i], size[j]))
    for obstacle in range(num_obstacles):
        dx, dy = sub(x, obstacle_x[e, obstacle]), sub(y, obstacle_y[e, obstacle])
        force_x, force_y = contact_device(force_x, force_y, dx, dy, add(size[i], OBSTACLE_SIZE))
    forces_x[e, i] = force_x
    forces_y[e, i] = force_y


@cuda.jit
def push_agents(actions, moves_x, moves_y, num_obstacles, acceleration, size, pos_x, pos_y, obstacle_x, obstacle_y,
                force_x, force_y):
    """Each agent's force: its move's, times its acceleration, and the contacts'.

    actions int32[E, N, 1]; moves_x, moves_y float32[5]; num_obstacles int32; acceleration, size float32[N];
    pos_x, pos_y float32[E, N];
    obstacle_x, obstacle_y float32[E, L]; force_x, force_y float32[E, N].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    move = min(max(actions[e, i, 0], 0), moves_x.shape[0] - 1)
    push(e, i, mul(moves_x[move], acceleration[i]), mul(moves_y[move], acceleration[i]), num_obstacles, size, pos_x,
         pos_y, obstacle_x, obstacle_y, force_x, force_y)


@cuda.jit
def push_agents_continuous(actions, num_obstacles, acceleration, size, pos_x, pos_y, obstacle_x, obstacle_y, force_x,
                           force_y):
    """``push_agents`` with MPE's Box(0, 1, (5,)) actions, each clamped to [0, 1]: (a2 - a1, a4 - a3) x acceleration.

    actions float32[E, N, 5]; num_obstacles int32; acceleration, size float32[N]; pos_x, pos_y float32[E, N];
    obstacle_x, obstacle_y float32[E, L]; force_x, force_y float32[E, N].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    a1, a2 = clamp_device(actions[e, i, 1], ZERO, ONE), clamp_device(actions[e, i, 2], ZERO, ONE)
    a3, a4 = clamp_device(actions[e, i, 3], ZERO, ONE), clamp_device(actions[e, i, 4], ZERO, ONE)
    push(e, i, mul(sub(a2, a1), acceleration[i]), mul(sub(a4, a3), acceleration[i]), num_obstacles, size, pos_x,
         pos_y, obstacle_x, obstacle_y, force_x, force_y)


@cuda.jit
def move_agents(max_speed, force_x, force_y, pos_x, pos_y, vel_x, vel_y):
    """Position by the velocity, then the velocity damped, pushed and held to the agent's top speed (MPE's order).

    max_speed float32[N]; force_x, force_y float32[E, N]; pos_x, pos_y, vel_x, vel_y float32[E, N].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    pos_x[e, i] = add(pos_x[e, i], mul(vel_x[e, i], DT))
    pos_y[e, i] = add(pos_y[e, i], mul(vel_y[e, i], DT))
    vx = add(mul(vel_x[e, i], KEPT_VELOCITY), mul(force_x[e, i], DT))
    vy = add(mul(vel_y[e, i], KEPT_VELOCITY), mul(force_y[e, i], DT))
    speed = math.sqrt(squared_distance(vx, vy))
    if speed > max_speed[i]:
        vx, vy = mul(vx / speed, max_speed[i]), mul(vy / speed, max_speed[i])
    vel_x[e, i] = vx
    vel_y[e, i] = vy


@cuda.jit
def count_catches(num_adversaries, size, pos_x, pos_y, caught, tags):
    """Each good agent's adversaries touching it (0 for an adversary), added to its environment's tags.

    num_adversaries int32; size float32[N]; pos_x, pos_y float32[E, N]; caught int32[E, N]; tags int32[E].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    count = 0
    if i >= num_adversaries:
        for a in range(num_adversaries):
            distance = math.sqrt(squared_distance(sub(pos_x[e, a], pos_x[e, i]), sub(pos_y[e, a], pos_y[e, i])))
            if distance < add(size[a], size[i]):
                count += 1
    caught[e, i] = count
    if count:
        cuda.atomic.add(tags, e, count)


@cuda.jit(device=True)
def boundary(x):
    """MPE's penalty of a good agent at |position| x on an axis; twin of ``reference.boundary``."""
    if x < EDGE:
        return ZERO
    if x < WALL:
        return mul(sub(x, EDGE), TEN)
    return min(exp_device(sub(mul(x, TWO), TWO)), TEN)


@cuda.jit
def reward_and_observe(num_adversaries, num_obstacles, obstacle_slots, agent_slots, nearest_obstacles,
                       nearest_agents, caught, pos_x, pos_y, vel_x, vel_y, obstacle_x, obstacle_y, rewards,
                       observations):
    """Each agent's reward and observation. An adversary earns 10 for every touch of a good agent by any
    adversary; a good agent pays 10 for each adversary touching it, and its boundary penalty.

    num_adversaries, num_obstacles, obstacle_slots, agent_slots int32; nearest_obstacles, nearest_agents bool;
    caught int32[E, N]; pos_x, pos_y, vel_x, vel_y float32[E, N]; obstacle_x, obstacle_y float32[E, L];
    rewards float32[E, N]; observations float32[E, N, D].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    if i < num_adversaries:
        catches = 0
        for good in range(num_adversaries, n):
            catches += caught[e, good]
        rewards[e, i] = mul(CATCH_REWARD, np.float32(catches))
    else:
        penalty = -mul(CATCH_REWARD, np.float32(caught[e, i]))
        rewards[e, i] = sub(sub(penalty, boundary(abs(pos_x[e, i]))), boundary(abs(pos_y[e, i])))
    write_observation(e, i, num_adversaries, num_obstacles, obstacle_slots, agent_slots, nearest_obstacles,
                      nearest_agents, pos_x, pos_y, vel_x, vel_y, obstacle_x, obstacle_y, observations)


@cuda.jit(device=True)
def write_observation(e, i, num_adversaries, num_obstacles, obstacle_slots, agent_slots, nearest_obstacles,
                      nearest_agents, pos_x, pos_y, vel_x, vel_y, obstacle_x, obstacle_y, observations):
    """MPE2's order: own velocity and position, the obstacles' offsets, the other agents' offsets, then the good
    ones' velocities (nearest first, zeros past those there are and for adversaries, when partial)."""
    n = pos_x.shape[1]
    x, y = pos_x[e, i], pos_y[e, i]
    observations[e, i, 0] = vel_x[e, i]
    observations[e, i, 1] = vel_y[e, i]
    observations[e, i, 2] = x
    observations[e, i, 3] = y
    at = 4
    if nearest_obstacles:
        floor = np.uint64(0)
        for _ in range(obstacle_slots):
            key = nearest_after(floor, x, y, obstacle_x[e, :num_obstacles], obstacle_y[e, :num_obstacles], -1)
            dx, dy = ZERO, ZERO
            if key != EMPTY_KEY:
                dx, dy = sub(obstacle_x[e, key_id(key)], x), sub(obstacle_y[e, key_id(key)], y)
                floor = key + np.uint64(1)
            observations[e, i, at] = dx
            observations[e, i, at + 1] = dy
            at += 2
    else:
        for obstacle in range(num_obstacles):
            observations[e, i, at] = sub(obstacle_x[e, obstacle], x)
            observations[e, i, at + 1] = sub(obstacle_y[e, obstacle], y)
            at += 2
    if nearest_agents:
        velocities = at + 2 * agent_slots
        floor = np.uint64(0)
        for _ in range(agent_slots):
            key = nearest_after(floor, x, y, pos_x[e], pos_y[e], i)
            dx, dy, vx, vy = ZERO, ZERO, ZERO, ZERO
            if key != EMPTY_KEY:
                j = key_id(key)
                dx, dy = sub(pos_x[e, j], x), sub(pos_y[e, j], y)
                if j >= num_adversaries:
                    vx, vy = vel_x[e, j], vel_y[e, j]
                floor = key + np.uint64(1)
            observations[e, i, at] = dx
            observations[e, i, at + 1] = dy
            observations[e, i, velocities] = vx
            observations[e, i, velocities + 1] = vy
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
def reset_obstacles(mask, seed, episode, num_obstacles, pos_x, obstacle_x, obstacle_y):
    """New obstacles, uniform in [-0.9, 0.9]^2, where ``mask`` is set (obstacle l draws as agent N + l).

    mask bool[E]; seed uint64; episode int32[E]; num_obstacles int32; pos_x float32[E, N];
    obstacle_x, obstacle_y float32[E, L].
    """
    e = cuda.grid(1)
    if e >= obstacle_x.shape[0] or not mask[e]:
        return
    n = pos_x.shape[1]
    spread = mul(TWO, OBSTACLE_SPREAD)
    for obstacle in range(num_obstacles):
        u = reset_uniform_device(seed, e, episode[e], n + obstacle, 0, DRAWS_PER_AGENT)
        obstacle_x[e, obstacle] = sub(mul(u, spread), OBSTACLE_SPREAD)
        u = reset_uniform_device(seed, e, episode[e], n + obstacle, 1, DRAWS_PER_AGENT)
        obstacle_y[e, obstacle] = sub(mul(u, spread), OBSTACLE_SPREAD)


@cuda.jit
def observe_reset(mask, num_adversaries, num_obstacles, obstacle_slots, agent_slots, nearest_obstacles,
                  nearest_agents, pos_x, pos_y, vel_x, vel_y, obstacle_x, obstacle_y, observations):
    """The first observations where ``mask`` is set (after the resets).

    mask bool[E]; num_adversaries, num_obstacles, obstacle_slots, agent_slots int32;
    nearest_obstacles, nearest_agents bool;
    pos_x, pos_y, vel_x, vel_y float32[E, N]; obstacle_x, obstacle_y float32[E, L]; observations float32[E, N, D].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs or not mask[e]:
        return
    write_observation(e, i, num_adversaries, num_obstacles, obstacle_slots, agent_slots, nearest_obstacles,
                      nearest_agents, pos_x, pos_y, vel_x, vel_y, obstacle_x, obstacle_y, observations)
