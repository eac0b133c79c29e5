"""simple_speaker_listener's own rules (MPE2 parity is in test_mpe_parity.py): parameters, the goal, each role's
actions and view."""

import numpy as np
import pytest
import torch

import warpsim
from warpsim import check
from warpsim.envs.simple_speaker_listener.params import LANDMARK_COLOURS
from warpsim.errors import WarpsimError


@pytest.mark.parametrize("params, message", [
    (dict(max_cycles=0), r"max_cycles=0 is not allowed"),
    (dict(continuous_actions=2), r"continuous_actions=2 is not allowed"),
])
def test_bad_parameters_are_one_line_errors(params, message):
    with pytest.raises(WarpsimError, match=message):
        warpsim.make("simple_speaker_listener", 1, backend="numpy", **params)


def test_the_goal_is_drawn_uniformly_and_only_the_speaker_sees_its_colour():
    env = warpsim.make("simple_speaker_listener", 3000, backend="numpy", seed=5)
    goal = env.state.goal.numpy()
    assert np.bincount(goal, minlength=3).min() > 900
    assert env.spec.role_observation_sizes == (3, 11)
    np.testing.assert_array_equal(env.observations[:, 0, :3].numpy(), LANDMARK_COLOURS[goal])
    assert not env.observations[:, 0, 3:].any() and not env.observations[:, 1, 8:].any(), "zeros past the colour; " \
                                                                                           "nothing said yet"


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
def test_the_listener_hears_the_word_and_moves_while_the_speaker_stays(continuous):
    env = warpsim.make("simple_speaker_listener", 2, backend="numpy", seed=1, continuous_actions=continuous)
    speaker = env.state.pos_x[:, 0].clone(), env.state.pos_y[:, 0].clone()
    if continuous:
        actions = torch.tensor([[[0.2, 0.9, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0, 0.0]]] * 2)
        said = [0.2, 0.9, 0.0]
    else:
        actions = torch.tensor([[[1], [2]]] * 2, dtype=torch.int32)
        said = [0.0, 1.0, 0.0]
    for _ in range(3):
        env.step(actions)
    np.testing.assert_array_equal(env.observations[:, 1, 8:].numpy(), np.array([said] * 2, np.float32))
    assert torch.equal(env.state.pos_x[:, 0], speaker[0]) and torch.equal(env.state.pos_y[:, 0], speaker[1])
    assert bool((env.state.vel_x[:, 1] > 0).all()), "moved right"
    goal = env.state.goal.long()
    dx = env.state.pos_x[:, 1] - env.state.landmark_x[torch.arange(2), goal]
    dy = env.state.pos_y[:, 1] - env.state.landmark_y[torch.arange(2), goal]
    torch.testing.assert_close(env.rewards, (-(dx * dx + dy * dy))[:, None].expand(2, 2))


def test_each_role_acts_with_its_own_actions():
    discrete = warpsim.make("simple_speaker_listener", 1, backend="numpy").spec
    continuous = warpsim.make("simple_speaker_listener", 1, backend="numpy", continuous_actions=True).spec
    assert [discrete.action_levels_of(role) for role in discrete.role_names] == [(3,), (5,)]
    assert [len(continuous.action_bounds_of(role)) for role in continuous.role_names] == [3, 5]


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
def test_the_kernels_are_the_reference_bit_for_bit(continuous):
    """On the simulator (or a GPU), resets included."""
    report = check("simple_speaker_listener", num_envs=3, steps=12, rtol=0.0, atol=0.0, max_cycles=4,
                   continuous_actions=continuous)
    assert report.consistent and report.episodes_ended >= 6, str(report)
