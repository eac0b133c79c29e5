"""Numba CUDA kernels of simple_spread, one thread per agent (or, for the clock, per environment).

A step is five launches, each reading what the one before wrote: the agents' forces (from
the positions before anyone moves), the motion, each landmark's nearest agent, then the
rewards and the observations. Every product that feeds a sum is written with ``mul`` and
every sum with ``add`` or ``sub``, and sums run in the reference's order, so the kernels
compute its bits (warpsim.kernels.rounding).
"""

import math

import numpy as np
from numba import cuda

from warpsim.envs.simple_spread.params import CONTACT_DISTANCE, DRAWS_PER_AGENT
from warpsim.kernels.actions import clamp_device
from warpsim.kernels.indexing import agent_of_thread
from warpsim.kernels.mpe import DT, KEPT_VELOCITY, SENSITIVITY, contact_device, write_offsets
from warpsim.kernels.random import reset_uniform_device
from warpsim.kernels.rounding import add, mul, squared_distance, sub

ZERO = np.float32(0)
ONE = np.float32(1)
TWO = np.float32(2)
INFINITY = np.float32(np.inf)


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
def find_nearest_agents(pos_x, pos_y, landmark_x, landmark_y, nearest_distance):
    """Each landmark's distance to its nearest agent (a thread per landmark).

    pos_x, pos_y float32[E, N]; landmark_x, landmark_y float32[E, N]; nearest_distance float32[E, N].
    """
    num_envs, n = pos_x.shape
    e, landmark = agent_of_thread(n)
    if e >= num_envs:
        return
    nearest = INFINITY
    for j in range(n):
        dx, dy = sub(pos_x[e, j], landmark_x[e, landmark]), sub(pos_y[e, j], landmark_y[e, landmark])
        nearest = min(nearest, math.sqrt(squared_distance(dx, dy)))
    nearest_distance[e, landmark] = nearest


@cuda.jit
def reward_and_observe(global_weight, local_weight, landmark_slots, agent_slots, nearest_landmarks, nearest_agents,
                       nearest_distance, pos_x, pos_y, vel_x, vel_y, landmark_x, landmark_y, rewards, observations):
    """Each agent's reward, the shared coverage and its own collisions weighed, and its observation.

    global_weight, local_weight float32; landmark_slots, agent_slots int32; nearest_landmarks, nearest_agents bool;
    nearest_distance float32[E, N]; pos_x, pos_y, vel_x, vel_y float32[E, N]; landmark_x, landmark_y float32[E, N];
    rewards float32[E, N]; observations float32[E, N, D].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    coverage = ZERO
    for landmark in range(n):
        coverage = sub(coverage, nearest_distance[e, landmark])
    collisions = ZERO
    for j in range(n):
        if j != i and math.sqrt(squared_distance(sub(pos_x[e, j], pos_x[e, i]),
                                                 sub(pos_y[e, j], pos_y[e, i]))) < CONTACT_DISTANCE:
            collisions = sub(collisions, ONE)
    rewards[e, i] = add(mul(coverage, global_weight), mul(collisions, local_weight))
    write_observation(e, i, landmark_slots, agent_slots, nearest_landmarks, nearest_agents, pos_x, pos_y, vel_x,
                      vel_y, landmark_x, landmark_y, observations)


@cuda.jit(device=True)
def write_observation(e, i, landmark_slots, agent_slots, nearest_landmarks, nearest_agents, pos_x, pos_y, vel_x,
                      vel_y, landmark_x, landmark_y, observations):
    """MPE2's order: own velocity and position, the landmarks' offsets, the other agents', then zeros (utterances)."""
    x, y = pos_x[e, i], pos_y[e, i]
    observations[e, i, 0] = vel_x[e, i]
    observations[e, i, 1] = vel_y[e, i]
    observations[e, i, 2] = x
    observations[e, i, 3] = y
    at = write_offsets(observations, e, i, 4, landmark_slots, nearest_landmarks, x, y, landmark_x[e], landmark_y[e],
                       -1)
    at = write_offsets(observations, e, i, at, agent_slots, nearest_agents, x, y, pos_x[e], pos_y[e], i)
    while at < observations.shape[2]:
        observations[e, i, at] = ZERO
        at += 1


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


@cuda.jit
def observe_reset(mask, landmark_slots, agent_slots, nearest_landmarks, nearest_agents, pos_x, pos_y, vel_x, vel_y,
                  landmark_x, landmark_y, observations):
    """The first observations where ``mask`` is set (after reset_bodies).

    mask bool[E]; landmark_slots, agent_slots int32; nearest_landmarks, nearest_agents bool;
    pos_x, pos_y, vel_x, vel_y float32[E, N]; landmark_x, landmark_y float32[E, N]; observations float32[E, N, D].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs or not mask[e]:
        return
    write_observation(e, i, landmark_slots, agent_slots, nearest_landmarks, nearest_agents, pos_x, pos_y, vel_x,
                      vel_y, landmark_x, landmark_y, observations)
