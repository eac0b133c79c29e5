"""Hand-worked tests of the NumPy reference of tag_continuous (docs/tag_rules.md section 1).

Each test sets a state by hand, steps once with all-zero actions ('no change') and
compares with values worked out by hand from the spec.
"""

import math
from typing import Any

import numpy as np
import pytest
import torch

import warpsim

TOL: dict[str, Any] = dict(rtol=1e-6, atol=1e-6)
S = 10.0 * math.sqrt(2.0)  # position scale L * sqrt(2) for L = 10


def make_env(x, y, *, speed=None, acc=None, direction=None, alive=None, t=0,
             num_taggers=1, **params):
    """One environment (L = 10 unless given) whose agents sit at (x, y); speed,
    acceleration and direction are 0 and everyone is in the game unless given."""
    n = len(x)
    params.setdefault("episode_length", 100)
    env = warpsim.make("tag_continuous", num_envs=1, backend="numpy", seed=0,
                       num_taggers=num_taggers, num_runners=n - num_taggers, **params)
    zeros = np.zeros(n)
    alive = np.ones(n) if alive is None else np.asarray(alive)
    st = env.state
    for name, values in (("loc_x", x), ("loc_y", y), ("speed", speed), ("acceleration", acc),
                         ("direction", direction)):
        getattr(st, name)[0] = torch.as_tensor(np.asarray(zeros if values is None else values, np.float32))
    st.still_in_game[0] = torch.as_tensor(alive.astype(np.int32))
    st.num_runners_left[0] = int(alive[num_taggers:].sum())
    st.t[0] = t
    return env


def step(env):
    """Steps with all-zero actions; returns NumPy copies of (observations, rewards, done)."""
    obs, rew, done = env.step(np.zeros((env.num_envs, env.num_agents, 2), np.int32))
    return obs.numpy().copy(), rew.numpy().copy(), done.numpy().copy()


def state(env, name):
    return getattr(env.state, name).numpy()[0].copy()


def test_tag_just_inside_and_just_outside_radius():
    """Radius 0.1 * 10 = 1: a runner at 0.999 is tagged, one at 1.001 (or at
    Euclidean 1.018 but 0.72 per axis) is not."""
    env = make_env([5.0, 5.999, 5.0, 5.72], [5.0, 5.0, 6.001, 5.72], tagging_distance=0.1,
                   tag_reward_for_tagger=2.5, tag_penalty_for_runner=-1.5)
    _, rew, done = step(env)
    np.testing.assert_allclose(rew, [[2.5, -1.5, 0.0, 0.0]], **TOL)
    np.testing.assert_array_equal(state(env, "still_in_game"), [1, 0, 1, 1])
    assert int(env.state.num_runners_left[0]) == 2
    assert not done[0]


def test_one_tagger_tags_two_runners_in_one_step():
    """Two runners in range of one tagger: the tagger earns 2x the tag reward."""
    env = make_env([5.0, 5.5, 5.0, 9.0], [5.0, 5.0, 4.5, 9.0], tagging_distance=0.1,
                   tag_reward_for_tagger=3.0, tag_penalty_for_runner=-2.0)
    _, rew, done = step(env)
    np.testing.assert_allclose(rew, [[6.0, -2.0, -2.0, 0.0]], **TOL)
    np.testing.assert_array_equal(state(env, "still_in_game"), [1, 0, 0, 1])
    assert int(env.state.num_runners_left[0]) == 1
    assert not done[0]


def test_nearest_tagger_gets_the_tag_and_ties_go_to_lower_id():
    """Runner 2 is equidistant from taggers 0 and 1 (tagger 0 wins); runner 3 is
    nearer tagger 1 (tagger 1 wins) although tagger 0 is in range too."""
    env = make_env([4.0, 6.0, 5.0, 6.3, 0.0], [5.0, 5.0, 5.0, 5.0, 0.0], num_taggers=2,
                   tagging_distance=0.25)
    _, rew, _ = step(env)
    np.testing.assert_allclose(rew, [[1.0, 1.0, -1.0, -1.0, 0.0]], **TOL)


def test_tag_on_last_step_gets_no_end_of_game_reward():
    """At t == T a tagged runner gets only the penalty, an untagged runner in the game
    gets the end-of-game reward, a runner already out gets nothing; done is set."""
    env = make_env([5.0, 5.2, 9.0, 1.0], [5.0, 5.0, 9.0, 1.0], alive=[1, 1, 1, 0], t=2,
                   episode_length=3, tagging_distance=0.1, end_of_game_reward_for_runner=0.75,
                   tag_penalty_for_runner=-1.25, tag_reward_for_tagger=2.0)
    _, rew, done = step(env)
    np.testing.assert_allclose(rew, [[2.0, -1.25, 0.75, 0.0]], **TOL)
    assert done[0]
    assert int(env.state.t[0]) == 0  # auto-reset after the final step


def test_wall_clipping_and_edge_penalty():
    """speed = clip(0.8 + 0.3, 0, 1) = 1 moves agent 1 from x=9.5 to 10.5 -> clipped to
    10 with the penalty; agent 2 heads down past y=0, agent 5 left past x=0; agent 3
    lands exactly on x=10 (inside, no penalty); agent 4 moves inside; the still tagger
    gets 0."""
    env = make_env([1.0, 9.5, 3.0, 9.5, 2.0, 0.2], [9.0, 5.0, 0.3, 2.0, 2.0, 7.0],
                   speed=[0.0, 0.8, 0.5, 0.5, 0.5, 0.5], acc=[0.0, 0.3, 0.0, 0.0, 0.0, 0.0],
                   direction=[0.0, 0.0, 1.5 * math.pi, 0.0, 0.0, math.pi], edge_hit_penalty=-0.5)
    _, rew, done = step(env)
    np.testing.assert_allclose(rew, [[0.0, -0.5, -0.5, 0.0, 0.0, -0.5]], **TOL)
    np.testing.assert_allclose(state(env, "loc_x"), [1.0, 10.0, 3.0, 10.0, 2.5, 0.0], **TOL)
    np.testing.assert_allclose(state(env, "loc_y"), [9.0, 5.0, 0.0, 2.0, 2.0, 7.0], **TOL)
    np.testing.assert_allclose(state(env, "speed"), [0.0, 1.0, 0.5, 0.5, 0.5, 0.5], **TOL)
    # speed hit vmax, so agent 1's acceleration is zeroed
    np.testing.assert_allclose(state(env, "acceleration"), [0.0] * 6, **TOL)
    assert not done[0]


def test_out_of_game_agent_is_frozen_unrewarded_and_invisible():
    """Runner 2 is out of the game, with stale speed/direction/acceleration, right next to
    the tagger: it does not move, ends with speed 0 and direction 0, gets no reward,
    the others' K=2 nearest skip it, and its own partial observation is all zeros."""
    env = make_env([5.0, 6.0, 5.1, 5.0], [5.0, 5.0, 5.0, 7.0], alive=[1, 1, 0, 1],
                   speed=[0.0, 0.0, 0.7, 0.0], acc=[0.0, 0.0, 0.2, 0.0],
                   direction=[0.0, 0.0, 1.0, 0.0], use_full_observation=False,
                   num_other_agents_observed=2, step_reward_for_runner=0.25, edge_hit_penalty=-0.5)
    obs, rew, _ = step(env)
    np.testing.assert_allclose(rew, [[0.0, 0.25, 0.0, 0.25]], **TOL)
    np.testing.assert_allclose(state(env, "loc_x")[2], 5.1, **TOL)
    np.testing.assert_allclose(state(env, "loc_y")[2], 5.0, **TOL)
    assert state(env, "speed")[2] == 0.0 and state(env, "direction")[2] == 0.0
    # tagger 0 sees runners 1 (distance 1) then 3 (distance 2), not runner 2 (0.1)
    expected = [1 / S, 0.0, 0.0, 2 / S, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0.01]
    np.testing.assert_allclose(obs[0, 0], expected, **TOL)
    np.testing.assert_array_equal(obs[0, 2], np.zeros(15))


def test_out_of_game_observer_full_observation():
    """Full mode, observer out of the game: features 1-5 and t/T are 0, while the types
    and still_in_game flags of the others are still filled."""
    env = make_env([5.0, 6.0, 2.0, 5.0], [5.0, 5.0, 2.0, 7.0], alive=[1, 1, 0, 1])
    obs, _, _ = step(env)
    expected = np.zeros(22)
    expected[15:18] = [1, 0, 0]   # types of agents 0, 1, 3
    expected[18:21] = [1, 1, 1]   # all three in the game
    np.testing.assert_allclose(obs[0, 2], expected, **TOL)
    # agent 0 sees agents 1, 2, 3: agent 2 (slot 1) shows still_in_game 0
    np.testing.assert_allclose(obs[0, 0, 18:21], [1, 0, 1], **TOL)


def test_partial_observation_pads_missing_slots_with_zeros():
    """K = 3 but only one runner is left: the tagger sees it in slot 0 and zeros in slots
    1-2; the runner sees the tagger in slot 0 and zeros in slots 1-2."""
    env = make_env([5.0, 8.0, 1.0, 2.0], [5.0, 1.0, 1.0, 2.0], alive=[1, 1, 0, 0],
                   use_full_observation=False, num_other_agents_observed=3, episode_length=4)
    obs, _, _ = step(env)
    tagger = np.zeros(22)
    tagger[[0, 3, 15, 18, 21]] = [3 / S, -4 / S, 0.0, 1.0, 0.25]
    runner = np.zeros(22)
    runner[[0, 3, 15, 18, 21]] = [-3 / S, 4 / S, 1.0, 1.0, 0.25]
    np.testing.assert_allclose(obs[0, 0], tagger, **TOL)
    np.testing.assert_allclose(obs[0, 1], runner, **TOL)


# State for the layout tests (before the step; t=3, T=10 so t/T = 0.4 after it):
#   agent 0 tagger (5, 5) still;  agent 1 (6, 5) speed .25 acc .25 dir 0 -> (6.5, 5) speed .5
#   agent 2 (4, 3) speed .5 dir pi/2 -> (4, 3.5);  agent 3 (5, 6) still, dir pi.
LAYOUT: dict[str, Any] = dict(x=[5.0, 6.0, 4.0, 5.0], y=[5.0, 5.0, 3.0, 6.0], speed=[0.0, 0.25, 0.5, 0.0],
              acc=[0.0, 0.25, 0.0, 0.0], direction=[0.0, 0.0, math.pi / 2, math.pi], t=3,
              episode_length=10)


def test_full_observation_layout():
    """N = 4, full: 7 features x 3 others (ids ascending), feature-major, then t/T."""
    env = make_env(**LAYOUT, use_full_observation=True)
    obs, _, _ = step(env)
    assert obs.shape == (1, 4, 22)
    agent0 = [1.5 / S, -1 / S, 0.0,    0.0, -1.5 / S, 1 / S,    0.5, 0.5, 0.0,
              0.25, 0.0, 0.0,    0.0, 0.25, 0.5,    0, 0, 0,    1, 1, 1,    0.4]
    agent1 = [-1.5 / S, -2.5 / S, -1.5 / S,    0.0, -1.5 / S, 1 / S,    -0.5, 0.0, -0.5,
              -0.25, -0.25, -0.25,    0.0, 0.25, 0.5,    1, 0, 0,    1, 1, 1,    0.4]
    np.testing.assert_allclose(obs[0, 0], agent0, **TOL)
    np.testing.assert_allclose(obs[0, 1], agent1, **TOL)


def test_partial_observation_layout():
    """N = 4, K = 2, partial: the tagger's nearest are agent 3 (distance 1) then agent 1
    (1.5), not agent 2 (1.80); runner 1's nearest are agent 0 (1.5) then agent 3 (1.80)."""
    env = make_env(**LAYOUT, use_full_observation=False, num_other_agents_observed=2)
    obs, _, _ = step(env)
    assert obs.shape == (1, 4, 15)
    agent0 = [0.0, 1.5 / S,    1 / S, 0.0,    0.0, 0.5,    0.0, 0.25,    0.5, 0.0,
              0, 0,    1, 1,    0.4]
    agent1 = [-1.5 / S, -1.5 / S,    0.0, 1 / S,    -0.5, -0.5,    -0.25, -0.25,
              0.0, 0.5,    1, 0,    1, 1,    0.4]
    np.testing.assert_allclose(obs[0, 0], agent0, **TOL)
    np.testing.assert_allclose(obs[0, 1], agent1, **TOL)


def test_partial_observation_ties_broken_by_lower_id():
    """Agents 1, 2, 3 are all at distance 1 from agent 0: with K = 2 it sees 1 then 2."""
    env = make_env([5.0, 4.0, 6.0, 5.0], [5.0, 5.0, 5.0, 6.0], use_full_observation=False,
                   num_other_agents_observed=2)
    obs, _, _ = step(env)
    np.testing.assert_allclose(obs[0, 0, 0:2], [-1 / S, 1 / S], **TOL)   # dx of agents 1, 2
    np.testing.assert_allclose(obs[0, 0, 2:4], [0.0, 0.0], **TOL)        # dy of agents 1, 2


@pytest.mark.parametrize("full", [True, False])
def test_time_entry_is_t_over_T(full):
    """The last entry of every observation is t/T: 1/8 after one step, 2/8 after two."""
    env = make_env([1.0, 3.0, 5.0, 7.0], [1.0, 3.0, 5.0, 7.0], episode_length=8,
                   use_full_observation=full)
    obs, _, _ = step(env)
    np.testing.assert_allclose(obs[0, :, -1], [0.125] * 4, **TOL)
    obs, _, _ = step(env)
    np.testing.assert_allclose(obs[0, :, -1], [0.25] * 4, **TOL)


def test_runner_out_of_game_cannot_be_tagged_again():
    """An out-of-game runner on top of the tagger: no rewards, count unchanged."""
    env = make_env([5.0, 5.0, 9.0], [5.0, 5.0, 9.0], alive=[1, 0, 1], tagging_distance=0.1)
    _, rew, done = step(env)
    np.testing.assert_allclose(rew, [[0.0, 0.0, 0.0]], **TOL)
    np.testing.assert_array_equal(state(env, "still_in_game"), [1, 0, 1])
    assert int(env.state.num_runners_left[0]) == 1
    assert not done[0]


def test_observation_shows_still_in_game_from_before_the_tags():
    """Observations are taken before tagging: on the step runner 1 is tagged, the
    tagger's full observation still shows it in the game (feature 7 = 1)."""
    env = make_env([5.0, 5.5, 9.0], [5.0, 5.0, 9.0], tagging_distance=0.1)
    obs, rew, _ = step(env)
    np.testing.assert_allclose(rew, [[1.0, -1.0, 0.0]], **TOL)
    np.testing.assert_allclose(obs[0, 0, 12:14], [1.0, 1.0], **TOL)
    assert state(env, "still_in_game")[1] == 0


def test_runner_that_stays_in_game_is_tagged_every_step():
    """runner_exits_game_after_tagged=False: tagged again on the next step in range."""
    env = make_env([5.0, 5.5, 9.0], [5.0, 5.0, 9.0], tagging_distance=0.1,
                   runner_exits_game_after_tagged=False)
    for _ in range(2):
        _, rew, _ = step(env)
        np.testing.assert_allclose(rew, [[1.0, -1.0, 0.0]], **TOL)
        assert int(env.state.num_runners_left[0]) == 2
