"""The NumPy references compute pairwise quantities a chunk of environments at a time
(warpsim.kernels.chunks): the same bits as one pass, in memory that does not grow with E x N x N."""

import tracemalloc

import numpy as np
import pytest
import torch

import warpsim
from warpsim.kernels import chunks
from warpsim.kernels.chunks import env_chunks

SCENARIOS = [
    ("simple_spread", dict(N=7, max_cycles=6)),
    ("simple_spread", dict(N=7, max_cycles=6, num_agent_neighbors=3, num_landmark_neighbors=2)),
    ("simple_tag", dict(num_adversaries=4, num_good=3, max_cycles=6)),
    ("simple_tag", dict(num_adversaries=4, num_good=3, max_cycles=6, num_agent_neighbors=2)),
    ("tag_continuous", dict(num_taggers=3, num_runners=5, episode_length=6, use_full_observation=False,
                            num_other_agents_observed=3)),
    ("tag_continuous", dict(num_taggers=3, num_runners=5, episode_length=6)),
]


def test_chunks_cover_every_environment_once_in_order_within_the_limit(monkeypatch):
    monkeypatch.setattr(chunks, "PAIRWISE_CHUNK", 100)
    envs = np.arange(3, 20)
    split = list(env_chunks(envs, 5, 6))
    assert [len(chunk) for chunk in split] == [3, 3, 3, 3, 3, 2]
    np.testing.assert_array_equal(np.concatenate(split), envs)
    assert [len(chunk) for chunk in env_chunks(envs, 50, 50)] == [1] * len(envs), "at least one environment a chunk"
    assert list(env_chunks(envs[:0], 5, 6)) == []


def _trajectory(name: str, params: dict, steps: int = 14) -> list[np.ndarray]:
    env = warpsim.make(name, 5, backend="numpy", seed=3, **params)
    generator = torch.Generator().manual_seed(1)
    seen = [env.observations.numpy().copy()]
    for _ in range(steps):
        actions = torch.randint(0, 5, env.actions.shape, generator=generator, dtype=env.actions.dtype)
        observations, rewards, done = env.step(actions)
        seen += [observations.numpy().copy(), rewards.numpy().copy(), done.numpy().copy()]
    return seen


@pytest.mark.parametrize("name, params", SCENARIOS)
def test_one_environment_at_a_time_steps_as_all_at_once(name, params, monkeypatch):
    # Episodes end at step 6 and 12: resets of some environments go through the chunks too
    whole = _trajectory(name, params)
    monkeypatch.setattr(chunks, "PAIRWISE_CHUNK", 1)
    for step, (expected, got) in enumerate(zip(whole, _trajectory(name, params))):
        np.testing.assert_array_equal(got, expected, err_msg=f"array {step} of the trajectory")


@pytest.mark.parametrize("name, num_envs, params", [
    ("simple_spread", 64, dict(N=300, num_agent_neighbors=5, num_landmark_neighbors=5)),
    ("simple_spread", 1024, dict(N=3)),
    ("simple_tag", 32, dict(num_adversaries=300, num_good=100, num_agent_neighbors=5)),
    ("simple_tag", 1024, {}),
    ("simple_adversary", 32, dict(N=100)),
    ("tag_continuous", 64, dict(num_taggers=10, num_runners=100)),
    ("tag_continuous", 64, dict(num_taggers=10, num_runners=100, use_full_observation=False,
                                num_other_agents_observed=10)),
    ("tag_gridworld", 1024, {}),
])
def test_the_memory_check_counts_what_a_reset_and_a_step_allocate(name, num_envs, params, monkeypatch):
    # Chunks of about one environment: a reference holding pairwise arrays of every environment at once
    # (64 x 300 x 300 floats, 22 MiB each, for simple_spread) allocates many times what it declares
    monkeypatch.setattr(chunks, "PAIRWISE_CHUNK", 1 << 16)
    env = warpsim.make(name, num_envs, backend="numpy", **params)
    tracemalloc.start()
    try:
        env.reset()
        env.step(torch.zeros(env.actions.shape, dtype=env.actions.dtype))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= 1.25 * env.workspace_bytes(), (f"a reset and a step allocated {peak / 2**20:.1f} MiB; the "
                                                  f"environment declares {env.workspace_bytes() / 2**20:.1f} MiB")
