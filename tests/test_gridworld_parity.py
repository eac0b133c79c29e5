"""tag_gridworld's kernels against its NumPy reference, state for state.

Both backends start from the same injected random state and take the same random
actions; after every step every state array, the observations, rewards (bit for bit) and
done flags must agree (finished environments are reset in place, so the resets are compared
too). Without a GPU the kernels run on Numba's CUDA simulator (tiny sizes); with one,
the ``gpu`` variant runs the same comparison on the device.
"""

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import KERNEL_TARGETS, assert_same, compared_arrays, random_actions, require_target, write_state

import warpsim
from warpsim.device import SIMULATOR_THREADS_PER_BLOCK, THREADS_PER_BLOCK, simulator_enabled
from warpsim.envs.tag_gridworld import TagGridworld

STEPS = 8


def block_size() -> int:
    return SIMULATOR_THREADS_PER_BLOCK if simulator_enabled() else THREADS_PER_BLOCK


def twin_envs(num_envs: int, seed: int = 0, **params):
    """The same tag_gridworld on the NumPy reference and on the kernels."""
    reference = warpsim.make(TagGridworld, num_envs, backend="numpy", seed=seed, **params)
    kernels = warpsim.make(TagGridworld, num_envs, backend="cuda", seed=seed, **params)
    return reference, kernels


def random_state(env, rng: np.random.Generator) -> dict:
    """Random cells in [0, L] and clocks in [0, T)."""
    p = env.params
    e, n = env.num_envs, env.num_agents
    return {
        "loc_x": rng.integers(0, p.grid_length + 1, (e, n)),
        "loc_y": rng.integers(0, p.grid_length + 1, (e, n)),
        "t": rng.integers(0, p.episode_length, e),
    }


# E * N stays <= ~40: the simulator runs one Python thread per CUDA thread.
CONFIGS: dict[str, Callable[[], dict[str, Any]]] = {
    "full-N2": lambda: dict(num_envs=3, num_taggers=1, grid_length=2, use_full_observation=True),
    "full-N4": lambda: dict(num_envs=2, num_taggers=3, grid_length=3, use_full_observation=True,
                            wall_hit_penalty=0.3, tag_reward_for_tagger=2.5,
                            tag_penalty_for_runner=1.25, step_cost_for_tagger=0.1),
    "full-N4-closing": lambda: dict(num_envs=2, num_taggers=3, grid_length=3, use_full_observation=True,
                                    wall_hit_penalty=0.3, step_cost_for_tagger=0.1, closing_reward_for_tagger=0.3),
    "partial-N5": lambda: dict(num_envs=2, num_taggers=4, grid_length=3, use_full_observation=False),
    "partial-N5-closing": lambda: dict(num_envs=2, num_taggers=4, grid_length=3, use_full_observation=False,
                                       closing_reward_for_tagger=0.7),
    "partial-N5-fixed-start": lambda: dict(num_envs=2, num_taggers=4, grid_length=2,
                                           use_full_observation=False, fixed_start=True),
    "partial-N-over-block": lambda: dict(num_envs=1, num_taggers=block_size() + 1, grid_length=3,
                                         use_full_observation=False),
    "full-N-over-block": lambda: dict(num_envs=1, num_taggers=block_size() + 2, grid_length=3,
                                      use_full_observation=True),
}


def run_and_compare(config: str, actions_of, **overrides) -> None:
    kwargs = {**CONFIGS[config](), **overrides}
    num_envs = kwargs.pop("num_envs")
    reference, kernels = twin_envs(num_envs, seed=11, episode_length=4, **kwargs)
    rng = np.random.default_rng(sum(map(ord, config)))
    state = random_state(reference, rng)
    write_state(reference, state)
    write_state(kernels, state)
    tag_reward = reference.params.tag_reward_for_tagger
    saw_tag = saw_done = False
    for step in range(STEPS):
        actions = actions_of(reference, rng)
        reference.step(actions)
        kernels.step(actions)
        expected, got = compared_arrays(reference), compared_arrays(kernels)
        assert_same(expected, got, f"after step {step} of {config}")
        np.testing.assert_array_equal(got["rewards"], expected["rewards"], f"rewards after step {step} of {config}")
        saw_tag |= bool((expected["rewards"] >= tag_reward - reference.params.wall_hit_penalty).any())
        saw_done |= bool(expected["done"].any())
    assert saw_tag and saw_done, "the comparison must cover tags and episode ends"


@pytest.mark.parametrize("target", KERNEL_TARGETS)
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_kernels_match_reference_step_for_step(target, config):
    require_target(target)
    run_and_compare(config, random_actions)


@pytest.mark.parametrize("target", KERNEL_TARGETS)
@pytest.mark.parametrize("config", ["full-N4", "partial-N5"])
def test_out_of_range_actions_are_clamped_alike(target, config):
    """With checks off, indices outside [0, 4] are clamped by both backends, never read
    out of bounds."""
    require_target(target)

    def wild_actions(env, rng):
        return rng.integers(-3, 9, tuple(env.actions.shape)).astype(np.int32)

    run_and_compare(config, wild_actions, checked=False)


@pytest.mark.parametrize("target", KERNEL_TARGETS)
@pytest.mark.parametrize("full", [True, False], ids=["full", "partial"])
@pytest.mark.parametrize("fixed_start", [False, True], ids=["random-start", "fixed-start"])
def test_kernel_resets_draw_the_reference_starts(target, full, fixed_start):
    require_target(target)
    reference, kernels = twin_envs(3, seed=5, num_taggers=3, grid_length=6,
                                   use_full_observation=full, fixed_start=fixed_start)
    assert_same(compared_arrays(reference), compared_arrays(kernels), "after the first reset")
    for attempt in range(2):
        reference.reset()
        kernels.reset()
        assert_same(compared_arrays(reference), compared_arrays(kernels), f"after reset {attempt + 2}")
