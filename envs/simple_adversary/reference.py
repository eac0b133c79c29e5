"""NumPy reference of simple_adversary: in place on ``v`` (the environment's views), float32 throughout."""

import numpy as np

from warpsim.envs.simple_adversary.params import DRAWS_PER_AGENT, SimpleAdversaryParams
from warpsim.envs.simple_tag.reference import interleave, nearest
from warpsim.kernels.actions import clamp
from warpsim.kernels.mpe import DT, KEPT_VELOCITY, MOVES_X, MOVES_Y, SENSITIVITY
from warpsim.kernels.random import reset_uniform

ONE, TWO = np.float32(1), np.float32(2)


def reset(v, p: SimpleAdversaryParams, seed: np.uint64, envs: np.ndarray) -> None:
    """Agents and landmarks uniform in [-1, 1]^2, agents at rest, and a goal landmark uniform among the N."""
    n = p.N + 1
    stream, counter = envs[:, None], v.episode[envs][:, None]
    agent, landmark = np.arange(n)[None, :], n + np.arange(p.N)[None, :]
    v.pos_x[envs] = reset_uniform(seed, stream, counter, agent, 0, DRAWS_PER_AGENT) * TWO - ONE
    v.pos_y[envs] = reset_uniform(seed, stream, counter, agent, 1, DRAWS_PER_AGENT) * TWO - ONE
    v.landmark_x[envs] = reset_uniform(seed, stream, counter, landmark, 0, DRAWS_PER_AGENT) * TWO - ONE
    v.landmark_y[envs] = reset_uniform(seed, stream, counter, landmark, 1, DRAWS_PER_AGENT) * TWO - ONE
    drawn = reset_uniform(seed, envs, v.episode[envs], n + p.N, 0, DRAWS_PER_AGENT) * np.float32(p.N)
    v.goal[envs] = np.minimum(drawn.astype(np.int32), p.N - 1)
    v.vel_x[envs] = 0
    v.vel_y[envs] = 0
    v.t[envs] = 0
    observe(v, p, envs)


def step(v, p: SimpleAdversaryParams) -> None:
    """Clock and done, motion (agents do not touch), rewards, then observations of every environment."""
    v.t[:] += 1
    v.done[:] = v.t >= p.max_cycles
    if p.continuous_actions:
        a = clamp(v.actions, 0, 1)
        force_x, force_y = (a[:, :, 2] - a[:, :, 1]) * SENSITIVITY, (a[:, :, 4] - a[:, :, 3]) * SENSITIVITY
    else:
        move = np.clip(v.actions[:, :, 0], 0, len(MOVES_X) - 1)
        force_x, force_y = MOVES_X[move] * SENSITIVITY, MOVES_Y[move] * SENSITIVITY
    v.pos_x[:] = v.pos_x + v.vel_x * DT
    v.pos_y[:] = v.pos_y + v.vel_y * DT
    v.vel_x[:] = v.vel_x * KEPT_VELOCITY + force_x * DT
    v.vel_y[:] = v.vel_y * KEPT_VELOCITY + force_y * DT
    goal_x, goal_y = goal_position(v, np.arange(v.pos_x.shape[0]))
    dx, dy = v.pos_x - goal_x[:, None], v.pos_y - goal_y[:, None]
    distance = np.sqrt(dx * dx + dy * dy)
    v.rewards[:, 0] = -distance[:, 0]
    v.rewards[:, 1:] = (-distance[:, 1:].min(axis=1) + distance[:, 0])[:, None]
    observe(v, p, np.arange(v.pos_x.shape[0]))


def goal_position(v, envs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    goal = v.goal[envs][:, None]
    return (np.take_along_axis(v.landmark_x[envs], goal, 1)[:, 0],
            np.take_along_axis(v.landmark_y[envs], goal, 1)[:, 0])


def observe(v, p: SimpleAdversaryParams, envs: np.ndarray) -> None:
    """MPE2's order: for a good agent the goal's offset, then for every agent the landmarks' offsets and the
    other agents' (with num_*_neighbors only that many nearest, nearest first, zeros past those there are)."""
    n = p.N + 1
    x, y = v.pos_x[envs], v.pos_y[envs]
    goal_x, goal_y = goal_position(v, envs)
    rows = []
    for i in range(n):
        parts = [] if i == 0 else [(goal_x - x[:, i])[:, None], (goal_y - y[:, i])[:, None]]
        parts.append(interleave(*nearest(v.landmark_x[envs] - x[:, i:i + 1], v.landmark_y[envs] - y[:, i:i + 1],
                                         p.num_landmark_neighbors)))
        others = np.array([j for j in range(n) if j != i], np.int64)
        parts.append(interleave(*nearest(x[:, others] - x[:, i:i + 1], y[:, others] - y[:, i:i + 1],
                                         p.num_agent_neighbors)))
        row = np.concatenate(parts, axis=1).astype(np.float32)
        rows.append(np.pad(row, ((0, 0), (0, v.observations.shape[2] - row.shape[1]))))
    v.observations[envs] = np.stack(rows, axis=1)
