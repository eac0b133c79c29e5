"""The lanes of an episode's random numbers: one per (step, agent, draw), the same in NumPy and in kernels."""

import numpy as np
import pytest
from helpers import KERNEL_TARGETS, require_target
from numba import cuda

from warpsim.kernels.indexing import agent_of_thread
from warpsim.kernels.random import lane, reset_uniform, reset_uniform_device, step_uniform, step_uniform_device, uniform


def test_every_number_of_an_episode_has_a_lane_of_its_own():
    n, draws, episode_length = 3, 2, 4
    t, agent, draw = np.meshgrid(np.arange(episode_length + 1), np.arange(n + 1), np.arange(draws), indexing="ij")
    lanes = lane(t, agent, n, draw, draws).ravel()
    assert lanes.dtype == np.uint64
    assert sorted(lanes.tolist()) == list(range((episode_length + 1) * (n + 1) * draws)), "distinct and dense"


def test_reset_lanes_are_agent_times_draws_plus_draw():
    # The layout the shipped environments' starts have always been drawn with: a seed keeps its starts.
    agent = np.arange(5)[:, None]
    for draw in range(3):
        assert lane(0, agent, 4, draw, 3).tolist() == (agent * 3 + draw).tolist()
        expected = uniform(7, 2, 9, agent * 3 + draw)
        assert np.array_equal(reset_uniform(np.uint64(7), 2, 9, agent, draw, 3), expected)


@cuda.jit
def draw_both(seed, episode, t, reset_numbers, step_numbers):
    """seed uint64; episode, t int32[E]; reset_numbers, step_numbers float32[E, N + 1, 2]."""
    num_envs, slots = reset_numbers.shape[0], reset_numbers.shape[1]
    e, i = agent_of_thread(slots)
    if e >= num_envs:
        return
    for k in range(2):
        reset_numbers[e, i, k] = reset_uniform_device(seed, e, episode[e], i, k, 2)
        step_numbers[e, i, k] = step_uniform_device(seed, e, episode[e], t[e], i, slots - 1, k, 2)


@pytest.mark.parametrize("target", KERNEL_TARGETS)
def test_the_kernel_twins_draw_the_numpy_numbers(target):
    require_target(target)
    n, seed = 3, np.uint64(11)
    episode, t = np.array([0, 4, 7], np.int32), np.array([1, 5, 50], np.int32)
    on_kernels = [np.zeros((3, n + 1, 2), np.float32) for _ in range(2)]
    draw_both[1, 3 * (n + 1)](seed, episode, t, *on_kernels)
    env, agent, draw = np.arange(3)[:, None, None], np.arange(n + 1)[None, :, None], np.arange(2)[None, None, :]
    reset = reset_uniform(seed, env, episode[env], agent, draw, 2)
    step = step_uniform(seed, env, episode[env], t[env], agent, n, draw, 2)
    assert np.array_equal(on_kernels[0], reset) and np.array_equal(on_kernels[1], step)
    assert not np.array_equal(reset, step), "a step draws numbers of its own"
