"""Numba CUDA kernels of simple_adversary, one thread per agent (per environment for the landmarks' reset).

A step is three launches: the clock, the motion (agents do not touch: no contact forces), then the rewards
and the observations. Products that feed sums are written with ``mul``, sums with ``add`` or ``sub``
(warpsim.kernels.rounding), in the reference's order.
"""

import math

import numpy as np
from numba import cuda

from warpsim.envs.simple_adversary.params import DRAWS_PER_AGENT
from warpsim.kernels.actions import clamp_device
from warpsim.kernels.indexing import agent_of_thread
from warpsim.kernels.mpe import DT, KEPT_VELOCITY, SENSITIVITY, write_offsets
from warpsim.kernels.random import reset_uniform_device
from warpsim.kernels.rounding import add, mul, squared_distance, sub

ZERO = np.float32(0)
ONE = np.float32(1)
TWO = np.float32(2)
INFINITY = np.float32(np.inf)


@cuda.jit(device=True)
def move(e, i, force_x, force_y, pos_x, pos_y, vel_x, vel_y):
    """Position by the velocity, then the velocity damped and pushed by the agent's own force (MPE's order)."""
    pos_x[e, i] = add(pos_x[e, i], mul(vel_x[e, i], DT))
    pos_y[e, i] = add(pos_y[e, i], mul(vel_y[e, i], DT))
    vel_x[e, i] = add(mul(vel_x[e, i], KEPT_VELOCITY), mul(force_x, DT))
    vel_y[e, i] = add(mul(vel_y[e, i], KEPT_VELOCITY), mul(force_y, DT))


@cuda.jit
def move_agents(actions, moves_x, moves_y, pos_x, pos_y, vel_x, vel_y):
    """Each agent moved by its action (a force of 5).

    actions int32[E, N, 1]; moves_x, moves_y float32[5]; pos_x, pos_y, vel_x, vel_y float32[E, N].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    choice = min(max(actions[e, i, 0], 0), moves_x.shape[0] - 1)
    move(e, i, mul(moves_x[choice], SENSITIVITY), mul(moves_y[choice], SENSITIVITY), pos_x, pos_y, vel_x, vel_y)


@cuda.jit
def move_agents_continuous(actions, pos_x, pos_y, vel_x, vel_y):
    """``move_agents`` with MPE's Box(0, 1, (5,)) actions, each clamped to [0, 1]: (a2 - a1, a4 - a3) x 5.

    actions float32[E, N, 5]; pos_x, pos_y, vel_x, vel_y float32[E, N].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    a1, a2 = clamp_device(actions[e, i, 1], ZERO, ONE), clamp_device(actions[e, i, 2], ZERO, ONE)
    a3, a4 = clamp_device(actions[e, i, 3], ZERO, ONE), clamp_device(actions[e, i, 4], ZERO, ONE)
    move(e, i, mul(sub(a2, a1), SENSITIVITY), mul(sub(a4, a3), SENSITIVITY), pos_x, pos_y, vel_x, vel_y)


@cuda.jit(device=True)
def distance_to(e, j, x, y, pos_x, pos_y):
    return math.sqrt(squared_distance(sub(pos_x[e, j], x), sub(pos_y[e, j], y)))


@cuda.jit
def reward_and_observe(landmark_slots, agent_slots, nearest_landmarks, nearest_agents, goal, pos_x, pos_y,
                       landmark_x, landmark_y, rewards, observations):
    """Each agent's reward and observation. The adversary (agent 0) earns minus its distance to the goal; every
    good agent its distance minus the distance of the good agent nearest the goal.

    landmark_slots, agent_slots int32; nearest_landmarks, nearest_agents bool; goal int32[E];
    pos_x, pos_y float32[E, N]; landmark_x, landmark_y float32[E, L]; rewards float32[E, N];
    observations float32[E, N, D].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    gx, gy = landmark_x[e, goal[e]], landmark_y[e, goal[e]]
    adversary = distance_to(e, 0, gx, gy, pos_x, pos_y)
    if i == 0:
        rewards[e, i] = -adversary
    else:
        nearest = INFINITY
        for j in range(1, n):
            nearest = min(nearest, distance_to(e, j, gx, gy, pos_x, pos_y))
        rewards[e, i] = add(-nearest, adversary)
    write_observation(e, i, landmark_slots, agent_slots, nearest_landmarks, nearest_agents, goal, pos_x, pos_y,
                      landmark_x, landmark_y, observations)


@cuda.jit(device=True)
def write_observation(e, i, landmark_slots, agent_slots, nearest_landmarks, nearest_agents, goal, pos_x, pos_y,
                      landmark_x, landmark_y, observations):
    """MPE2's order: a good agent's goal offset, then the landmarks' offsets and the other agents'; zeros past."""
    x, y = pos_x[e, i], pos_y[e, i]
    at = 0
    if i > 0:
        observations[e, i, 0] = sub(landmark_x[e, goal[e]], x)
        observations[e, i, 1] = sub(landmark_y[e, goal[e]], y)
        at = 2
    at = write_offsets(observations, e, i, at, landmark_slots, nearest_landmarks, x, y, landmark_x[e], landmark_y[e],
                       -1)
    at = write_offsets(observations, e, i, at, agent_slots, nearest_agents, x, y, pos_x[e], pos_y[e], i)
    while at < observations.shape[2]:
        observations[e, i, at] = ZERO
        at += 1


@cuda.jit
def reset_landmarks(mask, seed, episode, pos_x, landmark_x, landmark_y, goal):
    """New landmarks, uniform in [-1, 1]^2, and a goal uniform among them, where ``mask`` is set.

    mask bool[E]; seed uint64; episode int32[E]; pos_x float32[E, N]; landmark_x, landmark_y float32[E, L];
    goal int32[E].
    """
    e = cuda.grid(1)
    if e >= landmark_x.shape[0] or not mask[e]:
        return
    agents, landmarks = pos_x.shape[1], landmark_x.shape[1]
    for landmark in range(landmarks):
        u = reset_uniform_device(seed, e, episode[e], agents + landmark, 0, DRAWS_PER_AGENT)
        landmark_x[e, landmark] = sub(mul(u, TWO), ONE)
        u = reset_uniform_device(seed, e, episode[e], agents + landmark, 1, DRAWS_PER_AGENT)
        landmark_y[e, landmark] = sub(mul(u, TWO), ONE)
    drawn = mul(reset_uniform_device(seed, e, episode[e], agents + landmarks, 0, DRAWS_PER_AGENT),
                np.float32(landmarks))
    goal[e] = min(np.int32(drawn), landmarks - 1)


@cuda.jit
def observe_reset(mask, landmark_slots, agent_slots, nearest_landmarks, nearest_agents, goal, pos_x, pos_y,
                  landmark_x, landmark_y, observations):
    """The first observations where ``mask`` is set (after the resets).

    mask bool[E]; landmark_slots, agent_slots int32; nearest_landmarks, nearest_agents bool; goal int32[E];
    pos_x, pos_y float32[E, N]; landmark_x, landmark_y float32[E, L]; observations float32[E, N, D].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs or not mask[e]:
        return
    write_observation(e, i, landmark_slots, agent_slots, nearest_landmarks, nearest_agents, goal, pos_x, pos_y,
                      landmark_x, landmark_y, observations)
