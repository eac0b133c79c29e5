"""Numba CUDA kernels of simple_tag that take one thread per agent (per environment for the obstacles' reset).

A step is four launches, each reading what the one before wrote: the clock, the agents' forces
(from the positions before anyone moves), the motion, then the touches, rewards and observations,
which search grids of the agents with a block per environment (grid_kernels.py). Every product
that feeds a sum is written with ``mul`` and every sum with ``add`` or ``sub``, in the reference's
order (warpsim.kernels.rounding).
"""

import math

import numpy as np
from numba import cuda

from warpsim.envs.simple_tag.params import DRAWS_PER_AGENT, OBSTACLE_SIZE, OBSTACLE_SPREAD
from warpsim.kernels.actions import clamp_device
from warpsim.kernels.exponential import exp_device
from warpsim.kernels.indexing import agent_of_thread
from warpsim.kernels.mpe import DT, KEPT_VELOCITY, contact_device
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


@cuda.jit(device=True)
def boundary(x):
    """MPE's penalty of a good agent at |position| x on an axis; twin of ``reference.boundary``."""
    if x < EDGE:
        return ZERO
    if x < WALL:
        return mul(sub(x, EDGE), TEN)
    return min(exp_device(sub(mul(x, TWO), TWO)), TEN)


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
