"""Numba CUDA kernels of simple_speaker_listener, one thread per agent (per environment for the landmarks' reset,
simple_adversary's kernel).

A step is three launches: the clock; the speaker's word and the listener's motion (agent 0's thread and agent
1's); then the shared reward and the observations, which read both. Products that feed sums are written with
``mul``, sums with ``add`` or ``sub`` (warpsim.kernels.rounding), in the reference's order.
"""

import numpy as np
from numba import cuda

from warpsim.envs.simple_adversary.kernels import move
from warpsim.envs.simple_speaker_listener.params import LANDMARKS, LISTENER, SPEAKER
from warpsim.kernels.actions import clamp_device
from warpsim.kernels.indexing import agent_of_thread
from warpsim.kernels.mpe import SENSITIVITY
from warpsim.kernels.rounding import add, mul, sub

ZERO = np.float32(0)
ONE = np.float32(1)


@cuda.jit
def speak_and_move(actions, moves_x, moves_y, pos_x, pos_y, vel_x, vel_y, word):
    """The speaker says its action's word (one-hot); the listener moves by its action (a force of 5).

    actions int32[E, N, 1]; moves_x, moves_y float32[5]; pos_x, pos_y, vel_x, vel_y float32[E, N];
    word float32[E, 3].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    if i == SPEAKER:
        said = min(max(actions[e, i, 0], 0), LANDMARKS - 1)
        for k in range(LANDMARKS):
            word[e, k] = ONE if k == said else ZERO
        return
    choice = min(max(actions[e, i, 0], 0), moves_x.shape[0] - 1)
    move(e, i, mul(moves_x[choice], SENSITIVITY), mul(moves_y[choice], SENSITIVITY), pos_x, pos_y, vel_x, vel_y)


@cuda.jit
def speak_and_move_continuous(actions, pos_x, pos_y, vel_x, vel_y, word):
    """``speak_and_move`` with MPE's Box(0, 1) actions, each clamped to [0, 1]: the speaker's first 3 components are
    its word; the listener's force is (a2 - a1, a4 - a3) x 5.

    actions float32[E, N, 5]; pos_x, pos_y, vel_x, vel_y float32[E, N]; word float32[E, 3].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    if i == SPEAKER:
        for k in range(LANDMARKS):
            word[e, k] = clamp_device(actions[e, i, k], ZERO, ONE)
        return
    a1, a2 = clamp_device(actions[e, i, 1], ZERO, ONE), clamp_device(actions[e, i, 2], ZERO, ONE)
    a3, a4 = clamp_device(actions[e, i, 3], ZERO, ONE), clamp_device(actions[e, i, 4], ZERO, ONE)
    move(e, i, mul(sub(a2, a1), SENSITIVITY), mul(sub(a4, a3), SENSITIVITY), pos_x, pos_y, vel_x, vel_y)


@cuda.jit
def reward_and_observe(landmark_colours, goal, pos_x, pos_y, vel_x, vel_y, landmark_x, landmark_y, word, rewards,
                       observations):
    """Both agents earn minus the squared distance from the listener to the goal; each writes its observation.

    landmark_colours float32[3, 3]; goal int32[E]; pos_x, pos_y, vel_x, vel_y float32[E, N];
    landmark_x, landmark_y float32[E, L]; word float32[E, 3]; rewards float32[E, N]; observations float32[E, N, D].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    dx = sub(pos_x[e, LISTENER], landmark_x[e, goal[e]])
    dy = sub(pos_y[e, LISTENER], landmark_y[e, goal[e]])
    rewards[e, i] = -add(mul(dx, dx), mul(dy, dy))
    write_observation(e, i, landmark_colours, goal, pos_x, pos_y, vel_x, vel_y, landmark_x, landmark_y, word,
                      observations)


@cuda.jit(device=True)
def write_observation(e, i, landmark_colours, goal, pos_x, pos_y, vel_x, vel_y, landmark_x, landmark_y, word,
                      observations):
    """MPE2's order: the speaker's goal colour, zeros past it; the listener's velocity, the landmarks' offsets and
    the word."""
    if i == SPEAKER:
        for k in range(LANDMARKS):
            observations[e, i, k] = landmark_colours[goal[e], k]
        for k in range(LANDMARKS, observations.shape[2]):
            observations[e, i, k] = ZERO
        return
    x, y = pos_x[e, i], pos_y[e, i]
    observations[e, i, 0] = vel_x[e, i]
    observations[e, i, 1] = vel_y[e, i]
    for landmark in range(LANDMARKS):
        observations[e, i, 2 + 2 * landmark] = sub(landmark_x[e, landmark], x)
        observations[e, i, 3 + 2 * landmark] = sub(landmark_y[e, landmark], y)
    for k in range(LANDMARKS):
        observations[e, i, 2 + 2 * LANDMARKS + k] = word[e, k]


@cuda.jit
def observe_reset(mask, landmark_colours, goal, pos_x, pos_y, vel_x, vel_y, landmark_x, landmark_y, word,
                  observations):
    """The first observations where ``mask`` is set (after the resets), with nothing said: the speaker's thread
    clears the word, and the listener's writes zeros for it rather than read it.

    mask bool[E]; landmark_colours float32[3, 3]; goal int32[E]; pos_x, pos_y, vel_x, vel_y float32[E, N];
    landmark_x, landmark_y float32[E, L]; word float32[E, 3]; observations float32[E, N, D].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs or not mask[e]:
        return
    write_observation(e, i, landmark_colours, goal, pos_x, pos_y, vel_x, vel_y, landmark_x, landmark_y, word,
                      observations)
    if i == SPEAKER:
        for k in range(LANDMARKS):
            word[e, k] = ZERO
    else:
        for k in range(LANDMARKS):
            observations[e, i, 2 + 2 * LANDMARKS + k] = ZERO
