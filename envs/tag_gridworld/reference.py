"""NumPy reference of tag_gridworld (docs/tag_rules.md section 2), vectorised over E and N.

Every function works in place on ``v``, the environment's views namespace (NumPy
arrays sharing memory with its tensors). Positions are int32 cells; rewards and
observations are float32 with the operations in the same order as the kernels, so
both backends agree bit for bit.
"""

from __future__ import annotations

import numpy as np

from warpsim.envs.tag_gridworld.params import (
    DRAWS_PER_AGENT,
    MOVE_X,
    MOVE_Y,
    NUM_ACTIONS,
    ZERO,
    Constants,
    TagGridworldParams,
)
from warpsim.kernels.random import reset_uniform


def reset(v, p: TagGridworldParams, c: Constants, seed: np.uint64, envs: np.ndarray) -> None:
    """New starts for environments ``envs`` (random from their own streams, or fixed)."""
    n = v.loc_x.shape[1]
    if p.fixed_start:
        centre = p.grid_length // 2
        v.loc_x[envs] = centre
        v.loc_y[envs] = centre
        v.loc_x[envs, n - 1] = 0
        v.loc_y[envs, n - 1] = 0
    else:
        stream = envs[:, None]
        counter = v.episode[envs][:, None]
        agent = np.arange(n)[None, :]
        for k, coordinate in enumerate((v.loc_x, v.loc_y)):
            cell = (reset_uniform(seed, stream, counter, agent, k, DRAWS_PER_AGENT) * c.start_cells).astype(np.int32)
            coordinate[envs] = np.minimum(cell, c.grid_length)
    v.t[envs] = 0
    observe(v, p, c, envs)


def step(v, p: TagGridworldParams, c: Constants) -> None:
    """One step of every environment: move, tag, rewards, done, observations."""
    v.t[:] += 1
    distance_before = runner_distance(v, p) if p.has_closing_reward else None
    action = np.clip(v.actions[:, :, 0], 0, NUM_ACTIONS - 1)
    x = v.loc_x + MOVE_X[action]
    y = v.loc_y + MOVE_Y[action]
    length = c.grid_length
    hit_wall = (x < 0) | (x > length) | (y < 0) | (y > length)
    v.loc_x[:] = np.clip(x, 0, length)
    v.loc_y[:] = np.clip(y, 0, length)

    v.tagged[:] = runner_tagged(v, p)
    wall = np.where(hit_wall, c.wall_hit_reward, ZERO)
    v.rewards[:] = wall + c.outcome_reward[v.tagged.astype(np.int64)[:, None], v.agent_type[None, :]]
    if distance_before is not None:
        add_closing_rewards(v, p, c, distance_before)
    v.tags[:] += v.tagged
    v.done[:] = v.tagged | (v.t >= p.episode_length)
    observe(v, p, c, np.arange(v.loc_x.shape[0]))


def runner_tagged(v, p: TagGridworldParams) -> np.ndarray:
    """bool[E]: some tagger stands on the runner's (agent N-1) cell."""
    nt = p.num_taggers
    same_cell = (v.loc_x[:, :nt] == v.loc_x[:, nt:]) & (v.loc_y[:, :nt] == v.loc_y[:, nt:])
    return same_cell.any(axis=1)


def runner_distance(v, p: TagGridworldParams) -> np.ndarray:
    """int32[E, num_taggers]: each tagger's Manhattan distance in cells to the runner."""
    nt = p.num_taggers
    return np.abs(v.loc_x[:, :nt] - v.loc_x[:, nt:]) + np.abs(v.loc_y[:, :nt] - v.loc_y[:, nt:])


def add_closing_rewards(v, p: TagGridworldParams, c: Constants, distance_before: np.ndarray) -> None:
    """Adds every tagger's shaping term c * (d_before - d_after) to its reward; a tag ends
    the game, whose potential is 0, so there d_after is 0."""
    distance_after = np.where(v.tagged[:, None], 0, runner_distance(v, p))
    closed = (distance_before - distance_after).astype(np.float32)
    v.rewards[:, :p.num_taggers] += c.closing_reward * closed


def observe(v, p: TagGridworldParams, c: Constants, envs: np.ndarray) -> None:
    """Writes the observations of environments ``envs`` from the current state."""
    if p.use_full_observation:
        _full_observation(v, p, c, envs)
    else:
        _partial_observation(v, p, c, envs)


def _time(v, p: TagGridworldParams, envs) -> np.ndarray:
    """float32[C, 1]: t / T of each environment."""
    return (v.t[envs].astype(np.float32) / np.float32(p.episode_length))[:, None]


def _full_observation(v, p: TagGridworldParams, c: Constants, envs) -> None:
    """[x_0..x_{N-1}]/L, [y..]/L, [type..], one-hot of the observer, t/T: every observer
    sees the same first 3N entries, so they broadcast over the observer axis."""
    n = v.loc_x.shape[1]
    obs = v.observations
    obs[envs, :, 0:n] = (v.loc_x[envs].astype(np.float32) / c.grid_length_f)[:, None, :]
    obs[envs, :, n:2 * n] = (v.loc_y[envs].astype(np.float32) / c.grid_length_f)[:, None, :]
    obs[envs, :, 2 * n:3 * n] = v.agent_type.astype(np.float32)[None, None, :]
    obs[envs, :, 3 * n:4 * n] = np.eye(n, dtype=np.float32)[None]
    obs[envs, :, 4 * n] = _time(v, p, envs)


def _partial_observation(v, p: TagGridworldParams, c: Constants, envs) -> None:
    """Own x/L, own y/L, target x/L, target y/L, own type, t/T. A tagger's target is the
    runner; the runner's is its nearest tagger (squared distance, lowest id on a tie)."""
    nt = p.num_taggers
    n = nt + 1
    x, y = v.loc_x[envs], v.loc_y[envs]
    dx = x[:, :nt].astype(np.int64) - x[:, nt:]
    dy = y[:, :nt].astype(np.int64) - y[:, nt:]
    nearest_tagger = np.argmin(dx * dx + dy * dy, axis=1)  # argmin keeps the first minimum
    target = np.full((len(envs), n), n - 1, np.int64)
    target[:, n - 1] = nearest_tagger
    rows = np.arange(len(envs))[:, None]
    scale = c.grid_length_f
    obs = v.observations
    obs[envs, :, 0] = x.astype(np.float32) / scale
    obs[envs, :, 1] = y.astype(np.float32) / scale
    obs[envs, :, 2] = x[rows, target].astype(np.float32) / scale
    obs[envs, :, 3] = y[rows, target].astype(np.float32) / scale
    obs[envs, :, 4] = v.agent_type.astype(np.float32)[None, :]
    obs[envs, :, 5] = _time(v, p, envs)
