"""The PettingZoo adapter: PettingZoo's API test, agents leaving, terminations against
truncations on hand-made states, seeding, rendering, and the views of one batch."""

import warnings
from typing import Any

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")
import gymnasium  # noqa: E402
from pettingzoo.test import parallel_api_test, parallel_seed_test  # noqa: E402
from ticks_env import Ticks  # noqa: E402

import warpsim  # noqa: E402
from warpsim.adapters.pettingzoo import WarpsimParallelEnv, agent_names, parallel_env, parallel_envs  # noqa: E402
from warpsim.errors import InvalidValueError  # noqa: E402

SMALL: dict[str, Any] = {
    "tag_continuous": dict(num_taggers=2, num_runners=4, grid_length=4.0, episode_length=30,
                           tagging_distance=0.15),
    "tag_continuous_partial": dict(num_taggers=2, num_runners=4, grid_length=4.0, episode_length=30,
                                   tagging_distance=0.15, use_full_observation=False,
                                   num_other_agents_observed=2),
    "tag_gridworld": dict(num_taggers=3, grid_length=3, episode_length=30),
    "tag_gridworld_partial": dict(num_taggers=3, grid_length=3, episode_length=30, use_full_observation=False),
    "beacon": dict(num_agents=3, episode_length=12),
    "simple_spread": dict(N=3),
    "simple_spread_partial": dict(N=4, num_agent_neighbors=2, num_landmark_neighbors=2),
    "simple_tag": {},
    "simple_adversary": {},
    "simple_speaker_listener": {},
}
API_CASES = [pytest.param(name.removesuffix("_partial"), params, id=name) for name, params in SMALL.items()]
CUDA = pytest.param("cuda", marks=pytest.mark.gpu)


@pytest.mark.parametrize("scenario, params, names", [
    ("simple_tag", dict(num_good=2, num_adversaries=2), ["adversary_0", "adversary_1", "agent_0", "agent_1"]),
    ("simple_adversary", dict(N=2), ["adversary_0", "agent_0", "agent_1"]),
    ("simple_speaker_listener", {}, ["speaker_0", "listener_0"]),
])
def test_the_mpe_scenarios_agents_are_named_as_in_mpe2(scenario, params, names):
    """Role by role in agent order, adversaries first, as MPE2 names them."""
    assert agent_names(warpsim.make(scenario, 1, backend="numpy", **params).spec) == names


def strict_api_test(penv, num_cycles: int = 100) -> None:
    """PettingZoo's parallel_api_test, with its warnings (e.g. 'Live agent was not given
    observation') as failures."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(penv, num_cycles=num_cycles)


@pytest.mark.parametrize("env_id, params", API_CASES)
def test_the_pettingzoo_api_test_passes(env_id, params):
    strict_api_test(parallel_env(env_id, seed=0, **params))


def test_the_api_test_passes_with_the_own_state_observed():
    penv = parallel_env("tag_continuous", seed=0, observe_own_state=True, **SMALL["tag_continuous_partial"])
    assert penv.observation_space("runner_0").shape == (7 * 2 + 1 + 5,)
    strict_api_test(penv)


@pytest.mark.parametrize("env_id, params", API_CASES[:3])
def test_the_api_test_passes_on_a_view_of_a_larger_batch(env_id, params):
    batch = warpsim.make(env_id, 3, backend="numpy", seed=0, **params)
    strict_api_test(parallel_envs(batch)[1])


@pytest.mark.gpu
@pytest.mark.parametrize("env_id, params", API_CASES)
def test_the_pettingzoo_api_test_passes_on_the_kernels(env_id, params):
    strict_api_test(parallel_env(env_id, backend="cuda", seed=0, **params))


def test_agents_are_named_by_role_and_spaces_come_from_the_spec():
    penv = parallel_env("tag_continuous", num_taggers=2, num_runners=3, num_acceleration_levels=4)
    assert penv.possible_agents == ["tagger_0", "tagger_1", "runner_0", "runner_1", "runner_2"]
    assert penv.agents == []
    action = penv.action_space("runner_2")
    assert isinstance(action, gymnasium.spaces.MultiDiscrete) and list(action.nvec) == [5, 11]
    assert penv.observation_space("tagger_0").shape == (7 * 4 + 1,)
    assert penv.observation_space("tagger_0").dtype == np.float32
    assert penv.action_space("tagger_0") is not action
    grid = parallel_env("tag_gridworld", num_taggers=2)
    assert grid.possible_agents == ["tagger_0", "tagger_1", "runner_0"]
    runner_space = grid.action_space("runner_0")
    assert isinstance(runner_space, gymnasium.spaces.Discrete) and runner_space.n == 5
    assert grid.metadata["name"] == "tag_gridworld"
    assert grid.metadata["render_modes"] == ["rgb_array"]


# ----- tag_continuous on hand-made states ---------------------------------------------------
# One tagger and three runners, standing still (a reset sets every speed to 0 and action 0
# changes nothing), tagging radius 0.05 * 10 = 0.5, episodes of 10 steps.

def still_tag() -> WarpsimParallelEnv:
    penv = parallel_env("tag_continuous", num_taggers=1, num_runners=3, episode_length=10,
                        tagging_distance=0.05)
    penv.reset(seed=0)
    return penv


def put(penv: WarpsimParallelEnv, **rows) -> None:
    """Writes the view's environment's row of the named state arrays."""
    for name, values in rows.items():
        array = getattr(penv.env.state, name)
        array[penv.index] = torch.as_tensor(values, dtype=array.dtype)


def stay(penv: WarpsimParallelEnv) -> dict:
    return {name: np.zeros(2, np.int64) for name in penv.agents}


def test_a_tagged_runner_leaves_the_agents_terminated_while_the_game_goes_on():
    penv = still_tag()
    put(penv, loc_x=[5, 5.2, 1, 9], loc_y=[5, 5, 1, 9])
    observations, rewards, terminations, truncations, _ = penv.step(stay(penv))
    assert terminations == {"tagger_0": False, "runner_0": True, "runner_1": False, "runner_2": False}
    assert not any(truncations.values())
    assert rewards["runner_0"] == -1.0 and rewards["tagger_0"] == 1.0
    assert set(observations) == set(rewards) == {"tagger_0", "runner_0", "runner_1", "runner_2"}
    assert penv.agents == ["tagger_0", "runner_1", "runner_2"]
    observations, *_ = penv.step(stay(penv))
    assert set(observations) == {"tagger_0", "runner_1", "runner_2"}


def test_tagging_every_runner_terminates_everyone():
    penv = still_tag()
    put(penv, loc_x=[5, 5.2, 4.8, 5], loc_y=[5, 5, 5, 5.3])
    _, _, terminations, truncations, _ = penv.step(stay(penv))
    assert all(terminations.values()) and len(terminations) == 4
    assert not any(truncations.values())
    assert penv.agents == []


def test_the_time_limit_truncates_and_the_last_observations_are_the_final_ones():
    penv = still_tag()
    put(penv, loc_x=[5, 1, 9, 1], loc_y=[5, 1, 9, 9], t=9)
    observations, _, terminations, truncations, _ = penv.step(stay(penv))
    assert all(truncations.values()) and len(truncations) == 4
    assert not any(terminations.values())
    assert penv.agents == []
    assert observations["tagger_0"][-1] == 1.0  # t / T of the final state, not of a new episode
    with pytest.raises(RuntimeError, match="call reset"):
        penv.step({})
    observations, _ = penv.reset()
    assert penv.agents == penv.possible_agents
    assert int(penv.env.state.t[0]) == 0 and observations["tagger_0"][-1] == 0.0


def test_a_runner_tagged_on_the_last_step_is_terminated_and_the_others_truncated():
    penv = still_tag()
    put(penv, loc_x=[5, 5.2, 9, 1], loc_y=[5, 5, 9, 9], t=9)
    _, _, terminations, truncations, _ = penv.step(stay(penv))
    assert terminations == {"tagger_0": False, "runner_0": True, "runner_1": False, "runner_2": False}
    assert truncations == {"tagger_0": True, "runner_0": False, "runner_1": True, "runner_2": True}


# ----- tag_gridworld on hand-made states: taggers 0, 1 and the runner (agent 2) ----------------

@pytest.mark.parametrize("t, ends_by", [(3, "tag"), (9, "tag"), (9, "time")], ids=["tag", "tag-at-limit", "time"])
def test_gridworld_ends_by_a_tag_terminate_and_by_time_truncate(t, ends_by):
    penv = parallel_env("tag_gridworld", num_taggers=2, grid_length=5, episode_length=10)
    penv.reset(seed=0)
    put(penv, loc_x=[1, 4, 2], loc_y=[2, 4, 2], t=t)
    move = 1 if ends_by == "tag" else 0  # +x takes tagger_0 onto the runner's cell
    _, rewards, terminations, truncations, _ = penv.step({"tagger_0": move, "tagger_1": 0, "runner_0": 0})
    assert terminations == dict.fromkeys(penv.possible_agents, ends_by == "tag")
    assert truncations == dict.fromkeys(penv.possible_agents, ends_by == "time")
    assert (rewards["runner_0"] == -2.0) == (ends_by == "tag")
    assert penv.agents == []


def test_gridworld_goes_on_without_a_tag_before_the_limit():
    penv = parallel_env("tag_gridworld", num_taggers=2, grid_length=5, episode_length=10)
    penv.reset(seed=0)
    put(penv, loc_x=[1, 4, 3], loc_y=[2, 4, 2], t=3)
    _, _, terminations, truncations, _ = penv.step({"tagger_0": 1, "tagger_1": 0, "runner_0": 0})
    assert not any(terminations.values()) and not any(truncations.values())
    assert penv.agents == penv.possible_agents


def test_ends_follow_the_environments_terminated_flag():
    views = parallel_envs(Ticks(2, backend="numpy"))  # env 0 ends by its rules on step 6, env 1 by the clock on 8
    for view, last_step, terminal in [(views[0], 6, True), (views[1], 8, False)]:
        view.reset()
        for step in range(1, last_step + 1):
            _, _, terminations, truncations, _ = view.step({"ticker_0": 0})
            assert terminations == {"ticker_0": terminal and step == last_step}
            assert truncations == {"ticker_0": not terminal and step == last_step}
        assert view.agents == []


def test_the_templates_clock_only_ends_are_truncations():
    penv = parallel_env("beacon", num_agents=2, episode_length=5)
    penv.reset(seed=0)
    put(penv, t=4)
    _, _, terminations, truncations, _ = penv.step({"walker_0": 0, "walker_1": 0})
    assert truncations == {"walker_0": True, "walker_1": True}
    assert not any(terminations.values())


# ----- seeding ----------------------------------------------------------------------------------

def test_reset_with_a_seed_starts_as_make_with_that_seed():
    penv = parallel_env("tag_continuous", num_runners=3, seed=0)
    observations, _ = penv.reset(seed=7)
    made = warpsim.make("tag_continuous", 1, backend="numpy", num_runners=3, seed=7)
    for i, name in enumerate(penv.possible_agents):
        np.testing.assert_array_equal(observations[name], made.observations[0, i].numpy())


def test_the_first_reset_uses_the_batch_seed_and_later_resets_continue_the_stream():
    first, _ = parallel_env("tag_gridworld", num_taggers=3, seed=3).reset()
    penv = parallel_env("tag_gridworld", num_taggers=3, seed=0)
    seeded, _ = penv.reset(seed=3)
    assert all(np.array_equal(first[name], seeded[name]) for name in first)
    following, _ = penv.reset()
    assert not all(np.array_equal(following[name], seeded[name]) for name in seeded)
    again, _ = penv.reset(seed=3)
    assert all(np.array_equal(again[name], seeded[name]) for name in seeded)


@pytest.mark.parametrize("env_id, params", API_CASES[:3])
def test_pettingzoos_seed_test_passes(env_id, params):
    parallel_seed_test(lambda: parallel_env(env_id, **params), num_cycles=50)


# ----- the views of one batch -------------------------------------------------------------------

def player(view: WarpsimParallelEnv, seed: int):
    """Steps ``view`` with random actions drawn from its own generator, resetting after each end;
    yields every step's results."""
    rng = np.random.default_rng(seed)
    levels = np.array(view.env.spec.action_levels)
    view.reset()
    while True:
        if not view.agents:
            view.reset()
        yield view.step({name: rng.integers(0, levels) for name in view.agents})


def assert_same_results(left, right) -> None:
    for step, (a, b) in enumerate(zip(left, right, strict=True)):
        for part_a, part_b in zip(a, b, strict=True):
            assert part_a.keys() == part_b.keys(), f"step {step}"
            for name in part_a:
                np.testing.assert_array_equal(part_a[name], part_b[name], err_msg=f"step {step}, {name}")


NO_TAGS: dict[str, Any] = dict(num_taggers=1, num_runners=3, episode_length=6, tagging_distance=0.0)


@pytest.mark.parametrize("backend", ["numpy", CUDA])
def test_each_view_of_a_batch_steps_on_its_own_in_any_order(backend):
    steps = 14  # two whole episodes and a bit
    interleaved = [player(view, seed) for seed, view in
                   enumerate(parallel_envs(warpsim.make("tag_continuous", 3, backend=backend, seed=1, **NO_TAGS)))]
    by_turns = [[next(play) for play in interleaved] for _ in range(steps)]
    one_by_one = [player(view, seed) for seed, view in
                  enumerate(parallel_envs(warpsim.make("tag_continuous", 3, backend=backend, seed=1, **NO_TAGS)))]
    alone = {index: [next(one_by_one[index]) for _ in range(steps)] for index in (2, 0, 1)}
    for index in range(3):
        assert_same_results([turn[index] for turn in by_turns], alone[index])


@pytest.mark.parametrize("backend", ["numpy", CUDA])
def test_views_of_a_batch_match_the_batch_stepped_as_a_whole(backend):
    views = parallel_envs(warpsim.make("tag_continuous", 3, backend=backend, seed=1, **NO_TAGS))
    plays = [player(view, seed) for seed, view in enumerate(views)]
    batch = warpsim.make("tag_continuous", 3, backend=backend, seed=1, **NO_TAGS)
    rngs = [np.random.default_rng(seed) for seed in range(3)]
    levels = np.array(batch.spec.action_levels)
    for _ in range(NO_TAGS["episode_length"]):
        actions = np.stack([np.stack([rng.integers(0, levels) for _ in range(batch.num_agents)]) for rng in rngs])
        batch.step(actions, auto_reset=False)
        for index, play in enumerate(plays):
            observations, rewards, terminations, truncations, _ = next(play)
            for agent, name in enumerate(views[index].possible_agents):
                np.testing.assert_array_equal(observations[name], batch.observations[index, agent].cpu().numpy())
                assert rewards[name] == float(batch.rewards[index, agent])
                assert truncations[name] == bool(batch.done[index])
    assert all(view.agents == [] for view in views)


def test_stepping_a_view_leaves_the_other_environments_as_they_were():
    batch = warpsim.make("tag_continuous", 3, backend="numpy", seed=2, **NO_TAGS)
    before = {name: array.clone() for name, array in batch.state.items()}
    before.update(observations=batch.observations.clone(), rewards=batch.rewards.clone())
    view = parallel_envs(batch)[1]
    view.reset(seed=5)
    view.step({name: np.array([3, 4]) for name in view.agents})
    after = dict(batch.state.items(), observations=batch.observations, rewards=batch.rewards)
    for name, array in before.items():
        if array.dim() and array.shape[0] == 3:
            torch.testing.assert_close(after[name][[0, 2]], array[[0, 2]], msg=name)
    assert int(batch.state.t[1]) == 1 and int(batch.state.t[0]) == 0


# ----- rendering and errors ---------------------------------------------------------------------

def test_render_draws_the_environment_as_an_rgb_image():
    pytest.importorskip("matplotlib")
    penv = parallel_env("tag_continuous", num_runners=3, render_mode="rgb_array")
    penv.reset(seed=0)
    image = penv.render()
    assert image.shape == (320, 320, 3) and image.dtype == np.uint8
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 3  # agents, legend and frame, not a blank canvas
    put(penv, loc_x=[1, 2, 3, 4], loc_y=[1, 2, 3, 4])
    assert not np.array_equal(penv.render(), image)
    penv.close()


@pytest.mark.parametrize("env_id", ["simple_spread", "simple_tag", "simple_adversary", "simple_speaker_listener"])
def test_render_draws_mpe_scenarios_as_they_move(env_id):
    pytest.importorskip("matplotlib")
    penv = parallel_env(env_id, render_mode="rgb_array")
    penv.reset(seed=0)
    image = penv.render()
    for _ in range(5):
        penv.step({name: penv.action_space(name).sample() for name in penv.agents})
    assert image.shape == (320, 320, 3) and not np.array_equal(penv.render(), image)
    penv.close()


def test_render_needs_the_rgb_array_mode():
    penv = parallel_env("tag_gridworld", num_taggers=2)
    with pytest.raises(ValueError, match="render_mode='rgb_array'"):
        penv.render()
    with pytest.raises(ValueError, match="render_mode='human' is not allowed"):
        parallel_env("tag_gridworld", render_mode="human")


@pytest.mark.parametrize("actions, message", [
    ({"tagger_0": 0, "tagger_1": 0}, "no action for live agent"),
    ({"tagger_0": 0, "tagger_1": 0, "runner_0": 0, "ghost": 1}, "unknown agent"),
    ({"tagger_0": 5, "tagger_1": 0, "runner_0": 0}, "action 5 of agent tagger_0 is not in its action space"),
])
def test_bad_actions_are_refused_with_the_agent_named(actions, message):
    penv = parallel_env("tag_gridworld", num_taggers=2)
    penv.reset()
    with pytest.raises(ValueError, match=message):
        penv.step(actions)


def test_bad_views_are_refused():
    batch = warpsim.make("tag_gridworld", 2, backend="numpy", num_taggers=2)
    with pytest.raises(ValueError, match=r"index=2 is not allowed; give an integer in \[0, 1\]"):
        WarpsimParallelEnv(batch, 2)
    with pytest.raises(TypeError, match="wraps a warpsim.Environment"):
        WarpsimParallelEnv("tag_gridworld")  # type: ignore[arg-type]  # the wrong type under test
    with pytest.raises(KeyError, match="unknown agent 'runner_1'"):
        parallel_envs(batch)[0].action_space("runner_1")
    with pytest.raises(RuntimeError, match="call reset"):
        parallel_envs(batch)[0].step({})


@pytest.mark.parametrize("env_id, params", [
    ("tag_continuous", dict(num_taggers=2, num_runners=3, grid_length=4.0, episode_length=20, tagging_distance=0.15)),
    ("tag_continuous", dict(num_taggers=2, num_runners=3, episode_length=20, use_full_observation=False,
                            num_other_agents_observed=2)),
], ids=["tag", "tag partial"])
def test_continuous_tag_passes_the_api_and_seed_tests(env_id, params):
    penv = parallel_env(env_id, seed=0, continuous_actions=True, **params)
    space = penv.action_space("runner_0")
    assert isinstance(space, gymnasium.spaces.Box) and space.shape == (2,) and space.high[0] == 1.0
    strict_api_test(penv)
    parallel_seed_test(lambda: parallel_env(env_id, continuous_actions=True, **params), num_cycles=50)


def test_continuous_actions_are_a_box_of_the_bounds_and_pass_the_api_and_seed_tests():
    penv = parallel_env("beacon", seed=0, num_agents=3, episode_length=12, continuous_actions=True)
    space = penv.action_space("walker_0")
    assert isinstance(space, gymnasium.spaces.Box) and space.dtype == np.float32 and space.shape == (2,)
    assert space.low.tolist() == [-1.0, -1.0] and space.high.tolist() == [1.0, 1.0]
    strict_api_test(penv)
    parallel_seed_test(lambda: parallel_env("beacon", num_agents=3, episode_length=12, continuous_actions=True),
                       num_cycles=50)
    penv.reset(seed=1)
    with pytest.raises(InvalidValueError, match=r"action array\(\[2\., 0\.\].*walker_1 is not in its action space"):
        penv.step({"walker_0": np.zeros(2, np.float32), "walker_1": np.array([2.0, 0.0], np.float32),
                   "walker_2": np.zeros(2, np.float32)})
