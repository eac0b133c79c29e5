"""NumPy reference of simple_spread: in place on ``v`` (the environment's views), float32 throughout.

Every sum runs in the order the kernels (and MPE2) take it, one term after another, so that
the kernels compute the same bits: a body's forces from agent 0 up, the coverage reward from
landmark 0 up.
"""

import numpy as np

from warpsim.envs.simple_spread.params import (
    CONTACT_DISTANCE,
    CONTACT_FORCE,
    CONTACT_MARGIN,
    DRAWS_PER_AGENT,
    DT,
    KEPT_VELOCITY,
    SENSITIVITY,
    SimpleSpreadParams,
)
from warpsim.kernels.actions import clamp
from warpsim.kernels.random import reset_uniform
from warpsim.kernels.softplus import softplus

MOVES_X = np.array([0, -1, 1, 0, 0], np.float32)
"""x of each discrete action's force (MPE: 0 none, 1 left, 2 right, 3 down, 4 up), times SENSITIVITY."""
MOVES_Y = np.array([0, 0, 0, -1, 1], np.float32)
ONE = np.float32(1)
TWO = np.float32(2)


def reset(v, p: SimpleSpreadParams, seed: np.uint64, envs: np.ndarray) -> None:
    """New agents and landmarks, uniform in [-1, 1]^2, agents at rest, for environments ``envs`` (int64[R])."""
    stream, counter = envs[:, None], v.episode[envs][:, None]
    agent = np.arange(p.N)[None, :]
    draw = [reset_uniform(seed, stream, counter, agent, k, DRAWS_PER_AGENT) * TWO - ONE
            for k in range(DRAWS_PER_AGENT)]
    v.pos_x[envs], v.pos_y[envs], v.landmark_x[envs], v.landmark_y[envs] = draw
    v.vel_x[envs] = 0
    v.vel_y[envs] = 0
    v.t[envs] = 0
    observe(v, p, envs)


def step(v, p: SimpleSpreadParams, global_weight: np.float32, local_weight: np.float32) -> None:
    """Clock and done, forces, motion, rewards, then observations of every environment."""
    v.t[:] += 1
    v.done[:] = v.t >= p.max_cycles
    force_x, force_y = action_forces(v, p)
    for j in range(p.N):  # the contact force of every other agent, agent 0 first
        dx, dy = v.pos_x - v.pos_x[:, j:j + 1], v.pos_y - v.pos_y[:, j:j + 1]
        distance = np.sqrt(dx * dx + dy * dy)
        with np.errstate(divide="ignore", invalid="ignore"):  # two agents at one point: NaN, as in MPE2
            penetration = softplus(-(distance - CONTACT_DISTANCE) / CONTACT_MARGIN) * CONTACT_MARGIN
            push_x = CONTACT_FORCE * dx / distance * penetration
            push_y = CONTACT_FORCE * dy / distance * penetration
        other = np.arange(p.N) != j
        force_x = np.where(other, force_x + push_x, force_x)
        force_y = np.where(other, force_y + push_y, force_y)
    v.pos_x[:] = v.pos_x + v.vel_x * DT
    v.pos_y[:] = v.pos_y + v.vel_y * DT
    v.vel_x[:] = v.vel_x * KEPT_VELOCITY + force_x * DT
    v.vel_y[:] = v.vel_y * KEPT_VELOCITY + force_y * DT
    coverage = np.zeros(v.pos_x.shape[0], np.float32)
    for landmark in range(p.N):  # minus the distance of each landmark's nearest agent, landmark 0 first
        dx, dy = v.pos_x - v.landmark_x[:, landmark:landmark + 1], v.pos_y - v.landmark_y[:, landmark:landmark + 1]
        coverage = coverage - np.sqrt(dx * dx + dy * dy).min(axis=1)
    dx = v.pos_x[:, :, None] - v.pos_x[:, None, :]
    dy = v.pos_y[:, :, None] - v.pos_y[:, None, :]
    touching = (np.sqrt(dx * dx + dy * dy) < CONTACT_DISTANCE) & ~np.eye(p.N, dtype=bool)
    collisions = -touching.sum(axis=2).astype(np.float32)
    v.rewards[:] = coverage[:, None] * global_weight + collisions * local_weight
    observe(v, p, np.arange(v.pos_x.shape[0]))


def action_forces(v, p: SimpleSpreadParams) -> tuple[np.ndarray, np.ndarray]:
    """float32[E, N] x and y of each agent's own force: its move, or its continuous action clamped to [0, 1]."""
    if p.continuous_actions:
        a = clamp(v.actions, 0, 1)
        return (a[:, :, 2] - a[:, :, 1]) * SENSITIVITY, (a[:, :, 4] - a[:, :, 3]) * SENSITIVITY
    move = np.clip(v.actions[:, :, 0], 0, len(MOVES_X) - 1)
    return MOVES_X[move] * SENSITIVITY, MOVES_Y[move] * SENSITIVITY


def observe(v, p: SimpleSpreadParams, envs: np.ndarray) -> None:
    """MPE2's order: own velocity, own position, each landmark's offset, each other agent's offset
    (agent order), then the other agents' utterances (zeros)."""
    n = p.N
    x, y = v.pos_x[envs], v.pos_y[envs]
    obs = v.observations
    obs[envs, :, 0], obs[envs, :, 1] = v.vel_x[envs], v.vel_y[envs]
    obs[envs, :, 2], obs[envs, :, 3] = x, y
    obs[envs, :, 4:4 + 2 * n:2] = v.landmark_x[envs][:, None, :] - x[:, :, None]
    obs[envs, :, 5:4 + 2 * n:2] = v.landmark_y[envs][:, None, :] - y[:, :, None]
    for i in range(n):
        others = np.arange(n) != i
        start = 4 + 2 * n
        obs[envs, i, start:start + 2 * (n - 1):2] = x[:, others] - x[:, i:i + 1]
        obs[envs, i, start + 1:start + 2 * (n - 1):2] = y[:, others] - y[:, i:i + 1]
    obs[envs, :, 4 + 4 * n - 2:] = 0
