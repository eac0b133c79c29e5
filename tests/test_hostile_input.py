"""Odd and hostile input to the Python API: clear errors, found before any work is done."""

import time

import numpy as np
import pytest
import torch

import warpsim
from warpsim.envs.template import Beacon
from warpsim.errors import DoesNotFitError, InvalidTypeError, InvalidValueError


def gridworld(**kwargs):
    return warpsim.make("tag_gridworld", 2, backend="numpy", num_taggers=2, grid_length=4, **kwargs)


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_wide_actions_are_range_checked_before_they_are_narrowed_to_int32(backend):
    env = warpsim.make("tag_gridworld", 2, backend=backend, num_taggers=2, grid_length=4)
    actions = np.zeros((2, 3, 1), np.int64)
    actions[1, 2, 0] = 2**32 + 3  # int32 narrowing would make it 3, a valid index
    t_before = env.state.t.clone()
    with pytest.raises(InvalidValueError, match=r"action index 4294967299 of component 0 \(env 1, agent 2\)"):
        env.step(actions)
    assert torch.equal(env.state.t, t_before)


def test_unchecked_wide_actions_are_clamped_not_wrapped():
    env = gridworld(checked=False, seed=3)
    twin = gridworld(checked=False, seed=3)
    env.step(np.full((2, 3, 1), 2**32 + 3, np.int64))  # wrapped it would be 3 (a move); clamped, the last index
    twin.step(np.full((2, 3, 1), 2**31 - 1, np.int64))
    assert torch.equal(env.state.loc_x, twin.state.loc_x) and torch.equal(env.state.loc_y, twin.state.loc_y)


@pytest.mark.parametrize("value, error, match", [
    (np.zeros((2, 3, 1), np.int32)[::-1], None, None),  # negative strides: a copy, not an error
    (np.zeros((2, 3, 1), object), InvalidTypeError, r"actions have NumPy dtype object"),
    (np.full((2, 3, 1), "1"), InvalidTypeError, r"actions have NumPy dtype <U1"),
    ("0", InvalidTypeError, r"actions is a str \('0'\)"),
    (torch.zeros((2, 3, 1), dtype=torch.int32, device="meta"), InvalidValueError, r"meta tensor of shape \(2, 3, 1\)"),
    ([[[0]], [[0], [1]]], InvalidValueError, r"actions cannot be made an array \(list\)"),
    (np.zeros((2, 3, 1), np.uint64), None, None),
])
def test_odd_action_inputs_work_or_get_a_clear_error(value, error, match):
    env = gridworld()
    if error is None:
        env.step(value)
    else:
        with pytest.raises(error, match=match):
            env.step(value)


@pytest.mark.parametrize("mask, error, match", [
    (np.array([True, False])[::-1], None, None),
    (np.array([1, 0]), InvalidValueError, r"reset mask has shape \(2,\) and dtype torch.int64; expected bool\[2\]"),
    (torch.ones(3, dtype=torch.bool), InvalidValueError, r"shape \(3,\).*expected bool\[2\]"),
    ("yes", InvalidTypeError, r"reset mask is a str \('yes'\)"),
    (np.array([None, None]), InvalidTypeError, r"reset mask have NumPy dtype object"),
    (torch.ones(2, dtype=torch.bool, device="meta"), InvalidValueError, r"reset mask is a meta tensor"),
])
def test_odd_reset_masks_work_or_get_a_clear_error(mask, error, match):
    env = gridworld()
    if error is None:
        env.reset(mask)
    else:
        with pytest.raises(error, match=match):
            env.reset(mask)


@pytest.mark.parametrize("checked", ["no", 1, None])
def test_checked_must_be_a_bool(checked):
    with pytest.raises(InvalidTypeError, match=f"checked={checked!r} is not allowed; give True or False"):
        gridworld(checked=checked)


def test_two_to_the_31_agents_are_refused_at_once():
    begin = time.perf_counter()
    with pytest.raises(DoesNotFitError, match=r"num_agents=2147483647 needs .* GiB"):
        warpsim.make("tag_continuous", 1, backend="numpy", num_runners=2**31 - 2, use_full_observation=False)
    assert time.perf_counter() - begin < 1.0, "the size is checked before describe() builds per-agent tuples"


def test_the_numpy_backend_counts_its_pairwise_temporaries():
    # 2**24 agents: small arrays (K = 2), but the reference's N x N temporaries need petabytes.
    with pytest.raises(DoesNotFitError, match=r"num_agents=16777217 needs .* for its arrays and a step's temporaries"):
        warpsim.make("tag_continuous", 1, backend="numpy", num_runners=2**24, use_full_observation=False)


@pytest.mark.parametrize("env_id, params, match", [
    ("beacon", dict(grid_length=float("inf")), r"grid_length=inf is not allowed; give a number in \[1e-09, 1e\+09\]"),
    ("beacon", dict(grid_length=1e300), r"grid_length=1e\+300"),
    ("beacon", dict(step_size=5e-324), r"step_size=5e-324"),
    ("beacon", dict(reach_radius=1e39), r"reach_radius=1e\+39"),
    ("tag_continuous", dict(max_speed=1e39), r"max_speed=1e\+39"),
    ("tag_continuous", dict(grid_length=1e-40), r"grid_length=1e-40"),
    ("tag_continuous", dict(tag_reward_for_tagger=3.5e38), r"tag_reward_for_tagger=3.5e\+38"),
    ("tag_continuous", dict(max_acceleration=1e30), r"max_acceleration=1e\+30"),
    ("tag_continuous", dict(num_turn_levels=2**40), r"num_turn_levels=1099511627776 .*\[1, 65536\]"),
    ("tag_gridworld", dict(tag_reward_for_tagger=1e39), r"tag_reward_for_tagger=1e\+39"),
    ("tag_gridworld", dict(step_cost_for_tagger=float("inf")), r"step_cost_for_tagger=inf"),
    ("tag_gridworld", dict(closing_reward_for_tagger=1e39), r"closing_reward_for_tagger=1e\+39"),
])
def test_parameters_that_would_make_nan_or_inf_are_refused(env_id, params, match):
    with pytest.raises(InvalidValueError, match=match):
        warpsim.make(Beacon if env_id == "beacon" else env_id, 1, backend="numpy", **params)


@pytest.mark.parametrize("env_id, params", [
    ("tag_continuous", dict(grid_length=1e9, max_speed=1e9, skill_level_tagger=1e9, max_acceleration=1e9,
                            tag_reward_for_tagger=1e9, end_of_game_reward_for_runner=1e9, episode_length=4)),
    ("tag_continuous", dict(grid_length=1e-9, max_speed=1e-9, skill_level_runner=1e-9, min_acceleration=-1e9,
                            max_turn=1e9, tag_penalty_for_runner=-1e9, episode_length=4)),
    ("tag_gridworld", dict(tag_reward_for_tagger=1e9, wall_hit_penalty=1e9, step_cost_for_tagger=1e9,
                           closing_reward_for_tagger=1e9, grid_length=2**24 - 1, episode_length=4)),
])
@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_extreme_accepted_parameters_give_finite_outputs(env_id, params, backend):
    env = warpsim.make(env_id, 3, backend=backend, **params)
    rng = np.random.default_rng(0)
    levels = np.array(env.spec.action_levels)
    for _ in range(6):
        env.step((rng.random(tuple(env.actions.shape)) * levels).astype(np.int32))
        assert torch.isfinite(env.observations).all() and torch.isfinite(env.rewards).all()
        env.validate_state()


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_validate_state_names_the_array_index_and_value(backend):
    env = warpsim.make("tag_continuous", 2, backend=backend, num_runners=3)
    env.validate_state()
    env.state.speed[1, 2] = float("nan")
    with pytest.raises(InvalidValueError, match=r"state.speed\[1, 2\] = nan is not allowed; speed holds a finite "
                                                r"value in \[0, 1\]"):
        env.validate_state()
    env.state.speed[1, 2] = 0.5
    env.state.loc_x[0, 1] = 11.0
    with pytest.raises(InvalidValueError, match=r"state.loc_x\[0, 1\] = 11.0 .*in \[0, 10\]"):
        env.validate_state()


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_checked_mode_refuses_to_step_from_a_nan_state(backend):
    env = warpsim.make("tag_continuous", 2, backend=backend, num_runners=3)
    env.state.direction[0, 1] = float("nan")
    with pytest.raises(InvalidValueError, match=r"state.direction\[0, 1\] = nan"):
        env.step()
    with pytest.raises(InvalidValueError, match=r"state.direction\[0, 1\] = nan"):
        env.step(np.zeros((2, 4, 2), np.int32))
    unchecked = warpsim.make("tag_continuous", 2, backend=backend, num_runners=3, checked=False)
    unchecked.state.direction[0, 1] = float("nan")
    unchecked.step()  # unchecked mode trusts the state (documented): no host read per step
    with pytest.raises(InvalidValueError, match=r"state.\w+\[0, 1\] = nan"):
        unchecked.validate_state()


@pytest.mark.parametrize("device", ["cuda:x", 3.5, "gpu"])
def test_a_device_that_is_not_one_is_a_clear_error(device):
    with pytest.raises(InvalidValueError, match=f"device={device!r} is not a device"):
        gridworld(device=device)


@pytest.mark.gpu
def test_unchecked_steps_read_nothing_back_on_a_gpu():
    env = warpsim.make("tag_continuous", 8, backend="cuda", checked=False)
    env.step(torch.zeros(tuple(env.actions.shape), dtype=torch.int64, device=env.device))  # compiles, warms up
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        env.step(torch.full(tuple(env.actions.shape), 2**40, dtype=torch.int64, device=env.device))
        env.step()
    finally:
        torch.cuda.set_sync_debug_mode(0)
