"""simple_tag's own rules (MPE2 parity is in test_mpe_parity.py): parameters, roles and what each observes."""

import numpy as np
import pytest
import torch

import warpsim
from warpsim.errors import WarpsimError


@pytest.mark.parametrize("params, message", [
    (dict(num_good=0), r"num_good=0 is not allowed; give an integer in \[1, 4096\]"),
    (dict(num_adversaries=0), r"num_adversaries=0 is not allowed"),
    (dict(num_obstacles=-1), r"num_obstacles=-1 is not allowed; give an integer in \[0, 4096\]"),
    (dict(num_good=3000, num_adversaries=3000), r"make 6000 agents; give at most 4096 in all"),
    (dict(max_cycles=0), r"max_cycles=0 is not allowed"),
    (dict(num_agent_neighbors=0), r"num_agent_neighbors=0 is not allowed; give an integer in \[1, 4096\], or None"),
])
def test_bad_parameters_are_one_line_errors(params, message):
    with pytest.raises(WarpsimError, match=message):
        warpsim.make("simple_tag", 1, backend="numpy", **params)


@pytest.mark.parametrize("params, sizes", [
    (dict(), (16, 14)),  # MPE2's defaults: 1 good agent, 3 adversaries, 2 obstacles
    (dict(num_good=2, num_adversaries=1, num_obstacles=0), (12, 10)),
    (dict(num_agent_neighbors=2, num_landmark_neighbors=1), (14, 14)),
])
def test_adversaries_see_one_good_agents_velocity_more_unless_the_nearest_fix_both(params, sizes):
    env = warpsim.make("simple_tag", 2, backend="numpy", **params)
    assert env.spec.role_observation_sizes == sizes and env.spec.observation_size == max(sizes)
    adversaries = env.params.num_adversaries
    assert not env.observations[:, adversaries:, sizes[1]:].any(), "a good agent's row is zero past its size"


def test_an_adversary_touching_the_good_agent_earns_ten_and_the_good_agent_pays_ten():
    env = warpsim.make("simple_tag", 1, backend="numpy", num_obstacles=0)
    positions = [(0.0, 0.0), (0.5, 0.5), (-0.5, 0.5), (0.1, 0.0)]  # adversary 0 touches the good agent (0.1 < 0.125)
    for i, (x, y) in enumerate(positions):
        env.state.pos_x[0, i], env.state.pos_y[0, i] = x, y
    env.step(torch.zeros(1, 4, 1, dtype=torch.int32))
    np.testing.assert_array_equal(env.rewards[0].numpy(), [10, 10, 10, -10])


def test_the_tags_counter_counts_every_touch_an_adversary_is_paid_for():
    """``tags`` (the counter evaluate reports per episode) grows by an adversary's reward / 10 every step."""
    env = warpsim.make("simple_tag", 64, backend="numpy", seed=3)
    generator = torch.Generator().manual_seed(0)
    paid, before = torch.zeros(64), env.state.tags.clone()
    for _ in range(25):
        env.step(torch.randint(0, 5, env.actions.shape, generator=generator, dtype=torch.int32))
        paid += env.rewards[:, 0] / 10
    assert env.spec.counters == ("tags",) and paid.sum() > 0
    np.testing.assert_array_equal((env.state.tags - before).numpy(), paid.numpy())


def test_the_kernels_count_tags_as_the_reference_does():
    """16 environments touch within the check's first steps (a count off by one is found at step 2)."""
    from warpsim.check import check
    report = check("simple_tag", num_envs=16, steps=8)
    assert report.consistent, str(report)
