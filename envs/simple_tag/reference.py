"""NumPy reference of simple_tag: in place on ``v`` (the environment's views), float32 throughout, every sum
in the kernels' (and MPE2's) order: a body's forces from agent 0 up, then from obstacle 0 up."""

import numpy as np

from warpsim.envs.simple_tag.params import (
    ADVERSARY_ACCELERATION,
    ADVERSARY_MAX_SPEED,
    ADVERSARY_SIZE,
    CATCH_REWARD,
    DRAWS_PER_AGENT,
    GOOD_ACCELERATION,
    GOOD_MAX_SPEED,
    GOOD_SIZE,
    OBSTACLE_SIZE,
    OBSTACLE_SPREAD,
    SimpleTagParams,
)
from warpsim.kernels.actions import clamp
from warpsim.kernels.chunks import env_chunks
from warpsim.kernels.exponential import exp
from warpsim.kernels.mpe import DT, KEPT_VELOCITY, MOVES_X, MOVES_Y, contact, nearest_first, searched
from warpsim.kernels.random import reset_uniform

ONE, TWO, TEN = np.float32(1), np.float32(2), np.float32(10)
EDGE, WALL = np.float32(0.9), np.float32(1.0)
"""A good agent is penalised past 0.9 from the centre on an axis, steeply past 1."""


def bodies(p: SimpleTagParams) -> dict[str, np.ndarray]:
    """float32[N] each agent's radius, acceleration and top speed (adversaries first)."""
    adversary = np.arange(p.num_agents) < p.num_adversaries
    return {"size": np.where(adversary, ADVERSARY_SIZE, GOOD_SIZE).astype(np.float32),
            "acceleration": np.where(adversary, ADVERSARY_ACCELERATION, GOOD_ACCELERATION).astype(np.float32),
            "max_speed": np.where(adversary, ADVERSARY_MAX_SPEED, GOOD_MAX_SPEED).astype(np.float32)}


def reset(v, p: SimpleTagParams, seed: np.uint64, envs: np.ndarray) -> None:
    """Agents uniform in [-1, 1]^2 at rest, obstacles uniform in [-0.9, 0.9]^2, for environments ``envs``."""
    stream, counter = envs[:, None], v.episode[envs][:, None]
    agent = np.arange(p.num_agents)[None, :]
    v.pos_x[envs] = reset_uniform(seed, stream, counter, agent, 0, DRAWS_PER_AGENT) * TWO - ONE
    v.pos_y[envs] = reset_uniform(seed, stream, counter, agent, 1, DRAWS_PER_AGENT) * TWO - ONE
    obstacle, spread = p.num_agents + np.arange(p.num_obstacles)[None, :], TWO * OBSTACLE_SPREAD
    for k, coordinate in enumerate((v.obstacle_x, v.obstacle_y)):
        coordinate[envs, :p.num_obstacles] = reset_uniform(seed, stream, counter, obstacle, k, DRAWS_PER_AGENT) \
            * spread - OBSTACLE_SPREAD
    v.vel_x[envs] = 0
    v.vel_y[envs] = 0
    v.t[envs] = 0
    observe(v, p, envs)


def step(v, p: SimpleTagParams) -> None:
    """Clock and done, forces, motion, rewards, then observations of every environment."""
    body = bodies(p)
    v.t[:] += 1
    v.done[:] = v.t >= p.max_cycles
    if p.continuous_actions:
        a = clamp(v.actions, 0, 1)
        force_x = (a[:, :, 2] - a[:, :, 1]) * body["acceleration"]
        force_y = (a[:, :, 4] - a[:, :, 3]) * body["acceleration"]
    else:
        move = np.clip(v.actions[:, :, 0], 0, len(MOVES_X) - 1)
        force_x, force_y = MOVES_X[move] * body["acceleration"], MOVES_Y[move] * body["acceleration"]
    for j in range(p.num_agents):
        push_x, push_y = contact(v.pos_x - v.pos_x[:, j:j + 1], v.pos_y - v.pos_y[:, j:j + 1], body["size"] +
                                 body["size"][j])
        other = np.arange(p.num_agents) != j
        force_x, force_y = np.where(other, force_x + push_x, force_x), np.where(other, force_y + push_y, force_y)
    for obstacle in range(p.num_obstacles):
        push_x, push_y = contact(v.pos_x - v.obstacle_x[:, obstacle:obstacle + 1],
                                 v.pos_y - v.obstacle_y[:, obstacle:obstacle + 1], body["size"] + OBSTACLE_SIZE)
        force_x, force_y = force_x + push_x, force_y + push_y
    v.pos_x[:] = v.pos_x + v.vel_x * DT
    v.pos_y[:] = v.pos_y + v.vel_y * DT
    vel_x = v.vel_x * KEPT_VELOCITY + force_x * DT
    vel_y = v.vel_y * KEPT_VELOCITY + force_y * DT
    speed = np.sqrt(vel_x * vel_x + vel_y * vel_y)
    with np.errstate(divide="ignore", invalid="ignore"):
        too_fast = speed > body["max_speed"]
        v.vel_x[:] = np.where(too_fast, vel_x / speed * body["max_speed"], vel_x)
        v.vel_y[:] = np.where(too_fast, vel_y / speed * body["max_speed"], vel_y)
    a, n = p.num_adversaries, p.num_agents
    caught = np.empty((v.pos_x.shape[0], n - a), np.int64)
    for envs in env_chunks(np.arange(v.pos_x.shape[0]), a, n - a):
        dx = v.pos_x[envs, :a, None] - v.pos_x[envs, None, a:]
        dy = v.pos_y[envs, :a, None] - v.pos_y[envs, None, a:]
        caught[envs] = (np.sqrt(dx * dx + dy * dy) < body["size"][:a, None] + body["size"][None, a:]).sum(axis=1)
    v.tags[:] += caught.sum(axis=1, dtype=np.int32)
    v.rewards[:, :a] = (CATCH_REWARD * caught.sum(axis=1).astype(np.float32))[:, None]
    good = -CATCH_REWARD * caught.astype(np.float32)
    v.rewards[:, a:n] = good - boundary(np.abs(v.pos_x[:, a:])) - boundary(np.abs(v.pos_y[:, a:]))
    observe(v, p, np.arange(v.pos_x.shape[0]))


def boundary(x: np.ndarray) -> np.ndarray:
    """MPE's penalty of a good agent at |position| ``x`` on an axis: 0 below 0.9, 10 (x - 0.9) below 1,
    then exp(2x - 2), at most 10."""
    return np.where(x < EDGE, np.float32(0),
                    np.where(x < WALL, (x - EDGE) * TEN, np.minimum(exp(x * TWO - TWO), TEN))).astype(np.float32)


def observe(v, p: SimpleTagParams, envs: np.ndarray) -> None:
    """MPE2's order: own velocity and position, the obstacles' offsets, the other agents' offsets, then the
    good ones' velocities; with num_*_neighbors only that many nearest, nearest first (float32 squared distance,
    the lower index first at a tie), an adversary's velocity and every slot past those there are as zeros."""
    n, a = p.num_agents, p.num_adversaries
    x, y = v.pos_x[envs], v.pos_y[envs]
    vx, vy = v.vel_x[envs], v.vel_y[envs]
    rows = []
    for i in range(n):
        parts = [vx[:, i:i + 1], vy[:, i:i + 1], x[:, i:i + 1], y[:, i:i + 1]]
        ox = v.obstacle_x[envs, :p.num_obstacles] - x[:, i:i + 1]
        oy = v.obstacle_y[envs, :p.num_obstacles] - y[:, i:i + 1]
        parts.append(interleave(*nearest(ox, oy, p.num_landmark_neighbors)))
        others = np.array([j for j in range(n) if j != i], np.int64)
        dx, dy = x[:, others] - x[:, i:i + 1], y[:, others] - y[:, i:i + 1]
        if p.num_agent_neighbors is None:
            good = others >= a
            parts += [interleave(dx, dy), interleave(vx[:, others[good]], vy[:, others[good]])]
        else:
            order = nearest_order(dx, dy, p.num_agent_neighbors)
            picked = others[np.maximum(order, 0)]
            good = (picked >= a) & (order >= 0)
            every = np.arange(len(envs))[:, None]
            parts += [interleave(taken(dx, order), taken(dy, order)),
                      interleave(np.where(good, vx[every, picked], 0), np.where(good, vy[every, picked], 0))]
        row = np.concatenate(parts, axis=1).astype(np.float32)
        rows.append(np.pad(row, ((0, 0), (0, v.observations.shape[2] - row.shape[1]))))
    v.observations[envs] = np.stack(rows, axis=1)


def nearest_order(dx: np.ndarray, dy: np.ndarray, slots: int) -> np.ndarray:
    """int64[E, slots]: the columns of (dx, dy) nearest first (stable on float32 squared distance), -1 past the
    columns found (``searched``: none at NaN)."""
    d2 = searched(dx * dx + dy * dy)
    order = nearest_first(d2, slots)
    order = np.where(np.take_along_axis(d2, order, 1) < np.inf, order, -1)
    return np.pad(order, ((0, 0), (0, slots - order.shape[1])), constant_values=-1)


def nearest(dx: np.ndarray, dy: np.ndarray, slots: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(dx, dy) as they come, or the ``slots`` nearest columns, zeros past those there are."""
    if slots is None:
        return dx, dy
    order = nearest_order(dx, dy, slots)
    return taken(dx, order), taken(dy, order)


def taken(values: np.ndarray, order: np.ndarray) -> np.ndarray:
    """values[:, order], zeros where order is -1 (and everywhere when there are no columns)."""
    if values.shape[1] == 0:
        return np.zeros(order.shape, np.float32)
    return np.where(order >= 0, np.take_along_axis(values, np.maximum(order, 0), 1), 0).astype(np.float32)


def interleave(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """float32[E, 2 K]: first[:, 0], second[:, 0], first[:, 1], ..."""
    return np.stack([first, second], axis=-1).reshape(first.shape[0], -1).astype(np.float32)
