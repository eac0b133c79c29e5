"""NumPy reference of simple_spread: in place on ``v`` (the environment's views), float32 throughout.

Every sum runs in the order the kernels (and MPE2) take it, one term after another, so that
the kernels compute the same bits: a body's forces from agent 0 up, the coverage reward from
landmark 0 up.
"""

import numpy as np

from warpsim.envs.simple_spread.params import CONTACT_DISTANCE, DRAWS_PER_AGENT, SimpleSpreadParams
from warpsim.kernels.actions import clamp
from warpsim.kernels.chunks import env_chunks
from warpsim.kernels.mpe import DT, KEPT_VELOCITY, MOVES_X, MOVES_Y, SENSITIVITY, contact, nearest_first, searched
from warpsim.kernels.random import reset_uniform

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
        push_x, push_y = contact(v.pos_x - v.pos_x[:, j:j + 1], v.pos_y - v.pos_y[:, j:j + 1], CONTACT_DISTANCE)
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
        coverage = coverage - np.sqrt(searched(dx * dx + dy * dy)).min(axis=1)
    collisions = np.empty_like(v.pos_x)
    for envs in env_chunks(np.arange(v.pos_x.shape[0]), p.N, p.N):
        dx = v.pos_x[envs, :, None] - v.pos_x[envs, None, :]
        dy = v.pos_y[envs, :, None] - v.pos_y[envs, None, :]
        touching = (np.sqrt(dx * dx + dy * dy) < CONTACT_DISTANCE) & ~np.eye(p.N, dtype=bool)
        collisions[envs] = -touching.sum(axis=2).astype(np.float32)
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
    """MPE2's order: own velocity, own position, the landmarks' offsets, the other agents' offsets, then
    the other agents' utterances (zeros). With num_*_neighbors, only that many nearest, nearest first (by
    float32 squared distance, the lower index first at a tie), zeros filling the slots beyond those there
    are; without, all of them in their own order."""
    for chunk in env_chunks(envs, p.N, p.N):
        observe_chunk(v, p, chunk)


def observe_chunk(v, p: SimpleSpreadParams, envs: np.ndarray) -> None:
    """``observe`` of environments ``envs`` at once (N x N offsets each)."""
    n = p.N
    x, y = v.pos_x[envs], v.pos_y[envs]
    column = np.arange(n - 1)
    others = column + (column >= np.arange(n)[:, None])  # [N, N - 1]: every agent but the row's, in order
    landmarks = offsets(v.landmark_x[envs][:, None, :] - x[:, :, None], v.landmark_y[envs][:, None, :] - y[:, :, None],
                        p.num_landmark_neighbors)
    agents = offsets(x[:, others] - x[:, :, None], y[:, others] - y[:, :, None], p.num_agent_neighbors)
    utterances = np.zeros((len(envs), n, 2 * p.agent_slots), np.float32)
    own = np.stack([v.vel_x[envs], v.vel_y[envs], x, y], axis=-1)
    v.observations[envs] = np.concatenate([own, landmarks, agents, utterances], axis=-1)


def offsets(dx: np.ndarray, dy: np.ndarray, nearest: int | None) -> np.ndarray:
    """float32[E, N, 2 slots]: (dx, dy) of each entity of the last axis, as they come, or of the ``nearest``
    nearest, nearest first, zeros beyond the entities found (those at a distance below inf)."""
    if nearest is not None:
        d2 = searched(dx * dx + dy * dy)
        order = nearest_first(d2, nearest)
        found = np.take_along_axis(d2, order, -1) < np.inf
        dx = np.where(found, np.take_along_axis(dx, order, -1), np.float32(0))
        dy = np.where(found, np.take_along_axis(dy, order, -1), np.float32(0))
        missing = nearest - dx.shape[-1]
        if missing > 0:
            fill = np.zeros((*dx.shape[:-1], missing), np.float32)
            dx, dy = np.concatenate([dx, fill], -1), np.concatenate([dy, fill], -1)
    return np.stack([dx, dy], axis=-1).reshape(*dx.shape[:-1], -1)
