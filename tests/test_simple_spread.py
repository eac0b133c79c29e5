"""simple_spread's own rules (MPE2 parity is in test_mpe_parity.py): parameters and what an agent sees."""

import numpy as np
import pytest
import torch

import warpsim
from warpsim.check import check
from warpsim.errors import WarpsimError


@pytest.mark.parametrize("params, message", [
    (dict(N=0), r"N=0 is not allowed; give an integer in \[1, 4096\]"),
    (dict(N=5000), r"N=5000 is not allowed"),
    (dict(local_ratio=1.5), r"local_ratio=1.5 is not allowed; give a number in \[0, 1\]"),
    (dict(max_cycles=0), r"max_cycles=0 is not allowed"),
    (dict(continuous_actions="yes"), r"continuous_actions='yes' is not allowed"),
    (dict(N=4096, max_cycles=2**20), r"max_cycles=1048576 with N=4096 numbers more random draws"),
    (dict(num_agent_neighbors=0), r"num_agent_neighbors=0 is not allowed; give an integer in \[1, 4096\], or None"),
    (dict(num_landmark_neighbors=2.0), r"num_landmark_neighbors=2.0 is not allowed"),
    (dict(num_landmark_neighbors=True), r"num_landmark_neighbors=True is not allowed"),
])
def test_bad_parameters_are_one_line_errors(params, message):
    with pytest.raises(WarpsimError, match=message):
        warpsim.make("simple_spread", 1, backend="numpy", **params)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_an_agent_sees_itself_every_landmark_and_every_other_agent_in_mpe2s_order(n):
    env = warpsim.make("simple_spread", 2, backend="numpy", N=n, seed=4)
    s = {name: tensor.numpy() for name, tensor in env.state.items()}
    obs = env.observations.numpy()
    assert obs.shape == (2, n, 6 * n)
    for e in range(2):
        for i in range(n):
            others = [j for j in range(n) if j != i]
            expected = [0.0, 0.0, s["pos_x"][e, i], s["pos_y"][e, i]]
            for landmark in range(n):
                expected += [s["landmark_x"][e, landmark] - s["pos_x"][e, i],
                             s["landmark_y"][e, landmark] - s["pos_y"][e, i]]
            for j in others:
                expected += [s["pos_x"][e, j] - s["pos_x"][e, i], s["pos_y"][e, j] - s["pos_y"][e, i]]
            expected += [0.0] * (2 * len(others))
            np.testing.assert_array_equal(obs[e, i], np.array(expected, np.float32))
    assert np.all(np.abs(obs[:, :, 2:4]) <= 1), "agents start in [-1, 1]^2"


def test_an_episode_is_cut_after_max_cycles_never_terminated():
    env = warpsim.make("simple_spread", 3, backend="numpy", max_cycles=7)
    for step in range(1, 15):
        env.step()
        assert env.done.tolist() == [step % 7 == 0] * 3 and not env.terminated.any()


def test_a_step_moves_by_the_old_velocity_then_pushes_and_weighs_the_rewards_by_local_ratio():
    """Two agents at rest, touching, each on a landmark: the step moves them by their velocity before it
    changes (MPE's order), so each landmark stays covered; their contact pushes them apart from the next
    step on, and each is penalised once for touching the other."""
    env = warpsim.make("simple_spread", 1, backend="numpy", N=2, local_ratio=0.25)
    start = dict(pos_x=[0.0, 0.1], pos_y=[0.0, 0.0], landmark_x=[0.0, 0.1], landmark_y=[0.0, 0.0],
                 vel_x=[0.0, 0.0], vel_y=[0.0, 0.0])
    for name, values in start.items():
        getattr(env.state, name)[0] = torch.tensor(values)
    env.step(torch.zeros(1, 2, 1, dtype=torch.int32))
    assert env.state.pos_x[0].tolist() == np.array(start["pos_x"], np.float32).tolist()
    assert env.rewards[0].tolist() == [-0.25, -0.25]
    assert env.state.vel_x[0, 0] < 0 < env.state.vel_x[0, 1] and env.state.vel_y[0].tolist() == [0.0, 0.0]
    env.step(torch.zeros(1, 2, 1, dtype=torch.int32))
    x = env.state.pos_x[0].numpy()
    assert x[0] < 0 and x[1] > 0.1 and x[1] - x[0] > 0.3, "pushed apart, no longer touching"
    coverage = -(np.abs(x[0]) + np.abs(x[1] - np.float32(0.1)))
    np.testing.assert_allclose(env.rewards[0].numpy(), [coverage * 0.75] * 2, rtol=1e-6)


@pytest.mark.slow
def test_the_kernels_step_as_the_reference_bit_for_bit_at_forty_agents_observing_the_eight_nearest():
    """On the simulator here (and at N = 1000 on a GPU: test_check_gpu.py)."""
    report = check("simple_spread", num_envs=2, steps=4, rtol=0.0, atol=0.0, N=40, num_agent_neighbors=8,
                   num_landmark_neighbors=8, max_cycles=3)
    assert report.consistent and report.episodes_ended == 2, str(report)
