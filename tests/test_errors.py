"""Bad input gets a clear error naming the value and what is allowed, before allocating."""

import numpy as np
import pytest
import torch

import warpsim


@pytest.mark.parametrize("params, match", [
    (dict(tag_penalty_for_runner=0.5), r"tag_penalty_for_runner=0.5 .*\[-1e\+09, 0\]"),
    (dict(edge_hit_penalty=1.0), r"edge_hit_penalty=1.0 .*\[-1e\+09, 0\]"),
    (dict(num_runners=0), r"num_runners=0 .*integer in \[1, 2147483647\]"),
    (dict(num_taggers=2.5), r"num_taggers=2.5 .*integer in \[1, "),
    (dict(tagging_distance=1.5), r"tagging_distance=1.5 .*\[0, 1\]"),
    (dict(use_full_observation=False, num_other_agents_observed=11), r"num_other_agents_observed=11 .*K < N=11"),
    (dict(use_full_observation=False, num_other_agents_observed=65, num_runners=100), r"K <= 64"),
    (dict(max_turn=-2.0), r"max_turn=-2.0 .*min_turn"),
    (dict(grid_length=float("nan")), r"grid_length=nan"),
])
def test_invalid_parameters_are_named_with_their_allowed_range(params, match):
    with pytest.raises(ValueError, match=match):
        warpsim.make("tag_continuous", 1, backend="numpy", **params)


def test_unknown_parameter_lists_the_valid_ones():
    with pytest.raises(TypeError, match=r"'num_tagers'.*parameters: num_taggers, num_runners"):
        warpsim.make("tag_continuous", 1, num_tagers=3)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(backend="tpu"), ValueError, r"backend='tpu'.*auto, cuda, numpy"),
    (dict(seed=-1), ValueError, r"seed=-1 .*\[0, 2\*\*32\)"),
    (dict(backend="numpy", device="cuda:0"), ValueError, r"numpy backend runs on 'cpu'"),
])
def test_invalid_runtime_options(kwargs, error, match):
    with pytest.raises(error, match=match):
        warpsim.make("tag_continuous", 1, **kwargs)


def test_num_envs_must_be_a_positive_integer():
    with pytest.raises(ValueError, match=r"num_envs=0 .*>= 1"):
        warpsim.make("tag_continuous", 0, backend="numpy")


def test_unknown_environment_id_lists_the_registered_ones():
    with pytest.raises(ValueError, match=r"unknown environment 'tag'.*tag_continuous"):
        warpsim.make("tag")


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_wrong_action_shape_or_dtype(backend):
    env = warpsim.make("tag_continuous", 2, backend=backend, num_runners=3)
    with pytest.raises(ValueError, match=r"shape \(2, 4\); expected \(2, 4, 2\)"):
        env.step(np.zeros((2, 4), np.int32))
    with pytest.raises(TypeError, match=r"dtype torch.float32; expected an integer"):
        env.step(np.zeros((2, 4, 2), np.float32))


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_out_of_range_action_in_checked_mode(backend):
    env = warpsim.make("tag_continuous", 2, backend=backend, num_runners=3, num_turn_levels=4)
    actions = np.zeros((2, 4, 2), np.int32)
    actions[1, 2, 1] = 5
    t_before = env.state.t.clone()
    with pytest.raises(ValueError, match=r"index 5 of component 1 \(env 1, agent 2\).*allowed: 0..4"):
        env.step(actions)
    assert torch.equal(env.state.t, t_before), "a refused step changes no state"


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_unchecked_out_of_range_actions_are_clamped_not_read_out_of_bounds(backend):
    env = warpsim.make("tag_continuous", 1, backend=backend, num_runners=2, checked=False)
    twin = warpsim.make("tag_continuous", 1, backend=backend, num_runners=2)
    env.step(np.full((1, 3, 2), 99, np.int32))
    twin.step(np.full((1, 3, 2), 10, np.int32))
    assert torch.equal(env.state.direction, twin.state.direction)
    assert torch.equal(env.state.acceleration, twin.state.acceleration)


def test_a_configuration_too_large_for_memory_is_refused_before_allocating():
    with pytest.raises(MemoryError, match=r"num_envs=100000, num_agents=1000 .*GiB.*free"):
        warpsim.make("tag_continuous", 100000, backend="numpy", num_taggers=50, num_runners=950)
