"""NumPy reference of the template environment: in place on ``v`` (the env's views)."""

import numpy as np

from warpsim.envs.template.params import DRAWS_PER_AGENT
from warpsim.kernels.actions import clamp
from warpsim.kernels.random import reset_uniform

MOVES_X = np.array([0, 1, -1, 0, 0], np.float32)
"""x change per action (0 stay, 1 +x, 2 -x, 3 +y, 4 -y), times the step size."""
MOVES_Y = np.array([0, 0, 0, 1, -1], np.float32)


def reset(v, p, seed, envs):
    """New beacon and agent positions for environments ``envs`` (int64[R])."""
    n, length = v.pos_x.shape[1], np.float32(p.grid_length)
    stream, counter = envs[:, None], v.episode[envs][:, None]
    agent = np.arange(n)[None, :]
    v.pos_x[envs] = reset_uniform(seed, stream, counter, agent, 0, DRAWS_PER_AGENT) * length
    v.pos_y[envs] = reset_uniform(seed, stream, counter, agent, 1, DRAWS_PER_AGENT) * length
    v.beacon_x[envs] = reset_uniform(seed, envs, v.episode[envs], n, 0, DRAWS_PER_AGENT) * length
    v.beacon_y[envs] = reset_uniform(seed, envs, v.episode[envs], n, 1, DRAWS_PER_AGENT) * length
    v.t[envs] = 0
    observe(v, p, envs)


def step(v, p):
    """Clock, moves, rewards, done, then observations of every environment."""
    v.t[:] += 1
    v.done[:] = v.t >= p.episode_length
    if p.continuous_actions:  # a velocity in [-1, 1]^2, clamped to it
        move_x, move_y = clamp(v.actions[:, :, 0], -1, 1), clamp(v.actions[:, :, 1], -1, 1)
    else:
        move = np.clip(v.actions[:, :, 0], 0, len(MOVES_X) - 1)
        move_x, move_y = MOVES_X[move], MOVES_Y[move]
    step_size, length = np.float32(p.step_size), np.float32(p.grid_length)
    v.pos_x[:] = np.minimum(np.maximum(v.pos_x + move_x * step_size, 0), length)
    v.pos_y[:] = np.minimum(np.maximum(v.pos_y + move_y * step_size, 0), length)
    dx = v.beacon_x[:, None] - v.pos_x
    dy = v.beacon_y[:, None] - v.pos_y
    reached = dx * dx + dy * dy < np.float32(p.reach_radius) ** 2
    v.rewards[:] = reached.astype(np.float32)
    observe(v, p, np.arange(v.pos_x.shape[0]))


def observe(v, p, envs):
    """[beacon x - x, beacon y - y] / L and t / T for each agent of ``envs``."""
    length = np.float32(p.grid_length)
    v.observations[envs, :, 0] = (v.beacon_x[envs, None] - v.pos_x[envs]) / length
    v.observations[envs, :, 1] = (v.beacon_y[envs, None] - v.pos_y[envs]) / length
    v.observations[envs, :, 2] = (v.t[envs].astype(np.float32) / np.float32(p.episode_length))[:, None]
