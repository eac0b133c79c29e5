"""Roles that observe observations of their own sizes (``EnvSpec.role_observation_sizes``): the
trainer's networks, the stored rollout, evaluation, load_policy, checked mode and the adapters
each take a role's own size."""

import numpy as np
import pytest
import torch
from helpers import pettingzoo_adapter
from lookers_env import Lookers

import warpsim
from warpsim.errors import InvalidValueError
from warpsim.roles import roles_of
from warpsim.spec import EnvSpec, StateArray
from warpsim.train import TrainConfig
from warpsim.train.loop import train

LOOKERS = "lookers_env:Lookers"


def test_each_role_has_its_own_size_and_observes_the_first_entries_of_its_rows():
    env = Lookers(2, backend="numpy")
    seeker, hider = roles_of(env.spec, env.device)
    assert (seeker.observation_size, hider.observation_size) == (3, 1)
    stacked = torch.arange(2 * 3 * 6, dtype=torch.float32).view(2, 3, 6)  # two observations of 3, stacked
    assert torch.equal(hider.observed(stacked, 2), stacked[:, 2:, [0, 3]])
    assert seeker.observed(stacked, 2).data_ptr() == stacked.data_ptr(), "whole rows: a view"


class Sized(Lookers):
    """Lookers declaring ``sizes`` (a class attribute) as its roles' observation sizes."""

    sizes: object = ()

    def describe(self) -> EnvSpec:
        p = self.params
        return EnvSpec(num_agents=p.seekers + p.hiders, observation_size=3, action_levels=(3,),
                       state=(StateArray("t", np.int32, ("E",)), StateArray("pos", np.float32, ("E", "N"))),
                       role_names=("seeker", "hider"), agent_roles=(0,) * p.seekers + (1,) * p.hiders,
                       role_observation_sizes=self.sizes)  # type: ignore[arg-type]


@pytest.mark.parametrize("sizes, message", [
    ((3,), r"declares 1 role_observation_sizes for 2 roles \(seeker, hider\); give one size per role"),
    ((3, 0), r"declares an observation of 0 entries for role 'hider'; give 1 to observation_size=3"),
    ((4, 1), r"declares an observation of 4 entries for role 'seeker'; give 1 to observation_size=3"),
    ((3, 1.5), r"declares an observation of 1.5 entries for role 'hider'"),
    ([3, 1, 1], r"declares 3 role_observation_sizes for 2 roles"),
    (3, r"declares role_observation_sizes as a int; give a tuple of one size per role"),
])
def test_a_bad_declaration_is_one_line_naming_the_role_and_the_sizes(sizes, message):
    declared = type("Declared", (Sized,), {"sizes": sizes})
    with pytest.raises(InvalidValueError, match=message):
        declared(1, backend="numpy")


def test_checked_mode_refuses_an_entry_written_past_a_roles_size():
    env = warpsim.make(LOOKERS, 2, backend="numpy", leak=True)
    with pytest.raises(InvalidValueError, match=r"observations\[0, 2, 2\] = 7.0, past what an agent of role 'hider' "
                                                r"observes \(the first 1 of 3 entries\): a kernel writes past"):
        env.step()
    env = warpsim.make(LOOKERS, 2, backend="numpy")
    for _ in range(6):
        env.step()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Lookers trained for 3 iterations, observations stacked 2 deep."""
    path = tmp_path_factory.mktemp("lookers") / "run"
    config = TrainConfig(env=LOOKERS, num_envs=4, rollout_steps=5, iterations=3, backend="numpy",
                         stack_observations=2, hidden_size=8)
    trainer = train(config, path, progress=None)
    first_layers = {role: trainer.run_policies().network(role).trunk.get_parameter("0.weight").shape[-1]
                    for role in ("seeker", "hider")}
    assert first_layers == {"seeker": 6, "hider": 2}, "each role's network takes its own 2 x size inputs"
    assert [tuple(trainer.storage[role].observations.shape[-1:]) for role in ("seeker", "hider")] == [(6,), (2,)]
    return path


def test_a_run_evaluates_and_its_policies_act_on_their_roles_own_observations(run):
    evaluation = warpsim.evaluate(run, episodes=8, num_envs=4, backend="numpy")
    assert set(evaluation.plays["greedy"].returns) == {"seeker", "hider"}
    hider = warpsim.load_policy(run, "hider")
    seeker = warpsim.load_policy(run, "seeker")
    assert (hider.observation_size, seeker.observation_size) == (1, 3)
    assert hider.act(np.zeros((5, 1), np.float32)).shape == (5, 1)
    assert seeker.act(np.zeros((5, 3), np.float32)).shape == (5, 1)
    with pytest.raises(InvalidValueError, match=r"float\[..., 1\]"):
        hider.act(np.zeros((5, 3), np.float32))


def test_the_pettingzoo_adapter_gives_each_agent_its_roles_space_and_observation():
    env = pettingzoo_adapter().parallel_env(LOOKERS, seekers=2, hiders=2)
    observations, _ = env.reset()
    sizes = {name: env.observation_space(name).shape for name in env.possible_agents}
    assert sizes == {"seeker_0": (3,), "seeker_1": (3,), "hider_0": (1,), "hider_1": (1,)}
    assert all(observations[name].shape == sizes[name] for name in env.agents)
    stepped, *_ = env.step({name: 1 for name in env.agents})
    assert all(env.observation_space(name).contains(stepped[name]) for name in env.agents)


def test_the_torchrl_adapter_gives_each_group_its_roles_size():
    torchrl = pytest.importorskip("torchrl")
    from warpsim.adapters.torchrl import TorchRLEnv

    env = TorchRLEnv(Lookers(2, backend="numpy"))
    reset = env.reset()
    assert reset["seeker", "observation"].shape == (2, 2, 3) and reset["hider", "observation"].shape == (2, 1, 1)
    torchrl.envs.utils.check_env_specs(env)
