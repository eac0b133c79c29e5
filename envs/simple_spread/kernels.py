"""Numba CUDA kernels of simple_spread that take one thread per agent (or, for the clock, per environment).

A step is four launches, each reading what the one before wrote: the clock, the agents' forces (from
the positions before anyone moves), the motion, then the rewards and the observations, which search
grids of the bodies with a block per environment (grid_kernels.py). Every product that feeds a sum is
written with ``mul`` and every sum with ``add`` or ``sub``, and sums run in the reference's order, so
the kernels compute its bits (warpsim.kernels.rounding).
"""

import numpy as np
from numba import cuda

from warpsim.envs.simple_spread.params import CONTACT_DISTANCE, DRAWS_PER_AGENT
from warpsim.kernels.actions import clamp_device
from warpsim.kernels.indexing import agent_of_thread
from warpsim.kernels.mpe import DT, KEPT_VELOCITY, SENSITIVITY, contact_device
from warpsim.kernels.random import reset_uniform_device
from warpsim.kernels.rounding import add, mul, sub

ZERO = np.float32(0)
ONE = np.float32(1)
TWO = np.float32(2)


@cuda.jit(device=True)
def contact_forces(e, i, force_x, force_y, pos_x, pos_y):
    """(force_x, force_y) plus the contact force of every other agent of environment e on agent i, agent 0 first."""
    x, y = pos_x[e, i], pos_y[e, i]
    for j in range(pos_x.shape[1]):
        if j != i:
            force_x, force_y = contact_device(force_x, force_y, sub(x, pos_x[e, j]), sub(y, pos_y[e, j]),
                                              CONTACT_DISTANCE)
    return force_x, force_y


@cuda.jit
def push_agents(actions, moves_x, moves_y, pos_x, pos_y, force_x, force_y):
    """Each agent's force: its move's and the contacts'.

    actions int32[E, N, 1]; moves_x, moves_y float32[5]; pos_x, pos_y float32[E, N];
    force_x, force_y float32[E, N].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    move = min(max(actions[e, i, 0], 0), moves_x.shape[0] - 1)
    force_x[e, i], force_y[e, i] = contact_forces(e, i, mul(moves_x[move], SENSITIVITY),
                                                  mul(moves_y[move], SENSITIVITY), pos_x, pos_y)


@cuda.jit
def push_agents_continuous(actions, pos_x, pos_y, force_x, force_y):
    """``push_agents`` with MPE's Box(0, 1, (5,)) actions, each clamped to [0, 1]: a force (a2 - a1, a4 - a3) x 5.

    actions float32[E, N, 5]; pos_x, pos_y float32[E, N]; force_x, force_y float32[E, N].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    a1, a2 = clamp_device(actions[e, i, 1], ZERO, ONE), clamp_device(actions[e, i, 2], ZERO, ONE)
    a3, a4 = clamp_device(actions[e, i, 3], ZERO, ONE), clamp_device(actions[e, i, 4], ZERO, ONE)
    force_x[e, i], force_y[e, i] = contact_forces(e, i, mul(sub(a2, a1), SENSITIVITY), mul(sub(a4, a3), SENSITIVITY),
                                                  pos_x, pos_y)


@cuda.jit
def move_agents(force_x, force_y, pos_x, pos_y, vel_x, vel_y):
    """Position by the velocity, then the velocity damped and pushed (MPE's order).

    force_x, force_y float32[E, N]; pos_x, pos_y, vel_x, vel_y float32[E, N].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    pos_x[e, i] = add(pos_x[e, i], mul(vel_x[e, i], DT))
    pos_y[e, i] = add(pos_y[e, i], mul(vel_y[e, i], DT))
    vel_x[e, i] = add(mul(vel_x[e, i], KEPT_VELOCITY), mul(force_x[e, i], DT))
    vel_y[e, i] = add(mul(vel_y[e, i], KEPT_VELOCITY), mul(force_y[e, i], DT))


@cuda.jit
def reset_bodies(mask, seed, episode, pos_x, pos_y, vel_x, vel_y, landmark_x, landmark_y, t):
    """New agents at rest and landmarks, uniform in [-1, 1]^2, where ``mask`` is set (agent i draws landmark i).

    mask bool[E]; seed uint64; episode int32[E]; pos_x, pos_y, vel_x, vel_y float32[E, N];
    landmark_x, landmark_y float32[E, N]; t int32[E].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs or not mask[e]:
        return
    pos_x[e, i] = sub(mul(reset_uniform_device(seed, e, episode[e], i, 0, DRAWS_PER_AGENT), TWO), ONE)
    pos_y[e, i] = sub(mul(reset_uniform_device(seed, e, episode[e], i, 1, DRAWS_PER_AGENT), TWO), ONE)
    landmark_x[e, i] = sub(mul(reset_uniform_device(seed, e, episode[e], i, 2, DRAWS_PER_AGENT), TWO), ONE)
    landmark_y[e, i] = sub(mul(reset_uniform_device(seed, e, episode[e], i, 3, DRAWS_PER_AGENT), TWO), ONE)
    vel_x[e, i] = ZERO
    vel_y[e, i] = ZERO
    if i == 0:
        t[e] = 0
