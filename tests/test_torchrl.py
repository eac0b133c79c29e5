"""The TorchRL adapter: specs TorchRL's checker accepts, rollouts across episode ends."""

import dataclasses
import importlib
import re
import sys

import pytest
import torch

pytest.importorskip("torchrl")
from helpers import KERNEL_TARGETS, require_target  # noqa: E402
from ticks_env import Ticks  # noqa: E402
from torchrl.data import Bounded  # noqa: E402
from torchrl.envs.utils import check_env_specs, step_mdp  # noqa: E402

import warpsim  # noqa: E402
from warpsim.adapters.torchrl import TorchRLEnv  # noqa: E402
from warpsim.extras import install_hint  # noqa: E402

EPISODE_LENGTH = 5
SMALL = {
    "tag_continuous": dict(num_taggers=1, num_runners=3, episode_length=EPISODE_LENGTH),
    "tag_gridworld": dict(num_taggers=2, grid_length=4, episode_length=EPISODE_LENGTH),
    "beacon": dict(num_agents=3, episode_length=EPISODE_LENGTH),  # only its clock ends an episode
}
ENV_IDS = list(SMALL)


def adapter(env_id: str, num_envs: int = 3, backend: str = "numpy", **params) -> TorchRLEnv:
    return TorchRLEnv(warpsim.make(env_id, num_envs, backend=backend, **{**SMALL[env_id], **params}))


def time_of(data, env: TorchRLEnv, *prefix: str) -> torch.Tensor:
    """int[E, T]: t of each environment at each step, from the observations' last feature,
    t / episode_length in both tag environments (0 for agents out of the game: the largest)."""
    times = [data[tuple(prefix) + (role.name, "observation")][..., -1].amax(-1) for role in env.roles]
    return (torch.stack(times).amax(0) * EPISODE_LENGTH).round().int()


def check_rollout_across_episode_ends(env: TorchRLEnv, steps: int) -> None:
    """Rolls out random actions; checks done flags, final and first observations, resets."""
    torch.manual_seed(0)  # TorchRL draws the random actions from torch's generator
    episodes_before = env.env.state.episode.clone()
    data = env.rollout(steps, break_when_any_done=False)
    assert data.batch_size == (env.env.num_envs, steps)
    done, terminated, truncated = (data["next", key].squeeze(-1) for key in ("done", "terminated", "truncated"))
    assert torch.equal(done, terminated | truncated) and not (terminated & truncated).any()
    assert truncated.any(), "no episode reached the time limit; the test covers no episode end"
    time_now, time_next = time_of(data, env), time_of(data, env, "next")
    at_limit = time_next == EPISODE_LENGTH
    assert done[at_limit].all() and not truncated[~at_limit].any()
    assert torch.equal(terminated[~at_limit], done[~at_limit])  # an early end is by the rules
    # ("next", ...) holds an episode's final observation, not the first of the next one,
    # and the step after an end starts from that first one (t = 0).
    assert torch.equal(time_next, time_now + 1)
    after_done = done[:, :-1]
    assert (time_now[:, 0] == 0).all() and (time_now[:, 1:][after_done] == 0).all()
    for role in env.roles:
        carried = data["next", role.name, "observation"][:, :-1][~after_done]
        assert torch.equal(data[role.name, "observation"][:, 1:][~after_done], carried)
    # Only the environments that ended were reset: once at the start, then after each end
    # but the last step's (rollout does not reset after its last step).
    expected_episodes = episodes_before + 1 + after_done.sum(dim=1, dtype=torch.int32)
    assert torch.equal(env.env.state.episode, expected_episodes)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_specs_passes(env_id):
    check_env_specs(adapter(env_id, episode_length=2), break_when_any_done="both")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_rollout_crosses_episode_ends_with_the_right_flags(env_id):
    check_rollout_across_episode_ends(adapter(env_id), steps=4 * EPISODE_LENGTH + 3)


def test_terminated_and_truncated_are_the_environments_own_flags():
    env = TorchRLEnv(Ticks(2, backend="numpy"))  # env 0 ends by its rules on step 6, env 1 by the clock on 8
    torch.manual_seed(0)
    data = env.rollout(16, break_when_any_done=False)
    terminated, truncated = (data["next", key].squeeze(-1) for key in ("terminated", "truncated"))
    assert terminated[0].nonzero().flatten().tolist() == [5, 11] and not truncated[0].any()
    assert truncated[1].nonzero().flatten().tolist() == [7, 15] and not terminated[1].any()


def test_a_clock_only_environment_truncates():
    env = adapter("beacon")
    torch.manual_seed(0)
    data = env.rollout(2 * EPISODE_LENGTH, break_when_any_done=False)
    assert torch.equal(data["next", "truncated"], data["next", "done"])
    assert data["next", "done"].sum() == 2 * env.env.num_envs
    assert not data["next", "terminated"].any()


def test_groups_follow_the_roles_with_their_specs():
    env = adapter("tag_continuous")
    spec = env.env.spec
    assert set(env.full_action_spec.keys()) == {"runner", "tagger"}
    tagger_action = env.full_action_spec["tagger", "action"]
    assert tagger_action.shape == (3, 1, 2) and tagger_action.dtype == torch.int32
    assert env.full_observation_spec["runner", "observation"].shape == (3, 3, spec.observation_size)
    assert env.full_reward_spec["runner", "reward"].shape == (3, 3, 1)
    assert env.full_done_spec["truncated"].shape == (3, 1)
    grid = adapter("tag_gridworld")
    assert grid.full_action_spec["tagger", "action"].shape == (3, 2)  # one component: Categorical


def test_actions_land_in_the_environment_buffer_and_outputs_are_not_overwritten():
    env = adapter("tag_continuous")
    data = env.rand_action(env.reset())
    stepped = env.step(data)
    for role in env.roles:
        assert torch.equal(role.of(env.env.actions), data[role.name, "action"])
    assert all(tensor.device == env.env.observations.device for tensor in stepped.values(True, True))
    first = stepped["next", "runner", "observation"].clone()
    env.rand_step(step_mdp(stepped))
    assert torch.equal(stepped["next", "runner", "observation"], first)


class AlternatingBeacon(warpsim.Beacon):
    """beacon with two roles that interleave (even and odd agents): no slice selects a role."""

    def describe(self):
        spec = super().describe()
        return dataclasses.replace(spec, role_names=("even", "odd"),
                                   agent_roles=tuple(i % 2 for i in range(spec.num_agents)))


def test_interleaved_roles_read_and_write_their_own_agents():
    env = TorchRLEnv(warpsim.make(AlternatingBeacon, 2, backend="numpy", num_agents=5))
    check_env_specs(env)
    stepped = env.rand_step(env.reset())
    actions, observations = env.env.actions[..., 0], env.env.observations
    assert torch.equal(actions[:, 0::2], stepped["even", "action"])
    assert torch.equal(actions[:, 1::2], stepped["odd", "action"])
    assert torch.equal(observations[:, 1::2], stepped["next", "odd", "observation"])


def test_set_seed_restarts_the_random_streams():
    env = adapter("tag_gridworld")
    env.rollout(7, break_when_any_done=False)
    env.set_seed(11)
    reseeded = env.reset()
    fresh = warpsim.make("tag_gridworld", 3, backend="numpy", seed=11, **SMALL["tag_gridworld"])
    assert torch.equal(reseeded["tagger", "observation"], fresh.observations[:, :2])
    assert torch.equal(env.env.state.episode, fresh.state.episode)
    env.set_seed(12)
    assert not torch.equal(env.reset()["tagger", "observation"], fresh.observations[:, :2])


def test_missing_torchrl_is_a_clear_import_error(monkeypatch):
    for name in [name for name in sys.modules if name.split(".")[0] == "torchrl"]:
        monkeypatch.setitem(sys.modules, name, None)  # None: "import torchrl..." fails
    monkeypatch.delitem(sys.modules, "warpsim.adapters.torchrl")
    with pytest.raises(ImportError, match=re.escape(f"the TorchRL adapter needs torchrl: {install_hint('torchrl')}")):
        importlib.import_module("warpsim.adapters.torchrl")


@pytest.mark.parametrize("target", KERNEL_TARGETS)
def test_kernels_run_behind_the_adapter(target):
    require_target(target)
    env = adapter("tag_gridworld", num_envs=2, backend="cuda", num_taggers=1, grid_length=3)
    data = env.rollout(3)
    assert all(tensor.device == env.env.observations.device for tensor in data.values(True, True))
    check_env_specs(env)
    check_rollout_across_episode_ends(env, steps=2 * EPISODE_LENGTH + 1)


def test_continuous_tag_passes_check_env_specs():
    env = TorchRLEnv(warpsim.make("tag_continuous", 3, backend="numpy", num_taggers=1, num_runners=2,
                                  episode_length=3, continuous_actions=True))
    assert isinstance(env.full_action_spec["tagger", "action"], Bounded)
    check_env_specs(env, break_when_any_done="both")


def test_continuous_actions_are_bounded_and_pass_check_env_specs():
    env = TorchRLEnv(warpsim.make("beacon", 3, backend="numpy", num_agents=2, episode_length=4,
                                  continuous_actions=True))
    spec = env.full_action_spec["walker", "action"]
    assert isinstance(spec, Bounded) and spec.dtype == torch.float32 and tuple(spec.shape) == (3, 2, 2)
    assert (spec.space.low == -1).all() and (spec.space.high == 1).all()
    check_env_specs(env, break_when_any_done="both")
    data = env.rollout(5, break_when_any_done=False)
    assert data["walker", "action"].dtype == torch.float32
    assert ((data["walker", "action"] >= -1) & (data["walker", "action"] <= 1)).all()
