"""tag_continuous's test helpers: twin environments and random valid states."""

import numpy as np

import warpsim


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
