"""Env.graph(): captured steps on a GPU, eager stepping with the same results elsewhere; checked
mode's deferred device check."""

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch

import warpsim
from warpsim.environment import CHECK_EVERY
from warpsim.errors import InvalidValueError
from warpsim.graph import MAX_STEPS

SMALL: dict[str, Any] = dict(num_taggers=1, num_runners=3, episode_length=3)


def random_actions(env, rng):
    levels = np.array(env.spec.action_levels)
    return torch.from_numpy((rng.random(tuple(env.actions.shape)) * levels).astype(np.int32)).to(env.device)


def arrays(env):
    return {"observations": env.observations.clone(), "rewards": env.rewards.clone(), "done": env.done.clone(),
            "terminated": env.terminated.clone(), **{name: t.clone() for name, t in env.state.items()}}


def assert_same(first, second):
    for name in first:
        assert torch.equal(first[name], second[name]), name


def replay_against_eager(backend, seed, steps, rounds, env_id="tag_continuous", **params):
    """Replays of a k-step graph and k eager steps from one seed, state for state after every round."""
    graphed = warpsim.make(env_id, 3, backend=backend, seed=seed, **params)
    eager = warpsim.make(env_id, 3, backend=backend, seed=seed, **params)
    graph = graphed.graph(steps=steps)
    rng = np.random.default_rng(seed)
    resets = 0
    for _ in range(rounds):
        actions = random_actions(graphed, rng)
        graphed.actions.copy_(actions)
        eager.actions.copy_(actions)
        graph.replay()
        for _ in range(steps):
            eager.step()
        assert_same(arrays(eager), arrays(graphed))
        resets = int(graphed.state.episode.sum())
    return graph, resets


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_a_graph_where_nothing_can_be_captured_steps_eagerly_with_the_same_results(backend):
    graph, resets = replay_against_eager(backend, seed=4, steps=2, rounds=3, **SMALL)
    assert graph.launches == "eager" and graph.captures == 0
    assert resets > 3  # episodes of 3 steps ended and reset inside the replays


@pytest.mark.parametrize("steps", [0, -1, 1.5, True, "2", MAX_STEPS + 1, 10**18])
def test_steps_per_replay_must_be_a_positive_integer_within_the_bound(steps):
    env = warpsim.make("tag_gridworld", 1, backend="numpy")
    allowed = rf"give an integer in \[1, {MAX_STEPS}\]"
    with pytest.raises(InvalidValueError, match=rf"steps={steps!r} is not allowed; {allowed}"):
        env.graph(steps=steps)


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_checked_mode_refuses_bad_host_actions_at_once(backend):
    env = warpsim.make("tag_continuous", 2, backend=backend, **SMALL)
    actions = np.zeros(tuple(env.actions.shape), np.int64)
    actions[1, 2, 0] = env.spec.action_levels[0]
    before = env.actions.clone()
    with pytest.raises(InvalidValueError, match=r"action index \d+ of component 0 \(env 1, agent 2\) is out of range"):
        env.step(actions)
    assert torch.equal(env.actions, before)  # refused before it was copied in


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_on_the_cpu_checked_mode_refuses_bad_actions_and_state_before_every_step(backend):
    env = warpsim.make("tag_continuous", 2, backend=backend, **SMALL)
    assert env.check_every == 1  # a read costs nothing where the arrays are on the host
    env.actions[0, 1, 1] = -1
    t = env.state.t.clone()
    with pytest.raises(InvalidValueError, match=r"action index -1 of component 1 \(env 0, agent 1\) is out of range"):
        env.step()
    env.actions.zero_()
    env.state.speed[1, 0] = float("nan")
    with pytest.raises(InvalidValueError, match=r"state.speed\[1, 0\] = nan"):
        env.step()
    assert torch.equal(env.state.t, t)  # neither step ran


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_with_check_every_bad_device_actions_are_reported_at_the_next_check(backend):
    env = warpsim.make("tag_continuous", 2, backend=backend, **SMALL)
    env.check_every = CHECK_EVERY  # the GPU's default: no host read per step
    env.actions[0, 1, 1] = -1  # written in place: on a GPU this is device memory
    env.step()
    env.actions.zero_()
    for _ in range(CHECK_EVERY - 2):
        env.step()  # no host read in between: the step goes on (the kernels clamp the index)
    with pytest.raises(InvalidValueError, match=rf"out of range reached env.actions on the device within the last "
                                                rf"{CHECK_EVERY} step\(s\).*component 1: 0\.\.\d+"):
        env.step()
    env.check()  # reported once: the flag is cleared
    env.actions[0, 0, 0] = 99
    env.step()
    with pytest.raises(InvalidValueError, match=r"within the last 1 step\(s\)"):
        env.check()


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_with_check_every_an_invalid_state_is_reported_at_the_next_check(backend):
    env = warpsim.make("tag_continuous", 2, backend=backend, num_runners=3)
    env.check_every = 3
    env.state.direction[0, 1] = float("nan")
    env.step()
    env.step()  # trusted until the next check
    with pytest.raises(InvalidValueError, match=r"state.\w+\[0, 1\] = nan"):
        env.step()
    unchecked = warpsim.make("tag_continuous", 2, backend=backend, num_runners=3, checked=False)
    unchecked.actions.fill_(-5)
    for _ in range(3):
        unchecked.step()  # unchecked: nothing is flagged or read
    unchecked.check()


@pytest.mark.parametrize("steps", [0, -2, 2.0, True, None])
def test_check_every_must_be_a_positive_integer(steps):
    env = warpsim.make("tag_gridworld", 1, backend="numpy")
    with pytest.raises(InvalidValueError, match=f"check_every={steps!r} is not allowed; give an integer >= 1"):
        env.check_every = steps
    assert env.check_every == 1


@pytest.mark.gpu
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("env_id, params", [
    ("tag_continuous", SMALL),
    ("tag_continuous", dict(num_taggers=3, num_runners=40, episode_length=5, use_full_observation=False,
                            num_other_agents_observed=4, neighbour_search="grid")),
    ("tag_gridworld", dict(episode_length=4)),
])
def test_replaying_a_captured_graph_equals_eager_stepping_on_the_gpu(seed, env_id, params):
    graph, resets = replay_against_eager("cuda", seed, steps=4, rounds=5, env_id=env_id, **params)
    assert graph.launches == "cuda-graph" and graph.captures == 1
    assert resets > 3  # environments reset inside the graph


@pytest.mark.gpu
def test_a_stale_capture_is_captured_again_on_the_gpu():
    env = warpsim.make("tag_continuous", 4, backend="cuda", **SMALL)
    assert env.check_every == CHECK_EVERY
    graph = env.graph(steps=3)
    graph.replay()
    graph.replay()
    assert graph.captures == 1
    env.params = dataclasses.replace(env.params)
    graph.replay()
    assert graph.captures == 2
    env.actions.fill_(-1)
    with pytest.raises(InvalidValueError, match="out of range reached env.actions on the device"):
        for _ in range(CHECK_EVERY // 3 + 1):
            graph.replay()  # checked mode's device flag is set inside the graph, read every CHECK_EVERY steps
