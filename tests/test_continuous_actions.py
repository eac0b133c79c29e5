"""Continuous actions: declared by their bounds, checked, clamped alike by the reference and the
kernels, drawn at random within their bounds, and learned by a Gaussian policy."""

import json
import math
from typing import Any

import numpy as np
import pytest
import torch
from helpers import KERNEL_TARGETS, require_target
from test_run_faults import records

import warpsim
from warpsim.actions import RandomActions
from warpsim.analysis.play import Player, evaluate
from warpsim.check import check
from warpsim.cli import main
from warpsim.envs.tag_continuous import TagContinuous
from warpsim.errors import InvalidTypeError, InvalidValueError
from warpsim.kernels.actions import clamp
from warpsim.layout import check_actions
from warpsim.spec import EnvSpec
from warpsim.train import TrainConfig, Trainer, train
from warpsim.train.action_heads import GaussianHead, TanhNormalHead

BEACON: dict[str, Any] = dict(num_agents=3, episode_length=6, continuous_actions=True)


def spec_with(**actions) -> EnvSpec:
    return EnvSpec(num_agents=1, observation_size=1, state=(), role_names=("agent",), agent_roles=(0,),
                   **{"action_levels": (), **actions})


def test_the_spec_declares_continuous_actions_by_their_bounds():
    env = warpsim.make("beacon", 2, backend="numpy", **BEACON)
    assert env.spec.continuous and env.spec.action_size == 2 and env.spec.action_levels == ()
    assert env.actions.dtype == torch.float32 and tuple(env.actions.shape) == (2, 3, 2)
    discrete = warpsim.make("beacon", 2, backend="numpy")
    assert not discrete.spec.continuous and discrete.actions.dtype == torch.int32


@pytest.mark.parametrize("actions, message", [
    (dict(), "declares neither action_levels nor action_bounds; declare one"),
    (dict(action_levels=(3,), action_bounds=((0.0, 1.0),)), "declares both action_levels and action_bounds"),
    (dict(action_bounds=((1.0, 1.0),)), r"action_bounds\[0\] = \(1.0, 1.0\); give finite float32 bounds with low < high"),
    (dict(action_bounds=((0.0, 1.0), (2.0, -2.0))), r"action_bounds\[1\] = \(2.0, -2.0\)"),
    (dict(action_bounds=((-math.inf, 1.0),)), "finite float32 bounds"),
    (dict(action_bounds=((math.nan, 1.0),)), "finite float32 bounds"),
    (dict(action_bounds=((0.0, 1e39),)), "finite float32 bounds"),
    (dict(action_bounds=((0.0,),)), r"give a pair \(low, high\) of numbers"),
    (dict(action_bounds=(("a", 1.0),)), r"give a pair \(low, high\) of numbers"),
    (dict(action_bounds=((False, True),)), r"give a pair \(low, high\) of numbers"),
    (dict(action_levels=(0,)), r"action_levels\[0\] = 0; give an integer >= 1"),
    (dict(action_bounds=((-3e38, 3e38),)), r"whose width 6e\+38 overflows float32 \(at most 3.4e\+38\); give narrower"),
    (dict(action_bounds=np.array([[-1.0, 1.0]])), r"declares action_bounds as a ndarray; give a tuple, e\.g\. "
                                                  r"action_bounds=\(\(-1\.0, 1\.0\),\)"),
    (dict(action_bounds=torch.tensor([[-1.0, 1.0]])), "declares action_bounds as a Tensor; give a tuple"),
    (dict(action_bounds=(pair for pair in [(-1.0, 1.0)])), "declares action_bounds as a generator; give a tuple"),
    (dict(action_levels=np.array([3])), "declares action_levels as a ndarray; give a tuple, e.g. action_levels"),
])
def test_bad_action_declarations_are_one_line_errors_naming_the_environment(actions, message):
    with pytest.raises(InvalidValueError, match=message) as error:
        check_actions("MyEnv", spec_with(**actions))
    assert str(error.value).startswith("MyEnv declares") and "\n" not in str(error.value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 1.5, -1.0001])
def test_checked_mode_refuses_nan_inf_and_values_outside_the_bounds(value):
    env = warpsim.make("beacon", 2, backend="numpy", **BEACON)
    actions = np.zeros((2, 3, 2), np.float32)
    actions[1, 2, 1] = value
    with pytest.raises(InvalidValueError, match=rf"^beacon: action {value!r} of component 1 \(env 1, agent 2\) is "
                                                rf"not allowed; allowed: a finite value in \[-1, 1\]$"):
        env.step(actions)
    env.actions.copy_(torch.from_numpy(actions))  # written in place: checked before the step on the CPU
    with pytest.raises(InvalidValueError, match="agent 2"):
        env.step()


def test_float64_actions_are_converted_and_integer_ones_refused():
    env = warpsim.make("beacon", 1, backend="numpy", **BEACON)
    env.step(np.full((1, 3, 2), 0.25, np.float64))
    assert env.actions.dtype == torch.float32 and (env.actions == 0.25).all()
    env.step(np.full((1, 3, 2), 1.0, np.float64))  # the bound itself is allowed
    for wrong in (np.zeros((1, 3, 2), np.int64), np.zeros((1, 3, 2), bool)):
        with pytest.raises(InvalidTypeError, match=r"beacon's actions are continuous: give floating-point values"):
            env.step(wrong)
    with pytest.raises(InvalidTypeError, match="expected an integer dtype"):
        warpsim.make("beacon", 1, backend="numpy").step(np.zeros((1, 4, 1), np.float32))


def test_the_clamping_rule():
    values = np.array([math.nan, math.inf, -math.inf, 2.0, -2.0, 0.3, -1.0, 1.0], np.float32)
    assert clamp(values, -1, 1).tolist() == pytest.approx([-1, 1, -1, 1, -1, 0.3, -1, 1])
    assert clamp(values, -1, 1).dtype == np.float32


@pytest.mark.parametrize("target", KERNEL_TARGETS)
def test_the_kernels_clamp_as_the_reference_does(target):
    require_target(target)
    unchecked = [warpsim.make("beacon", 2, backend=backend, checked=False, seed=3, **BEACON)
                 for backend in ("numpy", "cuda")]
    wild = torch.tensor([[[math.nan, 0.5], [math.inf, -math.inf], [3.0, -0.25]],
                         [[-7.0, 1.0], [0.75, math.nan], [-1.0, 2.5]]])
    for actions in (wild, -wild, torch.zeros(2, 3, 2)):
        for env in unchecked:
            env.step(actions.to(env.device))
        reference, kernels = unchecked
        for name in ("pos_x", "pos_y"):
            assert torch.equal(getattr(reference.state, name), getattr(kernels.state, name).cpu()), name
        assert torch.equal(reference.observations, kernels.observations.cpu())
    moved = unchecked[0].state.pos_x - warpsim.make("beacon", 2, backend="numpy", seed=3, **BEACON).state.pos_x
    assert moved.abs().max() <= 2 * 0.5 + 1e-6, "never more than the step size a step, clamped"


def test_check_steps_continuous_actions_within_their_bounds():
    report = check("beacon", num_envs=2, steps=14, **BEACON)
    assert report.consistent and report.episodes_ended >= 2


def test_random_actions_are_uniform_within_the_bounds():
    env = warpsim.make("beacon", 1, backend="numpy", **BEACON)
    drawn = RandomActions(env.spec, env.device)((4000, 3), torch.Generator().manual_seed(0))
    assert drawn.dtype == torch.float32 and tuple(drawn.shape) == (4000, 3, 2)
    assert drawn.min() >= -1 and drawn.max() <= 1
    assert abs(drawn.mean().item()) < 0.02 and drawn.std().item() == pytest.approx(2 / math.sqrt(12), rel=0.02)
    discrete = warpsim.make("beacon", 1, backend="numpy")
    indices = RandomActions(discrete.spec, discrete.device)((1000, 1), torch.Generator().manual_seed(0))
    assert indices.dtype == torch.int32 and set(indices.unique().tolist()) == {0, 1, 2, 3, 4}


def test_random_play_draws_within_the_bounds():
    env = warpsim.make("beacon", 4, backend="numpy", **BEACON)
    result = evaluate(Player(env, None, seed=1), episodes=8)
    assert result.episodes == 8 and 0 <= result.returns["walker"] <= 6


# ----- the Gaussian policy -----------------------------------------------------------------------
def test_the_gaussian_heads_log_prob_and_entropy_are_torch_distributions():
    head = GaussianHead(((-1.0, 1.0), (0.0, 2.0), (-3.0, 3.0)))
    generator = torch.Generator().manual_seed(0)
    mean, log_std = torch.randn(5, 3, generator=generator), torch.randn(5, 3, generator=generator) * 0.5
    outputs = torch.cat([mean, log_std], -1).to(torch.bfloat16).float()  # as under bf16 autocast
    mean, log_std = head.split(outputs)
    actions = head.sample(outputs, generator)
    normal = torch.distributions.Normal(mean, log_std.exp())
    torch.testing.assert_close(head.log_prob(outputs, actions), normal.log_prob(actions).sum(-1))
    torch.testing.assert_close(head.entropy(outputs), normal.entropy().sum(-1))
    assert torch.equal(head.sample(outputs, None, greedy=True), mean)
    clipped = head.to_env(torch.tensor([[5.0, -5.0, 0.5]]))
    assert clipped.tolist() == [[1.0, 0.0, 0.5]], "clipped to the bounds only where written to the environment"
    assert head.log_prob(outputs.to(torch.bfloat16), actions).dtype == torch.float32


def test_a_continuous_run_trains_resumes_exactly_and_plays_as_a_run_plays(tmp_path):
    config = TrainConfig(env="beacon", env_params=BEACON, num_envs=4, rollout_steps=6, iterations=4, log_every=1,
                         checkpoint_every=2, backend="numpy")
    straight = train(config, tmp_path / "straight", progress=None)
    stored = straight.storage["walker"].actions
    assert stored.dtype == torch.float32 and stored.abs().max() > 0
    written = straight.env.actions
    assert written.min() >= -1 and written.max() <= 1, "what the environment is given is clipped"
    metrics = [json.loads(line) for line in (tmp_path / "straight" / "metrics.jsonl").read_text().splitlines()]
    assert all("log_std" in m and "entropy" in m and "approx_kl" in m and "clip_fraction" in m for m in metrics)
    assert metrics[-1]["log_std"] != 0.0, "the log standard deviation learns"
    train(config, tmp_path / "parts", stop_after=2, progress=None)
    resumed = train(None, tmp_path / "parts", resume=True, progress=None)
    for (name, mine), theirs in zip(resumed.policies.state_dict().items(), straight.policies.state_dict().values()):
        assert torch.equal(mine, theirs), name
    assert records(tmp_path / "parts") == records(tmp_path / "straight")
    result = warpsim.evaluate(tmp_path / "straight", episodes=4, num_envs=4, backend="numpy")
    assert set(result.plays) == {"sampled", "greedy"} and result.random is not None
    policy = warpsim.load_policy(tmp_path / "straight", "walker")
    assert policy.action_bounds == ((-1.0, 1.0), (-1.0, 1.0)) and policy.action_levels == ()
    acted = policy.act(np.full((7, 3), 0.5, np.float32), greedy=False)
    assert acted.dtype == np.float32 and acted.shape == (7, 2) and np.abs(acted).max() <= 1
    assert main(["evaluate", str(tmp_path / "straight"), "--episodes", "4", "--num-envs", "4", "--greedy"]) == 0


def test_a_batch_of_continuous_runs_keeps_each_run_as_alone():
    configs = [TrainConfig(env="beacon", env_params=BEACON, num_envs=4, rollout_steps=6, backend="numpy", seed=seed)
               for seed in range(3)]
    batch = Trainer(configs)
    alone = Trainer(configs[1])
    for _ in range(2):
        batch.iterate()
        alone.iterate()
    mine, theirs = batch.read_metrics()[1], alone.read_metrics()[0]
    assert mine.keys() == theirs.keys() and all(mine[k] == theirs[k] or mine[k] != mine[k] for k in mine)
    batched, single = batch.policies.network("walker").log_std, alone.policies.network("walker").log_std
    assert batched is not None and single is not None and torch.equal(batched[1], single[0])


# ----- tag_continuous ----------------------------------------------------------------------------
TAG: dict[str, Any] = dict(num_taggers=2, num_runners=3, episode_length=8)


@pytest.mark.parametrize("backend", ["numpy", pytest.param("cuda", id="kernels")])
def test_a_continuous_action_equal_to_a_table_entry_moves_as_the_index_that_picks_it(backend):
    """docs/tag_rules.md section 1: the numbers are used directly instead of looked up in the tables."""
    discrete = warpsim.make("tag_continuous", 3, backend=backend, seed=4, **TAG)
    continuous = warpsim.make("tag_continuous", 3, backend=backend, seed=4, continuous_actions=True, **TAG)
    assert continuous.spec.action_bounds == ((-1.0, 1.0), (-math.pi / 2, math.pi / 2))
    assert isinstance(discrete, TagContinuous)
    acceleration, turn = discrete.constants.acceleration_table, discrete.constants.turn_table
    rng = np.random.default_rng(0)
    for _ in range(12):  # over an episode's end and reset
        indices = np.stack([rng.integers(0, len(acceleration), (3, 5)), rng.integers(0, len(turn), (3, 5))], -1)
        discrete.step(indices.astype(np.int32))
        continuous.step(np.stack([acceleration[indices[..., 0]], turn[indices[..., 1]]], -1))
        for (name, mine), (_, theirs) in zip(continuous.state.items(), discrete.state.items()):
            assert torch.equal(mine, theirs), name
        assert torch.equal(continuous.observations, discrete.observations)
        assert torch.equal(continuous.rewards, discrete.rewards)


@pytest.mark.parametrize("params", [dict(), dict(use_full_observation=False, num_other_agents_observed=2)],
                         ids=["full", "partial"])
def test_check_steps_continuous_tag_kernels_against_the_reference(params):
    report = check("tag_continuous", num_envs=2, steps=20, continuous_actions=True, **TAG, **params)
    assert report.consistent and report.episodes_ended >= 2


@pytest.mark.parametrize("target", KERNEL_TARGETS)
def test_the_tag_kernels_clamp_continuous_actions_as_the_reference_does(target):
    require_target(target)
    unchecked = [warpsim.make("tag_continuous", 2, backend=backend, checked=False, seed=3, continuous_actions=True,
                              **TAG) for backend in ("numpy", "cuda")]
    wild = torch.tensor([math.nan, math.inf, -math.inf, 5.0, -5.0, 0.25]).repeat(4)[:20].view(2, 5, 2)
    for actions in (wild, -wild, wild.flip(1)):
        for env in unchecked:
            env.step(actions.to(env.device))
        for (name, mine), (_, theirs) in zip(unchecked[0].state.items(), unchecked[1].state.items()):
            assert torch.equal(mine, theirs.cpu()), name


def test_continuous_tag_needs_ranges_and_refuses_out_of_range_actions():
    with pytest.raises(InvalidValueError, match=r"continuous_actions=True .*need ranges with min < max; "
                                                r"\[0.5, 0.5\]"):
        warpsim.make("tag_continuous", 1, continuous_actions=True, min_acceleration=0.5, max_acceleration=0.5)
    env = warpsim.make("tag_continuous", 1, backend="numpy", continuous_actions=True, **TAG)
    actions = np.zeros((1, 5, 2), np.float32)
    actions[0, 3, 1] = 1.6
    with pytest.raises(InvalidValueError, match=r"tag_continuous: action 1.6 of component 1 \(env 0, agent 3\) is "
                                                r"not allowed; allowed: a finite value in \[-1.5708, 1.5708\]"):
        env.step(actions)


def test_the_tanh_normal_heads_log_prob_is_torchs_squashed_normal():
    head = TanhNormalHead(((-1.0, 1.0), (0.0, 4.0)))
    generator = torch.Generator().manual_seed(1)
    outputs = torch.cat([torch.randn(6, 2, generator=generator), torch.randn(6, 2, generator=generator)], -1)
    pre_squash = head.sample(outputs, generator)
    mean, log_std = head.split(outputs)
    low, high = torch.tensor([-1.0, 0.0]), torch.tensor([1.0, 4.0])
    squashed = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(mean, log_std.exp()),
        [torch.distributions.TanhTransform(), torch.distributions.AffineTransform((low + high) / 2, (high - low) / 2)])
    actions = head.to_env(pre_squash)
    assert ((actions >= low) & (actions <= high)).all()
    torch.testing.assert_close(head.log_prob(outputs, pre_squash), squashed.log_prob(actions).sum(-1),
                               rtol=1e-4, atol=1e-4)
    assert torch.equal(head.to_env(head.sample(outputs, None, greedy=True)), head.to_env(mean))


def test_a_tanh_normal_run_trains_and_plays():
    config = TrainConfig(env="tag_continuous", env_params=dict(TAG, continuous_actions=True), num_envs=4,
                         rollout_steps=6, backend="numpy", policy_head="tanh_normal", opponents={"runner": "random"})
    trainer = Trainer(config)
    assert trainer.policies.network("tagger").log_std is None, "its scale comes from the network"
    trainer.iterate()
    metrics, = trainer.read_metrics()
    assert "log_std" not in metrics and math.isfinite(metrics["approx_kl"])
    env = warpsim.make("tag_continuous", 4, backend="numpy", continuous_actions=True, **TAG)
    assert evaluate(Player(env, trainer.run_policies(), random_roles=("runner",)), episodes=4).episodes == 4


def test_a_frozen_continuous_opponent_plays_from_its_checkpoint(tmp_path):
    base: dict[str, Any] = dict(env="tag_continuous", env_params=dict(TAG, continuous_actions=True), num_envs=4, rollout_steps=6,
                iterations=1, backend="numpy")
    source = train(TrainConfig(**base), tmp_path / "source", progress=None)
    trainer = Trainer(TrainConfig(**base, opponents={"runner": f"checkpoint:{tmp_path / 'source'}"}))
    mine, theirs = trainer.policies.network("runner").log_std, source.policies.network("runner").log_std
    assert mine is not None and theirs is not None
    assert torch.equal(mine, theirs) and not mine.requires_grad
    trainer.iterate()
    assert torch.equal(mine, theirs), "frozen"


@pytest.mark.parametrize("value", [0.5, 1.5], ids=["allowed", "outside the bounds"])
def test_actions_that_require_grad_are_stepped_or_refused_as_any_others(value):
    env = warpsim.make("beacon", 2, backend="numpy", **BEACON)
    actions = torch.full((2, 3, 2), value, requires_grad=True)
    if value > 1:
        with pytest.raises(InvalidValueError, match=r"action 1\.5 of component 0 \(env 0, agent 0\) is not allowed"):
            env.step(actions)
    else:
        env.step(actions)
        assert torch.equal(env.actions, torch.full((2, 3, 2), value))
