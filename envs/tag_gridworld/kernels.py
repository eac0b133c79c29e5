"""Numba CUDA kernels of tag_gridworld (docs/tag_rules.md section 2).

One thread per agent over the flattened (environment, agent) index, so any N works
and small N packs several environments into a block. A step is five launches: move,
detect the tag (into the ``tagged`` state array), add the outcome rewards, finish (tags,
done), observe; then the masked reset (agents, environments, observation). A closing
reward adds two: the taggers' distances to the runner before the move, and their shaping
terms after the outcome rewards. Each launch sees the previous one's writes. Positions
are int32 cells; rewards and observations are float32 with the same order of operations
as the NumPy reference.
"""

import numpy as np
from numba import cuda

from warpsim.envs.tag_gridworld.params import DRAWS_PER_AGENT, NUM_ACTIONS, ZERO
from warpsim.kernels.indexing import agent_of_thread
from warpsim.kernels.random import reset_uniform_device
from warpsim.kernels.rounding import mul

ONE = np.float32(1)


@cuda.jit(device=True)
def distance_to_runner(loc_x, loc_y, e, i):
    """Manhattan distance in cells from agent i of environment e to the runner (agent N-1)."""
    runner = loc_x.shape[1] - 1
    return abs(loc_x[e, i] - loc_x[e, runner]) + abs(loc_y[e, i] - loc_y[e, runner])


@cuda.jit
def measure_runner_distance(loc_x, loc_y, distance_before):
    """docs/tag_rules.md section 2 step 3, before the moves: each tagger's distance to the runner.

    loc_x, loc_y int32[E, N]; distance_before int32[E, N - 1] (written).
    """
    num_envs, n = loc_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs or i == n - 1:
        return
    distance_before[e, i] = distance_to_runner(loc_x, loc_y, e, i)


@cuda.jit
def move_agents(actions, move_x, move_y, grid_length, wall_hit_reward, t, loc_x, loc_y, rewards, tagged):
    """docs/tag_rules.md section 2 step 1: clock, one cell move, wall clipping and its penalty.

    actions int32[E, N, 1]; move_x, move_y int32[5]; grid_length int32;
    wall_hit_reward float32 (<= 0); t int32[E]; loc_x, loc_y int32[E, N];
    rewards float32[E, N] (written: the wall term); tagged bool[E] (cleared for detect_tag).
    """
    num_envs, n = loc_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    if i == 0:
        t[e] += 1
        tagged[e] = False
    action = min(max(actions[e, i, 0], 0), NUM_ACTIONS - 1)
    x = loc_x[e, i] + move_x[action]
    y = loc_y[e, i] + move_y[action]
    hit_wall = x < 0 or x > grid_length or y < 0 or y > grid_length
    loc_x[e, i] = min(max(x, 0), grid_length)
    loc_y[e, i] = min(max(y, 0), grid_length)
    rewards[e, i] = wall_hit_reward if hit_wall else ZERO


@cuda.jit
def detect_tag(loc_x, loc_y, tagged):
    """docs/tag_rules.md section 2 step 2, detection: a tagger on the runner's (agent N-1) cell marks the environment.

    loc_x, loc_y int32[E, N]; tagged bool[E] (set to True where the runner is tagged;
    several taggers may write the same True).
    """
    num_envs, n = loc_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    runner = n - 1
    if i < runner and loc_x[e, i] == loc_x[e, runner] and loc_y[e, i] == loc_y[e, runner]:
        tagged[e] = True


@cuda.jit
def add_outcome_rewards(outcome_reward, agent_type, tagged, rewards):
    """docs/tag_rules.md section 2 step 2, rewards: the tag (or step cost) term of every agent, after its wall term.

    outcome_reward float32[2, 2] by [tagged, type]; agent_type int32[N];
    tagged bool[E]; rewards float32[E, N].
    """
    num_envs, n = rewards.shape
    e, i = agent_of_thread(n)
    if e >= num_envs:
        return
    outcome = 1 if tagged[e] else 0
    rewards[e, i] += outcome_reward[outcome, agent_type[i]]


@cuda.jit
def add_closing_rewards(closing_reward, loc_x, loc_y, tagged, distance_before, rewards):
    """docs/tag_rules.md section 2 step 3: each tagger's shaping term, after its outcome term;
    d_after is 0 where the runner is tagged (the game is over).

    closing_reward float32 (c > 0); loc_x, loc_y int32[E, N]; tagged bool[E];
    distance_before int32[E, N - 1] (from ``measure_runner_distance``); rewards float32[E, N].
    """
    num_envs, n = loc_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs or i == n - 1:
        return
    distance_after = 0 if tagged[e] else distance_to_runner(loc_x, loc_y, e, i)
    closed = np.float32(distance_before[e, i] - distance_after)
    rewards[e, i] += mul(closing_reward, closed)  # mul: never fused into the sum, as NumPy rounds twice


@cuda.jit
def finish_step(episode_length, t, tagged, tags, done):
    """docs/tag_rules.md section 2 step 4: counts a tag, then done when tagged or t >= T.
    One thread per environment.

    episode_length int32; t int32[E]; tagged bool[E]; tags int32[E]; done bool[E] (written).
    """
    e = cuda.grid(1)
    if e >= done.shape[0]:
        return
    if tagged[e]:
        tags[e] += 1
    done[e] = tagged[e] or t[e] >= episode_length


@cuda.jit
def observe_full(mask, episode_length, grid_length_f, agent_type, t, loc_x, loc_y, observations):
    """Full observations of the environments where ``mask`` is set.

    mask bool[E]; episode_length int32; grid_length_f float32; agent_type int32[N];
    t int32[E]; loc_x, loc_y int32[E, N]; observations float32[E, N, 4N + 1] (written):
    [x_0..x_{N-1}]/L, [y..]/L, [type..], one-hot of the observer's id, t/T.
    """
    num_envs, n = loc_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs or not mask[e]:
        return
    for j in range(n):
        observations[e, i, j] = np.float32(loc_x[e, j]) / grid_length_f
        observations[e, i, n + j] = np.float32(loc_y[e, j]) / grid_length_f
        observations[e, i, 2 * n + j] = np.float32(agent_type[j])
        observations[e, i, 3 * n + j] = ONE if j == i else ZERO
    observations[e, i, 4 * n] = np.float32(t[e]) / np.float32(episode_length)


@cuda.jit
def observe_partial(mask, episode_length, grid_length_f, agent_type, t, loc_x, loc_y, observations):
    """Partial observations (self and one target) where ``mask`` is set.

    mask bool[E]; episode_length int32; grid_length_f float32; agent_type int32[N];
    t int32[E]; loc_x, loc_y int32[E, N]; observations float32[E, N, 6] (written):
    own x/L, own y/L, target x/L, target y/L, own type, t/T. A tagger's target is the
    runner (agent N-1); the runner's is its nearest tagger, lowest id on a tie.
    """
    num_envs, n = loc_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs or not mask[e]:
        return
    x = loc_x[e, i]
    y = loc_y[e, i]
    runner = n - 1
    target = runner
    if i == runner:
        target = 0
        best_d2 = np.int64(-1)
        for g in range(runner):
            # int64: squared distances of up to 2 * (2**24)**2 overflow int32.
            dx = np.int64(loc_x[e, g]) - np.int64(x)
            dy = np.int64(loc_y[e, g]) - np.int64(y)
            d2 = dx * dx + dy * dy
            if best_d2 < 0 or d2 < best_d2:  # strict: the lower id keeps a tie
                best_d2 = d2
                target = g
    observations[e, i, 0] = np.float32(x) / grid_length_f
    observations[e, i, 1] = np.float32(y) / grid_length_f
    observations[e, i, 2] = np.float32(loc_x[e, target]) / grid_length_f
    observations[e, i, 3] = np.float32(loc_y[e, target]) / grid_length_f
    observations[e, i, 4] = np.float32(agent_type[i])
    observations[e, i, 5] = np.float32(t[e]) / np.float32(episode_length)


@cuda.jit
def reset_agents(mask, seed, episode, fixed_start, grid_length, start_cells, loc_x, loc_y):
    """New start cells for the agents of environments where ``mask`` is set.

    mask bool[E]; seed uint64; episode int32[E] (the stream's counter);
    fixed_start bool; grid_length int32; start_cells float32 (L + 1);
    loc_x, loc_y int32[E, N] (written). Random: cell = min(int(u * (L + 1)), L) with
    u the agent's draw 0 (x) or 1 (y); fixed: taggers at (L//2, L//2), runner at (0, 0).
    """
    num_envs, n = loc_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs or not mask[e]:
        return
    if fixed_start:
        cell = grid_length // 2 if i < n - 1 else 0
        loc_x[e, i] = cell
        loc_y[e, i] = cell
        return
    x = np.int32(reset_uniform_device(seed, e, episode[e], i, 0, DRAWS_PER_AGENT) * start_cells)
    y = np.int32(reset_uniform_device(seed, e, episode[e], i, 1, DRAWS_PER_AGENT) * start_cells)
    loc_x[e, i] = min(x, grid_length)
    loc_y[e, i] = min(y, grid_length)


@cuda.jit
def reset_envs(mask, t, episode):
    """Per-environment part of a reset where ``mask`` is set, after ``reset_agents`` (which
    reads the episode counter). One thread per environment.

    mask bool[E]; t int32[E] (written); episode int32[E] (advanced by one).
    """
    e = cuda.grid(1)
    if e < t.shape[0] and mask[e]:
        t[e] = 0
        episode[e] += np.int32(1)
