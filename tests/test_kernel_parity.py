"""The kernels against the NumPy reference, state for state, from injected random states.

Without a GPU the kernels run on Numba's CUDA simulator (tiny sizes); with one, the
``gpu`` variant runs the same comparison on the device.
"""

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import KERNEL_TARGETS, assert_same, compared_arrays, random_actions, require_target, write_state
from tag_continuous_helpers import random_state, twin_envs

from warpsim.device import SIMULATOR_THREADS_PER_BLOCK, THREADS_PER_BLOCK, simulator_enabled

STEPS = 8


def block_size() -> int:
    return SIMULATOR_THREADS_PER_BLOCK if simulator_enabled() else THREADS_PER_BLOCK


CONFIGS: dict[str, Callable[[], dict[str, Any]]] = {
    "full-N3": lambda: dict(num_envs=3, num_taggers=1, num_runners=2, use_full_observation=True),
    "full-N6": lambda: dict(num_envs=2, num_taggers=2, num_runners=4, use_full_observation=True,
                            runner_exits_game_after_tagged=False, edge_hit_penalty=-0.25,
                            step_penalty_for_tagger=-0.1, step_reward_for_runner=0.05),
    "partial-N7-K3": lambda: dict(num_envs=2, num_taggers=2, num_runners=5, use_full_observation=False,
                                  num_other_agents_observed=3),
    "partial-N-over-block": lambda: dict(num_envs=1, num_taggers=2, num_runners=block_size() + 1,
                                         use_full_observation=False, num_other_agents_observed=4),
    "partial-grid-N-over-block": lambda: dict(num_envs=1, num_taggers=3, num_runners=block_size() + 3,
                                              use_full_observation=False, num_other_agents_observed=4,
                                              neighbour_search="grid"),
    "full-N-over-block": lambda: dict(num_envs=1, num_taggers=1, num_runners=block_size() + 2,
                                      use_full_observation=True),
}


@pytest.mark.parametrize("target", KERNEL_TARGETS)
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_kernels_match_reference_step_for_step(target, config):
    require_target(target)
    kwargs = CONFIGS[config]()
    num_envs = kwargs.pop("num_envs")
    params = dict(grid_length=4.0, tagging_distance=0.15, episode_length=6, max_acceleration=0.5,
                  min_acceleration=-0.5, skill_level_tagger=1.2, **kwargs)
    reference, kernels = twin_envs(num_envs, seed=11, **params)
    rng = np.random.default_rng(sum(map(ord, config)))
    state = random_state(reference, rng)
    write_state(reference, state)
    write_state(kernels, state)
    saw_tag = saw_done = False
    for step in range(STEPS):
        actions = random_actions(reference, rng)
        reference.step(actions)
        kernels.step(actions)
        expected, got = compared_arrays(reference), compared_arrays(kernels)
        assert_same(expected, got, f"after step {step} of {config}")
        saw_tag |= bool((expected["rewards"] > 0.5).any())
        saw_done |= bool(expected["done"].any())
    assert saw_tag and saw_done, "the comparison must cover tags and episode ends"


@pytest.mark.parametrize("target", KERNEL_TARGETS)
@pytest.mark.parametrize("full", [True, False], ids=["full", "partial"])
def test_kernel_resets_draw_the_reference_starts(target, full):
    require_target(target)
    reference, kernels = twin_envs(3, seed=5, num_taggers=2, num_runners=3, use_full_observation=full)
    assert_same(compared_arrays(reference), compared_arrays(kernels), "after the first reset")
    reference.reset()
    kernels.reset()
    assert_same(compared_arrays(reference), compared_arrays(kernels), "after a second reset")
