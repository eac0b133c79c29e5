"""The copy-me template environment (beacon): hand-worked rules and kernel parity."""

import numpy as np
import pytest
import torch
from helpers import KERNEL_TARGETS, assert_same, compared_arrays, require_target

import warpsim
from warpsim.envs.template import Beacon


def test_moves_clip_at_the_wall_and_reaching_the_beacon_pays_one():
    env = warpsim.make(Beacon, 1, backend="numpy", num_agents=3, grid_length=4.0, step_size=1.0,
                       reach_radius=0.5, episode_length=10)
    env.state.pos_x.copy_(torch.tensor([[3.5, 1.0, 2.0]]))
    env.state.pos_y.copy_(torch.tensor([[0.2, 1.0, 2.0]]))
    env.state.beacon_x.fill_(2.0)
    env.state.beacon_y.fill_(1.0)
    observations, rewards, done = env.step(np.array([[[1], [1], [4]]]))  # +x, +x, -y
    np.testing.assert_allclose(env.state.pos_x[0].numpy(), [4.0, 2.0, 2.0])
    np.testing.assert_allclose(env.state.pos_y[0].numpy(), [0.2, 1.0, 1.0])
    np.testing.assert_allclose(rewards[0].numpy(), [0.0, 1.0, 1.0])
    np.testing.assert_allclose(observations[0, 0].numpy(), [-0.5, 0.2, 0.1], rtol=1e-6)
    assert not done[0]


def test_episode_ends_after_episode_length_steps():
    env = warpsim.make(Beacon, 2, backend="numpy", episode_length=3)
    flags = [env.step(np.zeros((2, 4, 1), np.int32))[2].tolist() for _ in range(3)]
    assert flags == [[False, False], [False, False], [True, True]]
    assert env.state.t.tolist() == [0, 0] and env.state.episode.tolist() == [2, 2]


@pytest.mark.parametrize("params, match", [
    (dict(num_agents=0), r"num_agents=0 is not allowed; give an integer in \[1, 2147483647\]"),
    (dict(step_size=-1.0), r"step_size=-1.0 is not allowed"),
])
def test_invalid_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        warpsim.make(Beacon, 1, backend="numpy", **params)


@pytest.mark.parametrize("target", KERNEL_TARGETS)
def test_kernels_match_reference_across_episodes(target):
    require_target(target)
    params = dict(num_agents=5, episode_length=4, reach_radius=3.0)
    reference = warpsim.make(Beacon, 2, backend="numpy", seed=4, **params)
    kernels = warpsim.make(Beacon, 2, backend="cuda", seed=4, **params)
    assert_same(compared_arrays(reference), compared_arrays(kernels), "after the reset")
    rng = np.random.default_rng(1)
    for step in range(9):
        actions = rng.integers(0, 5, (2, 5, 1)).astype(np.int32)
        reference.step(actions)
        kernels.step(actions)
        assert_same(compared_arrays(reference), compared_arrays(kernels), f"after step {step}")
    assert reference.state.episode.tolist() == [3, 3]


@pytest.mark.gpu
def test_a_cuda_c_kernel_through_cupy_matches_the_reference():
    pytest.importorskip("cupy")
    from warpsim.envs.template.cuda_c import BeaconCudaC

    report = warpsim.check(BeaconCudaC, num_envs=64, steps=40, num_agents=16, episode_length=7)
    assert report.consistent, str(report)
    assert report.episodes_ended == 64 * 5
