"""Roles that act with actions of their own (``EnvSpec.role_action_levels`` and ``role_action_bounds``):
random play, the trainer's heads and stored actions, evaluation, load_policy, checked mode and the
adapters each take a role's own levels or bounds, in the first components of its rows; a discrete
role and a continuous one act in the same environment, its indices whole float32 values."""

from typing import Any

import numpy as np
import pytest
import torch
from helpers import pettingzoo_adapter
from signallers_env import BOUNDS, LEVELS, Signallers

import warpsim
from warpsim.actions import RandomActions
from warpsim.errors import InvalidValueError
from warpsim.spec import EnvSpec, StateArray
from warpsim.train import TrainConfig
from warpsim.train.loop import train
from warpsim.train.policy import RolePolicies

SIGNALLERS = "signallers_env:Signallers"
KINDS = ["discrete", "continuous", "mixed"]
"""Both roles discrete, both continuous, or a discrete speaker and a continuous listener."""
PARAMS: dict[str, dict[str, Any]] = {"discrete": {}, "continuous": dict(continuous_actions=True),
                                    "mixed": dict(mixed_actions=True)}


def signallers(num_envs: int, kind: str, **options) -> Signallers:
    env = warpsim.make(SIGNALLERS, num_envs, backend="numpy", **PARAMS[kind], **options)
    assert isinstance(env, Signallers)
    return env


def speaker_continuous(kind: str) -> bool:
    return kind == "continuous"


def listener_continuous(kind: str) -> bool:
    return kind != "discrete"


def test_each_role_declares_its_own_actions_within_the_row():
    discrete, continuous, mixed = (signallers(1, kind).spec for kind in KINDS)
    assert [discrete.action_levels_of(role) for role in ("speaker", "listener")] == list(LEVELS)
    assert [continuous.action_bounds_of(role) for role in ("speaker", "listener")] == list(BOUNDS)
    assert (mixed.action_levels_of("speaker"), mixed.action_bounds_of("listener")) == (LEVELS[0], BOUNDS[1])
    for spec in (discrete, continuous, mixed):
        assert [spec.action_size_of(role) for role in ("speaker", "listener")] == [1, 2]
    assert [spec.continuous_of("speaker") for spec in (discrete, continuous, mixed)] == [False, True, False]
    assert [spec.continuous_of("listener") for spec in (discrete, continuous, mixed)] == [False, True, True]
    assert mixed.continuous and mixed.action_levels_of("listener") == () and mixed.action_bounds_of("speaker") == ()


class Declared(Signallers):
    """Signallers declaring ``declared`` (a class attribute) as its EnvSpec's role fields."""

    declared: dict = {}

    def describe(self) -> EnvSpec:
        fields = dict(num_agents=2, observation_size=2, role_names=("speaker", "listener"), agent_roles=(0, 1),
                      state=(StateArray("t", np.int32, ("E",)),), action_levels=(5, 2))
        return EnvSpec(**{**fields, **self.declared})


@pytest.mark.parametrize("declared, message", [
    (dict(role_action_levels=((3,),)), r"declares 1 role_action_levels for 2 roles \(speaker, listener\); give one"),
    (dict(role_action_levels=((3,), (5, 2, 2))), r"declares role 'listener'.s actions as \(5, 2, 2\) in "
                                                 r"role_action_levels; give a tuple of 1 to 2 components"),
    (dict(role_action_levels=((6,), (5, 2))), r"declares component 0 of role 'speaker'.s actions as 6; give an "
                                              r"integer from 1 to 5 \(action_levels\[0\]\)"),
    (dict(role_action_levels=((3,), ())), r"role 'listener'.s actions as \(\)"),
    (dict(role_action_levels=((3.0,), (5, 2))), r"component 0 of role 'speaker'.s actions as 3.0"),
    (dict(role_action_levels=3), r"declares role_action_levels as a int; give a tuple of one tuple per role"),
    (dict(role_action_bounds=(((0.0, 1.0),), ((0.0, 1.0),))), r"declares action_levels and role_action_bounds; "
                                                               r"give each role's actions as role_action_levels"),
    (dict(action_levels=(), action_bounds=((-1.0, 1.0),), role_action_bounds=(((0.0, 2.0),), ((0.0, 1.0),))),
     r"component 0 of role 'speaker'.s actions as \(0.0, 2.0\); give a pair \(low, high\) with low < high within "
     r"action_bounds\[0\] = \(-1.0, 1.0\)"),
    (dict(action_levels=(), action_bounds=((-1.0, 1.0),), role_action_levels=((3,), (2,))),
     r"declares action_bounds and role_action_levels alone; give each role's actions as role_action_bounds, and "
     r"both for roles of both kinds"),
    (dict(action_levels=(), action_bounds=((-1.0, 1.0),), role_action_levels=((3,), (2,)),
          role_action_bounds=((), ((0.0, 1.0),))),
     r"declares role 'listener'.s actions as \(2,\) in role_action_levels and \(\(0.0, 1.0\),\) in "
     r"role_action_bounds; give them in one and \(\) in the other"),
    (dict(action_levels=(), action_bounds=((-1.0, 1.0),), role_action_levels=((), ()),
          role_action_bounds=((), ((0.0, 1.0),))), r"role 'speaker'.s actions as \(\) in role_action_levels and \(\)"),
])
def test_a_bad_declaration_is_one_line_naming_the_role_and_what_is_allowed(declared, message):
    with pytest.raises(InvalidValueError, match=message):
        type("Bad", (Declared,), {"declared": declared})(1, backend="numpy")


@pytest.mark.parametrize("kind", KINDS)
def test_random_actions_keep_to_each_roles_own_and_leave_the_rest_zero(kind):
    env = signallers(1, kind)
    draw = RandomActions(env.spec, env.device)
    speaker = draw((4000, 1), torch.Generator().manual_seed(0), "speaker")
    every = draw((4000, 2), torch.Generator().manual_seed(1))
    assert speaker.dtype == every.dtype == env.actions.dtype
    for actions in (speaker[:, 0], every[:, 0]):
        assert torch.all(actions[:, 1] == 0)
        if speaker_continuous(kind):
            assert float(actions[:, 0].min()) >= 0 and float(actions[:, 0].max()) <= 2.0
        else:
            assert set(actions[:, 0].tolist()) == {0, 1, 2}, "whole values, float32 ones in a mixed row"
    listener = every[:, 1]
    if listener_continuous(kind):
        assert float(listener[:, 0].min()) < -1.9 and float(listener[:, 0].max()) > 1.9
        assert 0 <= float(listener[:, 1].min()) and float(listener[:, 1].max()) <= 1
        assert not torch.equal(listener, listener.floor())
    else:
        assert set(listener[:, 0].tolist()) == {0, 1, 2, 3, 4} and set(listener[:, 1].tolist()) == {0, 1}


@pytest.mark.parametrize("kind", KINDS)
def test_checked_mode_refuses_an_action_outside_its_roles_own_naming_the_role(kind):
    env = signallers(1, kind, checked=True)
    dtype = np.int32 if kind == "discrete" else np.float32
    env.step(np.array([[[2, 0], [1, 1]]], dtype))
    with pytest.raises(InvalidValueError, match=r"component 0 \(env 0, agent 0, role speaker\) is (out of range; "
                                                r"allowed: 0..2|not allowed; allowed: a finite value in \[0, 2\])"):
        env.step(np.array([[[2.5 if speaker_continuous(kind) else 3, 0], [0, 0]]], dtype))
    if kind == "mixed":
        with pytest.raises(InvalidValueError, match=r"action index 1.5 of component 0 \(env 0, agent 0, role "
                                                    r"speaker\) is not a whole number; allowed: 0..2"):
            env.step(np.array([[[1.5, 0], [0.5, 0.5]]], dtype))
        with pytest.raises(InvalidValueError, match=r"action -2.5 of component 0 \(env 0, agent 1, role listener\) "
                                                    r"is not allowed; allowed: a finite value in \[-2, 2\]"):
            env.step(np.array([[[1, 0], [-2.5, 0.5]]], dtype))
    with pytest.raises(InvalidValueError, match=r"action component 1 \(env 0, agent 0, role speaker\) holds 1(.0)?, "
                                                r"past role 'speaker'.s 1 component\(s\); allowed: 0 there"):
        env.step(np.array([[[0, 1], [0, 0]]], dtype))


@pytest.fixture(scope="module", params=KINDS)
def run(request, tmp_path_factory):
    """Signallers trained for 3 iterations; the last actions the trainer wrote are each role's own."""
    kind = request.param
    path = tmp_path_factory.mktemp("signallers") / "run"
    config = TrainConfig(env=SIGNALLERS, env_params=PARAMS[kind], num_envs=4, rollout_steps=6, iterations=3,
                         backend="numpy", hidden_size=8)
    trainer = train(config, path, progress=None)
    written = trainer.env.actions
    assert torch.all(written[:, 0, 1] == 0), "past the speaker's one component"
    said = written[:, 0, 0]
    assert (said.min() >= 0 and said.max() <= 2) and (speaker_continuous(kind) or torch.equal(said, said.floor()))
    policies = trainer.run_policies()
    assert isinstance(policies, RolePolicies)
    outputs = {role: policies.network(role).policy_head.out_features for role in ("speaker", "listener")}
    # logits of each level (discrete); a mean per component, its log-std held apart (continuous)
    assert outputs == {"speaker": 1 if speaker_continuous(kind) else 3, "listener": 2 if listener_continuous(kind)
                       else 7}
    stored = {role: trainer.storage[role].actions for role in ("speaker", "listener")}
    assert {role: actions.shape[-1] for role, actions in stored.items()} == {"speaker": 1, "listener": 2}
    assert stored["speaker"].is_floating_point() is speaker_continuous(kind)
    assert stored["listener"].is_floating_point() is listener_continuous(kind)
    return path, kind


def test_a_run_evaluates_and_its_policies_act_with_their_roles_own_actions(run):
    path, kind = run
    evaluation = warpsim.evaluate(path, episodes=8, num_envs=4, backend="numpy")
    assert set(evaluation.plays["greedy"].returns) == {"speaker", "listener"}
    speaker, listener = (warpsim.load_policy(path, role) for role in ("speaker", "listener"))
    spoken, moved = speaker.act(np.zeros((50, 2), np.float32)), listener.act(np.zeros((50, 2), np.float32))
    assert spoken.shape == (50, 1) and moved.shape == (50, 2)
    if speaker_continuous(kind):
        assert speaker.action_bounds == BOUNDS[0] and spoken.min() >= 0 and spoken.max() <= 2
    else:
        assert speaker.action_levels == LEVELS[0] and spoken.dtype == np.int32 and spoken.max() <= 2
    if listener_continuous(kind):
        assert listener.action_bounds == BOUNDS[1] and moved[:, 1].min() >= 0 and moved[:, 1].max() <= 1
    else:
        assert listener.action_levels == LEVELS[1] and moved[:, 1].max() <= 1


@pytest.mark.parametrize("kind", KINDS)
def test_the_pettingzoo_adapter_gives_each_agent_its_roles_action_space(kind):
    parallel_env = pettingzoo_adapter().parallel_env
    from pettingzoo.test import parallel_api_test

    env = parallel_env(SIGNALLERS, **PARAMS[kind])
    spaces: dict[str, Any] = {name: env.action_space(name) for name in env.possible_agents}
    if speaker_continuous(kind):
        assert spaces["speaker_0"].shape == (1,) and list(spaces["speaker_0"].high) == [2.0]
    else:
        assert spaces["speaker_0"].n == 3
    if listener_continuous(kind):
        assert spaces["listener_0"].shape == (2,) and list(spaces["listener_0"].low) == [-2.0, 0.0]
    else:
        assert list(spaces["listener_0"].nvec) == [5, 2]
    env.reset()
    env.step({"speaker_0": spaces["speaker_0"].sample(), "listener_0": spaces["listener_0"].sample()})
    parallel_api_test(parallel_env(SIGNALLERS, **PARAMS[kind]), num_cycles=20)


@pytest.mark.parametrize("kind", KINDS)
def test_the_torchrl_adapter_gives_each_group_its_roles_action_spec(kind):
    torchrl = pytest.importorskip("torchrl")
    from warpsim.adapters.torchrl import TorchRLEnv

    env = TorchRLEnv(signallers(2, kind))
    speaker, listener = (env.full_action_spec[role, "action"] for role in ("speaker", "listener"))
    assert speaker.shape == ((2, 1, 1) if speaker_continuous(kind) else (2, 1)) and listener.shape == (2, 1, 2)
    assert speaker.dtype == (torch.float32 if speaker_continuous(kind) else torch.int32)
    torchrl.envs.utils.check_env_specs(env)
    rolled = env.rollout(8)
    assert rolled["listener", "action"].shape[-1] == 2 and listener.is_in(rolled["listener", "action"][:, 0])
