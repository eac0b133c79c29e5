"""NumPy reference of simple_speaker_listener: in place on ``v`` (the environment's views), float32 throughout."""

import numpy as np

from warpsim.envs.simple_adversary.reference import goal_position
from warpsim.envs.simple_speaker_listener.params import (
    LANDMARKS,
    LANDMARK_COLOURS,
    LISTENER,
    SPEAKER,
    SimpleSpeakerListenerParams,
)
from warpsim.kernels.actions import clamp
from warpsim.kernels.mpe import BODY_DRAWS, DT, KEPT_VELOCITY, MOVES_X, MOVES_Y, SENSITIVITY
from warpsim.kernels.random import reset_uniform

ONE, TWO = np.float32(1), np.float32(2)


def reset(v, p: SimpleSpeakerListenerParams, seed: np.uint64, envs: np.ndarray) -> None:
    """Both agents and the landmarks uniform in [-1, 1]^2 (landmark l draws as body 2 + l), at rest, a goal
    uniform among the landmarks (drawn as body 5), and nothing said yet."""
    stream, counter = envs[:, None], v.episode[envs][:, None]
    agent, landmark = np.arange(2)[None, :], 2 + np.arange(LANDMARKS)[None, :]
    v.pos_x[envs] = reset_uniform(seed, stream, counter, agent, 0, BODY_DRAWS) * TWO - ONE
    v.pos_y[envs] = reset_uniform(seed, stream, counter, agent, 1, BODY_DRAWS) * TWO - ONE
    v.landmark_x[envs] = reset_uniform(seed, stream, counter, landmark, 0, BODY_DRAWS) * TWO - ONE
    v.landmark_y[envs] = reset_uniform(seed, stream, counter, landmark, 1, BODY_DRAWS) * TWO - ONE
    drawn = reset_uniform(seed, envs, v.episode[envs], 2 + LANDMARKS, 0, BODY_DRAWS) * np.float32(LANDMARKS)
    v.goal[envs] = np.minimum(drawn.astype(np.int32), LANDMARKS - 1)
    v.vel_x[envs] = 0
    v.vel_y[envs] = 0
    v.word[envs] = 0
    v.t[envs] = 0
    observe(v, envs)


def step(v, p: SimpleSpeakerListenerParams) -> None:
    """Clock and done, the speaker's word and the listener's motion (the speaker does not move), the shared
    reward, then observations of every environment."""
    v.t[:] += 1
    v.done[:] = v.t >= p.max_cycles
    if p.continuous_actions:
        v.word[:] = clamp(v.actions[:, SPEAKER, :LANDMARKS], 0, 1)
        a = clamp(v.actions[:, LISTENER], 0, 1)
        force_x, force_y = (a[:, 2] - a[:, 1]) * SENSITIVITY, (a[:, 4] - a[:, 3]) * SENSITIVITY
    else:
        said = np.clip(v.actions[:, SPEAKER, 0], 0, LANDMARKS - 1)
        v.word[:] = np.arange(LANDMARKS)[None, :] == said[:, None]
        move = np.clip(v.actions[:, LISTENER, 0], 0, len(MOVES_X) - 1)
        force_x, force_y = MOVES_X[move] * SENSITIVITY, MOVES_Y[move] * SENSITIVITY
    v.pos_x[:, LISTENER] = v.pos_x[:, LISTENER] + v.vel_x[:, LISTENER] * DT
    v.pos_y[:, LISTENER] = v.pos_y[:, LISTENER] + v.vel_y[:, LISTENER] * DT
    v.vel_x[:, LISTENER] = v.vel_x[:, LISTENER] * KEPT_VELOCITY + force_x * DT
    v.vel_y[:, LISTENER] = v.vel_y[:, LISTENER] * KEPT_VELOCITY + force_y * DT
    goal_x, goal_y = goal_position(v, np.arange(v.pos_x.shape[0]))
    dx, dy = v.pos_x[:, LISTENER] - goal_x, v.pos_y[:, LISTENER] - goal_y
    v.rewards[:] = -(dx * dx + dy * dy)[:, None]
    observe(v, np.arange(v.pos_x.shape[0]))


def observe(v, envs: np.ndarray) -> None:
    """MPE2's order: the speaker sees the goal's colour (zeros past it); the listener its velocity, the landmarks'
    offsets and the word."""
    x, y = v.pos_x[envs, LISTENER][:, None], v.pos_y[envs, LISTENER][:, None]
    offsets = np.stack([v.landmark_x[envs] - x, v.landmark_y[envs] - y], axis=2).reshape(len(envs), -1)
    v.observations[envs, SPEAKER] = 0
    v.observations[envs, SPEAKER, :LANDMARKS] = LANDMARK_COLOURS[v.goal[envs]]
    v.observations[envs, LISTENER] = np.concatenate(
        [v.vel_x[envs, LISTENER][:, None], v.vel_y[envs, LISTENER][:, None], offsets, v.word[envs]], axis=1)
