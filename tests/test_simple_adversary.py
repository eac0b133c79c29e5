"""simple_adversary's own rules (MPE2 parity is in test_mpe_parity.py): parameters, the goal, each role's view."""

import numpy as np
import pytest

import warpsim
from warpsim.errors import WarpsimError


@pytest.mark.parametrize("params, message", [
    (dict(N=0), r"N=0 is not allowed; give an integer in \[1, 2047\]"),
    (dict(max_cycles=0), r"max_cycles=0 is not allowed"),
    (dict(num_landmark_neighbors=-2), r"num_landmark_neighbors=-2 is not allowed"),
])
def test_bad_parameters_are_one_line_errors(params, message):
    with pytest.raises(WarpsimError, match=message):
        warpsim.make("simple_adversary", 1, backend="numpy", **params)


def test_the_goal_is_drawn_uniformly_among_the_landmarks_and_only_good_agents_see_it():
    env = warpsim.make("simple_adversary", 3000, backend="numpy", N=3, seed=5)
    counts = np.bincount(env.state.goal.numpy(), minlength=3)
    assert counts.min() > 900, counts
    assert env.spec.role_observation_sizes == (12, 14)
    goal = env.state.goal.numpy()
    landmark_x = env.state.landmark_x.numpy()[np.arange(3000), goal]
    np.testing.assert_array_equal(env.observations[:, 1:, 0].numpy(),
                                  landmark_x[:, None] - env.state.pos_x.numpy()[:, 1:])
    assert not env.observations[:, 0, 12:].any(), "the adversary's row is zero past its 12 entries"
