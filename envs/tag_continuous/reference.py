"""NumPy reference of tag_continuous (docs/tag_rules.md section 1), vectorised over E and N.

Every function works in place on ``v``, the environment's views namespace (NumPy
arrays sharing memory with its tensors), in float32 with the operations in the same
order as the kernels. The kernels round every operation as NumPy does and share the
sin/cos formula (``warpsim.kernels.trig``), so both backends agree bit for bit. Bfloat16
observations are computed in float32 all the same and rounded as they are stored, with the
kernels' arithmetic (``warpsim.kernels.bfloat16``). Large batches are processed in chunks of
environments to bound the pairwise temporaries.
"""

from __future__ import annotations

import numpy as np

from warpsim.envs.tag_continuous.nearest import nearest_in_game
from warpsim.envs.tag_continuous.params import DRAWS_PER_AGENT, HALF_PI, TWO_PI, ZERO, Constants, TagContinuousParams
from warpsim.kernels.actions import clamp
from warpsim.kernels.bfloat16 import bfloat16_bits
from warpsim.kernels.chunks import env_chunks
from warpsim.kernels.random import reset_uniform
from warpsim.kernels.trig import sin_cos


def wrap_angle(angle: np.ndarray) -> np.ndarray:
    """angle mod 2pi, in [0, 2pi), as the kernels compute it."""
    wrapped = np.fmod(angle, TWO_PI)
    wrapped = np.where(wrapped < ZERO, wrapped + TWO_PI, wrapped)
    return np.where(wrapped >= TWO_PI, ZERO, wrapped).astype(np.float32)


def reset(v, p: TagContinuousParams, c: Constants, seed: np.uint64, envs: np.ndarray) -> None:
    """Draws new starts for environments ``envs`` from their own streams."""
    n = v.loc_x.shape[1]
    stream = envs[:, None]
    counter = v.episode[envs][:, None]
    agent = np.arange(n)[None, :]
    draw = [reset_uniform(seed, stream, counter, agent, k, DRAWS_PER_AGENT) for k in range(DRAWS_PER_AGENT)]
    v.loc_x[envs] = draw[0] * c.grid_length
    v.loc_y[envs] = draw[1] * c.grid_length
    v.direction[envs] = (draw[2] * np.float32(4)).astype(np.int32).astype(np.float32) * HALF_PI
    v.speed[envs] = 0
    v.acceleration[envs] = 0
    v.still_in_game[envs] = 1
    v.t[envs] = 0
    v.num_runners_left[envs] = p.num_runners
    observe(v, p, c, envs)


def step(v, p: TagContinuousParams, c: Constants) -> None:
    """One step of every environment: move, observe, reward, tag, end of game, done."""
    v.t[:] += 1
    alive = v.still_in_game == 1
    alive_f = alive.astype(np.float32)
    max_speed = c.max_speed_by_type[v.agent_type][None, :]
    if p.continuous_actions:  # the numbers themselves, clamped to their bounds
        acc_change = clamp(v.actions[:, :, 0], c.action_bounds[0, 0], c.action_bounds[1, 0])
        turn = clamp(v.actions[:, :, 1], c.action_bounds[0, 1], c.action_bounds[1, 1])
    else:
        acc_change = c.acceleration_table[np.clip(v.actions[:, :, 0], 0, len(c.acceleration_table) - 1)]
        turn = c.turn_table[np.clip(v.actions[:, :, 1], 0, len(c.turn_table) - 1)]

    v.acceleration[:] += acc_change
    v.direction[:] = wrap_angle(v.direction + turn) * alive_f
    v.speed[:] = np.minimum(np.maximum(v.speed + v.acceleration, ZERO), max_speed) * alive_f
    v.acceleration[(v.speed <= ZERO) | (v.speed >= max_speed)] = 0
    sine, cosine = sin_cos(v.direction)  # float32 sin and cos the kernels compute bit for bit
    x = v.loc_x + v.speed * cosine
    y = v.loc_y + v.speed * sine
    length = c.grid_length
    hit_edge = (x < ZERO) | (x > length) | (y < ZERO) | (y > length)
    v.loc_x[:] = np.minimum(np.maximum(x, ZERO), length)
    v.loc_y[:] = np.minimum(np.maximum(y, ZERO), length)

    observe(v, p, c, np.arange(v.loc_x.shape[0]))

    edge = np.where(hit_edge, c.edge_hit_penalty, ZERO)
    v.rewards[:] = np.where(alive, edge + c.step_reward_by_type[v.agent_type][None, :], ZERO)
    tag(v, p, c)
    ended = v.t == p.episode_length
    runner_alive = v.still_in_game[:, p.num_taggers:] == 1
    v.rewards[:, p.num_taggers:] += np.where(
        ended[:, None] & runner_alive, c.end_of_game_reward_for_runner, ZERO)
    v.done[:] = (v.t >= p.episode_length) | (v.num_runners_left == 0)


def tag(v, p: TagContinuousParams, c: Constants) -> None:
    """Each runner in the game is tagged by its nearest tagger if closer than the radius."""
    nt = p.num_taggers
    num_envs = v.loc_x.shape[0]
    tags_per_tagger = np.zeros((num_envs, nt), np.int64)
    tagged = np.zeros((num_envs, p.num_runners), bool)
    for envs in env_chunks(np.arange(num_envs), p.num_runners, nt):
        dx = v.loc_x[envs, None, :nt] - v.loc_x[envs, nt:, None]
        dy = v.loc_y[envs, None, :nt] - v.loc_y[envs, nt:, None]
        distance_squared = dx * dx + dy * dy
        nearest = np.argmin(distance_squared, axis=2)
        nearest_d2 = np.take_along_axis(distance_squared, nearest[:, :, None], axis=2)[:, :, 0]
        hit = (v.still_in_game[envs, nt:] == 1) & (nearest_d2 < c.tag_radius_squared)
        tagged[envs] = hit
        tagger_of_hit = (nearest + (np.arange(len(envs)) * nt)[:, None])[hit]  # flat (environment, tagger)
        tags_per_tagger[envs] = np.bincount(tagger_of_hit, minlength=len(envs) * nt).reshape(len(envs), nt)
    v.rewards[:, nt:] += np.where(tagged, c.tag_penalty_for_runner, ZERO)
    v.tags[:] += tagged.sum(axis=1, dtype=np.int32)
    # One addition per tag, as the kernel's atomic adds do, so the sums round alike.
    for k in range(int(tags_per_tagger.max(initial=0))):
        v.rewards[:, :nt] += np.where(tags_per_tagger > k, c.tag_reward_for_tagger, ZERO)
    if p.runner_exits_game_after_tagged:
        v.still_in_game[:, nt:][tagged] = 0
        v.num_runners_left[:] -= tagged.sum(axis=1, dtype=np.int32)


def observe(v, p: TagContinuousParams, c: Constants, envs: np.ndarray) -> None:
    """Writes the observations of environments ``envs`` from the current state (in bfloat16, the
    bits of the float32 observations rounded: ``v.observations`` is then int16)."""
    n = v.loc_x.shape[1]
    fill = _full_observation if p.use_full_observation else _partial_observation
    for chunk in env_chunks(envs, n, n):
        observation = fill(v, p, c, chunk)
        if p.observe_own_state:
            observation = np.concatenate([observation, _own_state(v, c, chunk)], axis=2)
        v.observations[chunk] = bfloat16_bits(observation) if p.observation_dtype == "bfloat16" else observation


def _relative_features(v, c: Constants, envs, others):
    """float32[C, N, 5, M]: features 1-5 of agents ``others`` (int[C or 1, N, M]) seen from each agent."""
    scales = (c.position_scale, c.position_scale, c.speed_scale, c.speed_scale, TWO_PI)
    rows = np.arange(len(envs))[:, None, None]
    features = []
    for values, scale in zip((v.loc_x, v.loc_y, v.speed, v.acceleration, v.direction), scales):
        own = values[envs]
        features.append((own[rows, others] - own[:, :, None]) / scale)
    return np.stack(features, axis=2)


def _full_observation(v, p: TagContinuousParams, c: Constants, envs) -> np.ndarray:
    n = v.loc_x.shape[1]
    slot = np.arange(n - 1)[None, :]
    others = (slot + (slot >= np.arange(n)[:, None]))[None]  # row i: every j != i, ascending
    rows = np.arange(len(envs))[:, None, None]
    alive = v.still_in_game[envs].astype(np.float32)
    observer_alive = alive[:, :, None]
    relative = _relative_features(v, c, envs, others) * observer_alive[:, :, :, None]
    agent_type = np.broadcast_to(v.agent_type[others].astype(np.float32), (len(envs), n, n - 1))
    others_alive = alive[rows, others]
    time = _time(v, p, envs) * observer_alive
    return np.concatenate([relative.reshape(len(envs), n, 5 * (n - 1)),
                           agent_type, others_alive, time], axis=2)


def _partial_observation(v, p: TagContinuousParams, c: Constants, envs) -> np.ndarray:
    n, k = v.loc_x.shape[1], p.num_other_agents_observed
    alive = v.still_in_game[envs] == 1
    nearest, present = nearest_in_game(v.loc_x[envs], v.loc_y[envs], alive, k)
    observation = np.empty((len(envs), n, 7 * k + 1), np.float32)
    features = observation[:, :, :7 * k].reshape(len(envs), n, 7, k)  # a view: feature-major slots
    flat_nearest = nearest + (np.arange(len(envs)) * n)[:, None, None]
    scales = (c.position_scale, c.position_scale, c.speed_scale, c.speed_scale, TWO_PI)
    for feature, (values, scale) in enumerate(zip(
            (v.loc_x, v.loc_y, v.speed, v.acceleration, v.direction), scales)):
        own = values[envs]
        relative = features[:, :, feature]
        # An empty slot holds the observer's own id: its difference is an exact +0.
        np.subtract(own.ravel()[flat_nearest], own[:, :, None], out=relative)
        np.divide(relative, scale, out=relative)
    np.multiply(v.agent_type[nearest], present, out=features[:, :, 5])
    features[:, :, 6] = present
    observation[:, :, 7 * k:] = _time(v, p, envs) * alive[:, :, None]
    return observation


def _own_state(v, c: Constants, envs) -> np.ndarray:
    """float32[C, N, 5]: cos and sin of each agent's direction, speed / (max_speed + 1e-10),
    loc_x / L and loc_y / L, all times the agent's still_in_game (as features 1-5 of a full observation)."""
    sine, cosine = sin_cos(v.direction[envs])
    own = np.stack([cosine, sine, v.speed[envs] / c.speed_scale, v.loc_x[envs] / c.grid_length,
                    v.loc_y[envs] / c.grid_length], axis=2)
    return own * v.still_in_game[envs].astype(np.float32)[:, :, None]


def _time(v, p: TagContinuousParams, envs) -> np.ndarray:
    """float32[C, N, 1]: t / T of each observer's environment."""
    n = v.loc_x.shape[1]
    time = v.t[envs].astype(np.float32) / np.float32(p.episode_length)
    return np.broadcast_to(time[:, None, None], (len(envs), n, 1)).astype(np.float32)
