"""Shared test helpers: twin environments and random injected states."""

import numpy as np
import pytest
import torch

import warpsim
from warpsim.device import simulator_enabled

KERNEL_TARGETS = [
    pytest.param("simulator", id="simulator"),
    pytest.param("gpu", id="gpu", marks=pytest.mark.gpu),
]


def require_target(target: str) -> None:
    """Skips the simulator variant when a real GPU runs the kernels, and vice versa."""
    if target == "simulator" and not simulator_enabled():
        pytest.skip("a real GPU runs the kernels in this session (see the gpu variant)")
    if target == "gpu" and simulator_enabled():
        pytest.skip("needs a CUDA GPU")


def twin_envs(num_envs: int, seed: int = 0, **params):
    """The same environment on the NumPy reference and on the kernels."""
    reference = warpsim.make("tag_continuous", num_envs, backend="numpy", seed=seed, **params)
    kernels = warpsim.make("tag_continuous", num_envs, backend="cuda", seed=seed, **params)
    return reference, kernels


def random_state(env, rng: np.random.Generator, out_fraction: float = 0.3) -> dict:
    """A valid random state: some runners out of the game (frozen, speed and direction 0)."""
    p = env.params
    e, n = env.num_envs, env.num_agents
    alive = (rng.random((e, n)) >= out_fraction).astype(np.int32)
    alive[:, :p.num_taggers] = 1
    max_speed = np.where(np.arange(n) < p.num_taggers, p.skill_level_tagger, p.skill_level_runner) * p.max_speed
    state = {
        "loc_x": rng.uniform(0, p.grid_length, (e, n)),
        "loc_y": rng.uniform(0, p.grid_length, (e, n)),
        "speed": rng.uniform(0, 1, (e, n)) * max_speed * alive,
        "direction": rng.uniform(0, 2 * np.pi, (e, n)) * alive,
        "acceleration": rng.uniform(-0.5, 0.5, (e, n)) * alive,
        "still_in_game": alive,
        "num_runners_left": alive[:, p.num_taggers:].sum(axis=1),
        "t": rng.integers(0, p.episode_length, e),
    }
    return state


def write_state(env, state: dict) -> None:
    for name, value in state.items():
        target = getattr(env.state, name)
        target.copy_(torch.as_tensor(np.asarray(value), dtype=target.dtype))


def random_actions(env, rng: np.random.Generator) -> np.ndarray:
    levels = np.array(env.spec.action_levels)
    return (rng.random(tuple(env.actions.shape)) * levels).astype(np.int32)


def compared_arrays(env) -> dict:
    """Every array a step writes, as NumPy copies, by name."""
    arrays = {name: getattr(env.state, name) for name in env.state}
    arrays.update(observations=env.observations, rewards=env.rewards, done=env.done)
    return {name: tensor.detach().cpu().numpy().copy() for name, tensor in arrays.items()}


def assert_same(reference: dict, kernels: dict, when: str) -> None:
    for name, expected in reference.items():
        np.testing.assert_allclose(kernels[name], expected, rtol=1e-5, atol=1e-5,
                                   err_msg=f"{name} differs {when}")
