"""Hand-worked tests of the NumPy reference of tag_gridworld (docs/tag_rules.md section 2).

Each test sets a state by hand (the last agent is the runner), steps once with chosen
actions (0 stay, 1 +x, 2 -x, 3 +y, 4 -y) and compares with values worked out by hand.
The reward values are chosen exact in binary, so the sums are exact in float32.
"""

import re
from typing import Any

import numpy as np
import pytest
import torch

import warpsim
from warpsim.envs.tag_gridworld import TagGridworld, TagGridworldParams
from warpsim.kernels.random import uniform

TOL: dict[str, Any] = dict(rtol=1e-6, atol=1e-6)
REWARDS: dict[str, Any] = dict(wall_hit_penalty=0.5, tag_reward_for_tagger=3.0, tag_penalty_for_runner=1.5,
               step_cost_for_tagger=0.25)


def make_env(x, y, *, t=0, **params):
    """One environment (L = 4, T = 10 unless given) whose agents sit at cells (x, y)."""
    params = {"grid_length": 4, "episode_length": 10, **REWARDS, **params}
    env = warpsim.make(TagGridworld, 1, backend="numpy", seed=0, num_taggers=len(x) - 1, **params)
    env.state.loc_x[0] = torch.tensor(x, dtype=torch.int32)
    env.state.loc_y[0] = torch.tensor(y, dtype=torch.int32)
    env.state.t[0] = t
    return env


def step(env, actions):
    """Steps with one action per agent; returns NumPy copies of (observations, rewards, done)."""
    obs, rew, done = env.step(np.asarray(actions, np.int32).reshape(1, -1, 1))
    return obs.numpy().copy(), rew.numpy().copy(), done.numpy().copy()


def cells(env):
    return env.state.loc_x.numpy()[0].tolist(), env.state.loc_y.numpy()[0].tolist()


def test_spec_types_roles_and_sizes():
    env = warpsim.make(TagGridworld, 2, backend="numpy", num_taggers=3)
    assert env.spec.action_levels == (5,)
    assert env.spec.role_names == ("tagger", "runner")
    assert env.spec.agent_roles == (0, 0, 0, 1)
    assert env.state.agent_type.tolist() == [0, 0, 0, 1]
    assert env.state.loc_x.dtype == torch.int32 and env.state.t.dtype == torch.int32
    assert tuple(env.observations.shape) == (2, 4, 17)
    partial = warpsim.make(TagGridworld, 2, backend="numpy", num_taggers=3, use_full_observation=False)
    assert tuple(partial.observations.shape) == (2, 4, 6)


def test_wall_moves_are_clipped_and_penalised_on_top_of_step_costs():
    """Taggers 0-2 and the runner try to leave [0, 4]: clipped back, -0.5 each on top of
    the step cost (-0.25 taggers, +0.25 runner); tagger 3 moves inside: only -0.25."""
    env = make_env([4, 2, 0, 1, 3], [1, 0, 3, 1, 4])
    _, rew, done = step(env, [1, 4, 2, 3, 3])
    assert cells(env) == ([4, 2, 0, 1, 3], [1, 0, 3, 2, 4])
    np.testing.assert_allclose(rew, [[-0.75, -0.75, -0.75, -0.25, -0.25]], **TOL)
    assert not done[0]
    assert int(env.state.t[0]) == 1


def test_tag_ends_the_episode_rewarding_every_tagger():
    """Tagger 0 and the runner both step onto (2, 2): every tagger gets +3 (tagger 1 also
    hits the wall: 3 - 0.5), the runner -1.5; done, and the environment is reset."""
    env = make_env([1, 4, 0, 2], [2, 4, 0, 3])
    obs, rew, done = step(env, [1, 1, 0, 4])
    np.testing.assert_allclose(rew, [[3.0, 2.5, 3.0, -1.5]], **TOL)
    assert done[0]
    assert int(env.state.t[0]) == 0          # auto-reset after the tag
    assert int(env.state.episode[0]) == 2    # the start draw and this reset
    np.testing.assert_allclose(obs[0, :, -1], 0.0, **TOL)


def test_runner_walking_onto_a_still_tagger_is_tagged():
    env = make_env([3, 3], [3, 2])  # the tagger at (3, 3), the runner just below it
    _, rew, done = step(env, [0, 3])
    np.testing.assert_allclose(rew, [[3.0, -1.5]], **TOL)
    assert done[0]


def test_swapping_cells_is_not_a_tag():
    """Tagger (1, 1) -> (2, 1) and runner (2, 1) -> (1, 1) pass each other: step costs."""
    env = make_env([1, 0, 2], [1, 4, 1])
    _, rew, done = step(env, [1, 0, 2])
    assert cells(env) == ([2, 0, 1], [1, 4, 1])
    np.testing.assert_allclose(rew, [[-0.25, -0.25, 0.25]], **TOL)
    assert not done[0]


def test_episode_ends_at_t_equal_T_without_a_tag():
    env = make_env([0, 4], [0, 4], t=9, episode_length=10)
    _, rew, done = step(env, [0, 0])
    np.testing.assert_allclose(rew, [[-0.25, 0.25]], **TOL)
    assert done[0]
    assert int(env.state.t[0]) == 0


@pytest.mark.parametrize("c", [0.0, 0.5])
def test_closing_reward_is_c_per_cell_closed_on_the_runner(c):
    """Runner still at (3, 0). Tagger 0 (0, 0) -> (1, 0): d 3 -> 2, +c. Tagger 1 (2, 2) ->
    (2, 3): d 3 -> 4, -c. Tagger 2 (4, 4) runs into the wall: d 5 -> 5, nothing. On top of
    the step costs (-0.25) and the wall (-0.5); the runner's reward never changes."""
    env = make_env([0, 2, 4, 3], [0, 2, 4, 0], closing_reward_for_tagger=c)
    _, rew, done = step(env, [1, 3, 1, 0])
    closed = np.array([1, -1, 0, 0])
    np.testing.assert_array_equal(rew[0], np.array([-0.25, -0.25, -0.75, 0.25], np.float32) + np.float32(c) * closed)
    assert not done[0]


def test_closing_reward_counts_the_runners_move_too():
    """Tagger 0 (0, 1) -> (1, 1) and the runner (3, 1) -> (2, 1) close 2 cells: +2c; tagger 1
    at (4, 1) stays while the runner leaves it: d 1 -> 2, -c. c = 0.5."""
    env = make_env([0, 4, 3], [1, 1, 1], closing_reward_for_tagger=0.5)
    _, rew, _ = step(env, [1, 0, 2])
    np.testing.assert_array_equal(rew[0], np.array([-0.25 + 1.0, -0.25 - 0.5, 0.25], np.float32))


def test_closing_reward_of_a_tag_measures_every_tagger_to_a_finished_game():
    """The tag ends the game: d_after is 0 for every tagger. Tagger 0 (1, 0) steps onto the
    runner at (0, 0): d 1, +c; tagger 1 at (4, 4) stays: d 8, +8c; tagger 2 (2, 1) -> (3, 1)
    moves away: d 3, +3c. c = 0.25, on top of the tag reward 3. The fixed-start reset puts
    the taggers on (2, 2) and the runner on (0, 0) (d 4) and earns nothing; the next step
    measures from there: tagger 0 -> (1, 2), d 4 -> 3, +c; the others stay."""
    env = make_env([1, 4, 2, 0], [0, 4, 1, 0], closing_reward_for_tagger=0.25, fixed_start=True)
    _, rew, done = step(env, [2, 0, 1, 0])
    assert done[0]
    np.testing.assert_array_equal(rew[0], np.array([3.0 + 0.25, 3.0 + 2.0, 3.0 + 0.75, -1.5], np.float32))
    assert cells(env) == ([2, 2, 2, 0], [2, 2, 2, 0])
    _, rew, _ = step(env, [2, 0, 0, 0])
    np.testing.assert_array_equal(rew[0], np.array([-0.25 + 0.25, -0.25, -0.25, 0.25], np.float32))


def test_closing_reward_at_the_time_limit_is_the_ordinary_term():
    """t = T without a tag is no end of the game: tagger (0, 0) -> (1, 0) towards the runner
    at (4, 0) gets +c (c = 0.5), not c * d_before."""
    env = make_env([0, 4], [0, 0], t=9, episode_length=10, closing_reward_for_tagger=0.5)
    _, rew, done = step(env, [1, 0])
    assert done[0]
    np.testing.assert_array_equal(rew[0], np.array([-0.25 + 0.5, 0.25], np.float32))


@pytest.mark.parametrize("tagger_2, target", [((5, 5), 0), ((3, 3), 2)], ids=["tie", "nearer-higher-id"])
def test_partial_observation_runner_targets_nearest_tagger(tagger_2, target):
    """Runner at (2, 2); taggers 0 at (6, 2) and 1 at (2, 6) are both at squared distance
    16 (the tie goes to tagger 0); tagger 2 at (5, 5) (18) is farther, at (3, 3) (2) nearer.
    L = 10, t 4 -> 5 of T = 10."""
    x = [6, 2, tagger_2[0], 2]
    y = [2, 6, tagger_2[1], 2]
    env = make_env(x, y, t=4, grid_length=10, use_full_observation=False)
    obs, _, _ = step(env, [0, 0, 0, 0])
    assert obs.shape == (1, 4, 6)
    expected_runner = [0.2, 0.2, x[target] / 10, y[target] / 10, 1.0, 0.5]
    np.testing.assert_allclose(obs[0, 3], expected_runner, **TOL)
    # a tagger's target is always the runner
    np.testing.assert_allclose(obs[0, 1], [0.2, 0.6, 0.2, 0.2, 0.0, 0.5], **TOL)


def test_full_observation_layout():
    """N = 3, L = 4, t 1 -> 2 of T = 8: xs/L, ys/L, types, one-hot of the observer, t/T."""
    env = make_env([1, 4, 3], [2, 0, 3], t=1, episode_length=8)
    obs, _, _ = step(env, [0, 0, 0])
    assert obs.shape == (1, 3, 13)
    shared = [0.25, 1.0, 0.75, 0.5, 0.0, 0.75, 0.0, 0.0, 1.0]
    for i in range(3):
        one_hot = np.eye(3)[i].tolist()
        np.testing.assert_allclose(obs[0, i], shared + one_hot + [0.25], **TOL)


def test_out_of_range_actions_are_clamped():
    """With checks off, -3 acts as 0 (stay) and 9 as 4 (0, -1)."""
    env = make_env([2, 4], [2, 4], checked=False)
    step(env, [-3, 9])
    assert cells(env) == ([2, 4], [2, 3])


def test_fixed_start_puts_taggers_in_the_centre_and_the_runner_in_the_corner():
    env = warpsim.make(TagGridworld, 2, backend="numpy", num_taggers=3, grid_length=7,
                       episode_length=1, fixed_start=True)
    for _ in range(2):  # the first reset, then the auto-reset after T = 1 step
        assert env.state.loc_x.tolist() == [[3, 3, 3, 0]] * 2
        assert env.state.loc_y.tolist() == [[3, 3, 3, 0]] * 2
        _, _, done = env.step(np.zeros((2, 4, 1), np.int32))
        assert done.all()


def test_random_start_cells_come_from_each_environments_stream():
    """cell = min(int(u * (L + 1)), L), u = uniform(seed, env, episode, agent * 2 + axis)."""
    seed, length = 7, 5
    env = warpsim.make(TagGridworld, 3, backend="numpy", num_taggers=3, grid_length=length, seed=seed)
    for episode in range(2):
        for axis, name in enumerate(("loc_x", "loc_y")):
            u = uniform(seed, np.arange(3)[:, None], episode, np.arange(4)[None, :] * 2 + axis)
            expected = np.minimum((u * np.float32(length + 1)).astype(np.int32), length)
            np.testing.assert_array_equal(getattr(env.state, name).numpy(), expected)
        assert not (env.state.loc_x[0] == env.state.loc_x[1]).all()  # each env its own start
        env.reset()


INVALID: list[tuple[dict[str, Any], str]] = [
    (dict(num_taggers=0), "num_taggers=0 is not allowed; give an integer in [1, "),
    (dict(num_taggers=2.0), "num_taggers=2.0 is not allowed"),
    (dict(grid_length=0), "grid_length=0 is not allowed; give an integer in [1, "),
    (dict(grid_length=2.5), "grid_length=2.5 is not allowed"),
    (dict(grid_length=2**24), f"grid_length={2**24} is not allowed"),
    (dict(episode_length=0), "episode_length=0 is not allowed; give an integer in [1, "),
    (dict(wall_hit_penalty=-0.1), "wall_hit_penalty=-0.1 is not allowed; give a number in [0, 1e+09]"),
    (dict(tag_reward_for_tagger=float("nan")), "tag_reward_for_tagger=nan is not allowed"),
    (dict(tag_penalty_for_runner=-2), "tag_penalty_for_runner=-2 is not allowed"),
    (dict(step_cost_for_tagger="0.01"), "step_cost_for_tagger='0.01' is not allowed"),
    (dict(use_full_observation=1), "use_full_observation=1 is not allowed; give True or False"),
    (dict(fixed_start="yes"), "fixed_start='yes' is not allowed; give True or False"),
    (dict(closing_reward_for_tagger=-0.5),
     "closing_reward_for_tagger=-0.5 is not allowed; give a number in [0, 1e+09]"),
    (dict(closing_reward_for_tagger=float("nan")), "closing_reward_for_tagger=nan is not allowed"),
    (dict(closing_reward_for_tagger="0.1"), "closing_reward_for_tagger='0.1' is not allowed"),
]


@pytest.mark.parametrize("kwargs, message", INVALID, ids=[next(iter(k)) + "-" + repr(next(iter(k.values())))
                                                          for k, _ in INVALID])
def test_invalid_parameters_raise_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        TagGridworldParams(**kwargs)
    with pytest.raises(ValueError, match=re.escape(message)):
        warpsim.make(TagGridworld, 1, backend="numpy", **kwargs)
