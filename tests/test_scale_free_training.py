"""The trainer's scale-free defaults: separate actor and critic, value normalisation, the
KL-adapted learning rate, minibatches by size, explained variance and staggered starts."""

import json
import math
from typing import Any

import numpy as np
import pytest
import torch

from warpsim.cli import main
from warpsim.errors import InvalidValueError, RunFileError
from warpsim.train import TrainConfig, Trainer, checkpoint
from warpsim.train.action_heads import CategoricalHeads
from warpsim.train.config import build_saved_config
from warpsim.train.loop import train
from warpsim.train.policy import ActorCritic
from warpsim.train.ppo import explained_variance
from warpsim.train.schedule import KL_FACTOR, LearningRates
from warpsim.train.value_norm import MIN_VARIANCE, ValueNormalizer

GRID: dict[str, Any] = dict(env="tag_gridworld", env_params=dict(num_taggers=2, grid_length=5, episode_length=8),
            num_envs=4, rollout_steps=8, backend="numpy")
TAG: dict[str, Any] = dict(env="tag_continuous", env_params=dict(num_taggers=1, num_runners=3, episode_length=10),
           num_envs=3, rollout_steps=6, backend="numpy")


# ----- value normalisation -------------------------------------------------------------
def test_value_normalizer_holds_the_mean_and_variance_of_every_return_seen():
    generator = np.random.default_rng(0)
    sizes_and_scales = [((7,), 1.0), ((300,), 2.0), ((1, 40), 0.5)]
    batches = [generator.normal(5.0, 3.0, size) * scale for size, scale in sizes_and_scales]
    normalizer = ValueNormalizer()
    for batch in batches:
        normalizer.update(torch.tensor(batch, dtype=torch.float32))
    seen = np.concatenate([np.asarray(b, np.float32).astype(np.float64).ravel() for b in batches])
    assert normalizer.count.item() == seen.size
    assert normalizer.mean.item() == pytest.approx(seen.mean(), rel=1e-12)
    assert normalizer.variance.item() == pytest.approx(seen.var(), rel=1e-10)
    returns = torch.tensor([seen.mean(), seen.mean() + seen.std()], dtype=torch.float32)
    assert torch.allclose(normalizer.normalize(returns), torch.tensor([0.0, 1.0]), atol=1e-6)
    assert torch.allclose(normalizer.denormalize(normalizer.normalize(returns)), returns, rtol=1e-6)


def test_value_normalizer_stays_finite_when_every_return_is_the_same():
    normalizer = ValueNormalizer()
    normalizer.update(torch.zeros(50))
    assert normalizer.std().item() == pytest.approx(math.sqrt(MIN_VARIANCE))
    assert torch.equal(normalizer.normalize(torch.tensor([0.0, 0.01])), torch.tensor([0.0, 1.0]))


def test_distributed_processes_merge_the_same_batch():
    sums = []
    normalizer = ValueNormalizer()
    normalizer.update(torch.tensor([1.0, 3.0]), all_reduce=lambda moments: sums.append(moments.clone()))
    assert torch.equal(sums[0], torch.tensor([2.0, 4.0, 10.0], dtype=torch.float64))


def test_the_critic_learns_normalised_returns_and_reports_them_in_return_units():
    trainer = Trainer(TrainConfig(**{**GRID, "env_params": dict(GRID["env_params"], tag_reward_for_tagger=100.0)}))
    trainer.iterate()
    network = trainer.policies.network("tagger")
    normalizer = network.value_normalizer
    assert normalizer is not None and normalizer.count.item() == trainer.storage["tagger"].rewards.numel()
    _, raw = network(trainer.storage["tagger"].observations[:, 0].flatten(1, 2))  # run 0, step 0
    assert torch.allclose(network.returns_scale(raw), raw * normalizer.std().float() + normalizer.mean.float(),
                          rtol=1e-5, atol=1e-5)
    plain = Trainer(TrainConfig(**GRID, value_normalization=False))
    assert plain.policies.network("tagger").value_normalizer is None


# ----- actor and critic -----------------------------------------------------------------
@pytest.mark.parametrize("shared", [False, True])
def test_the_value_loss_reaches_the_policy_only_through_a_shared_trunk(shared):
    network = ActorCritic(6, CategoricalHeads((3, 4)), 8, 2, shared_trunk=shared)
    _, value = network(torch.randn(5, 6))
    value.square().sum().backward()
    policy_side = [p.grad for p in [*network.trunk.parameters(), *network.policy_head.parameters()]]
    reached = any(grad is not None and grad.abs().sum() > 0 for grad in policy_side)
    assert reached == shared
    assert len(network.parameter_groups()) == (1 if shared else 2)
    grouped = [id(p) for group in network.parameter_groups() for p in group]
    assert sorted(grouped) == sorted(id(p) for p in network.parameters()), "every parameter in one group"


def test_a_resumed_run_continues_the_statistics_rates_and_stagger_exactly(tmp_path):
    config = TrainConfig(**TAG, iterations=4, checkpoint_every=100, log_every=1, stagger_steps=7, epochs=2)
    stopped = train(config, tmp_path / "stopped", stop_after=2, progress=None)
    resumed = train(None, tmp_path / "stopped", resume=True, progress=None)
    straight = train(config, tmp_path / "straight", progress=None)
    for (name, a), b in zip(resumed.policies.state_dict().items(), straight.policies.state_dict().values()):
        assert torch.equal(a, b), name
    assert any("value_normalizer" in name for name in straight.policies.state_dict())
    assert torch.equal(resumed.learner.learning_rates.values(), straight.learner.learning_rates.values())
    assert not torch.equal(stopped.learner.learning_rates.values(), straight.learner.learning_rates.values()), \
        "the rates moved"
    for index, group in enumerate(resumed.learner.optimizer.param_groups):
        assert group["lr"].data_ptr() == resumed.learner.learning_rates.rates[:, index].data_ptr(), \
            "the optimizer reads the schedule's own tensors after a resume"
    metrics = [json.loads(line) for line in (tmp_path / "straight" / "metrics.jsonl").read_text().splitlines()]
    assert all(-10 < m["explained_variance"] <= 1 for m in metrics)


# ----- the learning-rate schedule -------------------------------------------------------
def rates_after(kls, **settings):
    config = TrainConfig(**{"learning_rate": 1e-3, "target_kl": 0.01, "min_learning_rate": 1e-4,
                            "max_learning_rate": 2e-3, **settings})
    rates = LearningRates([config], 2, torch.device("cpu"))
    for kl in kls:
        rates.end_epoch(torch.tensor([kl]))
    return rates.values()[0].tolist()


def test_the_kl_schedule_lowers_a_rate_that_overshoots_and_raises_one_that_undershoots():
    up, down = rates_after([[0.001, 0.05]])
    assert up == pytest.approx(1e-3 * KL_FACTOR) and down == pytest.approx(1e-3 / KL_FACTOR)
    assert rates_after([[0.006, 0.019]]) == pytest.approx([1e-3, 1e-3]), "within [target/2, 2 target]: kept"


def test_the_kl_schedule_stays_within_its_bounds():
    assert rates_after([[0.0, 1.0]] * 20) == pytest.approx([2e-3, 1e-4])


def test_the_linear_schedule_falls_to_its_floor_at_the_last_iteration_and_the_others_keep_their_rate():
    config = TrainConfig(learning_rate=1e-3, lr_schedule="linear", min_learning_rate=1e-4, iterations=10)
    rates = LearningRates([config], 1, torch.device("cpu"))
    rates.start_iteration(0)
    assert rates.values().item() == pytest.approx(1e-3)
    rates.start_iteration(10)
    assert rates.values().item() == pytest.approx(1e-4)
    assert rates_after([[0.0, 1.0]], lr_schedule="constant") == pytest.approx([1e-3, 1e-3])


def test_each_learning_role_has_its_rate_in_its_own_optimizer_group():
    trainer = Trainer(TrainConfig(**TAG))
    assert len(trainer.learner.optimizer.param_groups) == 2
    assert [group["lr"].data_ptr() for group in trainer.learner.optimizer.param_groups] == [
        trainer.learner.learning_rates.rates[:, index].data_ptr() for index in range(2)]
    trainer.iterate()
    assert (trainer.learner.learning_rates.values() != 1e-3).any(), "the measured KL moved the rates"


@pytest.mark.parametrize("settings, message", [
    (dict(lr_schedule="cosine"), "lr_schedule='cosine'.*kl, linear, constant"),
    (dict(target_kl=0.0), "target_kl=0.0"),
    (dict(min_learning_rate=0.0), "min_learning_rate=0.0.*> 0"),
    (dict(min_learning_rate=0.01), "min_learning_rate=0.01.*at most learning_rate"),
    (dict(max_learning_rate=1e-4), "max_learning_rate=0.0001.*at least learning_rate"),
    (dict(minibatch_size=-1), "minibatch_size=-1"),
    (dict(stagger_steps=1.5), "stagger_steps=1.5"),
    (dict(shared_trunk="no"), "shared_trunk='no'"),
    (dict(value_normalization=1), "value_normalization=1"),
])
def test_bad_values_of_the_new_settings_are_one_line_errors(settings, message):
    with pytest.raises(InvalidValueError, match=message) as error:
        TrainConfig(**settings)
    assert "\n" not in str(error.value)


# ----- minibatches, explained variance, staggered starts -------------------------------
def test_minibatches_follow_the_size_when_a_rollout_is_large():
    assert TrainConfig(minibatches=4, minibatch_size=1000).minibatch_count(2000) == 4
    assert TrainConfig(minibatches=4, minibatch_size=1000).minibatch_count(10_001) == 11
    assert TrainConfig(minibatches=4, minibatch_size=0).minibatch_count(10**9) == 4
    trainer = Trainer(TrainConfig(**TAG, minibatches=2, minibatch_size=10))  # 18 tagger, 54 runner samples
    assert trainer.minibatches == 6 and trainer.learner.update_stats.shape[1] == 4 * 6


def test_explained_variance():
    returns = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert explained_variance(returns, returns).item() == 1.0
    assert explained_variance(torch.full((4,), 2.5), returns).item() == 0.0
    assert explained_variance(returns.flip(0), returns).item() == -3.0
    assert math.isnan(explained_variance(returns, torch.ones(4)).item())


def test_staggered_starts_spread_the_environments_over_an_episode_and_count_from_each_reset():
    settings = {**GRID, "env_params": dict(GRID["env_params"], episode_length=40), "num_envs": 16}
    together = Trainer(TrainConfig(**settings))
    assert together.env.state.t.unique().numel() == 1
    staggered = Trainer(TrainConfig(**settings, stagger_steps=40))
    assert staggered.env.state.t.unique().numel() >= 8
    assert torch.equal(staggered.stats[0].length, staggered.env.state.t.float()), \
        "episode lengths count from the reset"
    assert staggered.env_steps == 0 and staggered.stats[0].read()["episodes"] == 0


# ----- runs saved before these settings -------------------------------------------------
def test_a_config_saved_before_the_new_settings_keeps_what_it_was_trained_with():
    earlier = TrainConfig(**GRID).to_dict()
    for name in ("lr_schedule", "target_kl", "min_learning_rate", "max_learning_rate", "minibatch_size",
                 "shared_trunk", "value_normalization", "stagger_steps"):
        del earlier[name]
    config = build_saved_config({**earlier, "anneal_lr": False})
    assert (config.lr_schedule, config.shared_trunk, config.value_normalization, config.minibatch_size) == (
        "constant", True, False, 0)
    assert build_saved_config({**earlier, "anneal_lr": True}).lr_schedule == "linear"


def test_an_earlier_checkpoint_evaluates_but_does_not_resume(tmp_path):
    train(TrainConfig(**GRID, iterations=1), tmp_path / "run", progress=None)
    saved = checkpoint.load(tmp_path / "run", needs=checkpoint.RESUME_KEYS)
    del saved["learning_rates"]
    with pytest.raises(RunFileError, match="earlier warpsim"):
        Trainer(build_saved_config(saved["config"])).load_run_state_dict(0, saved)


@pytest.mark.parametrize("flags", [["--lr-schedule", "cosine"], ["--target-kl", "-1"], ["--minibatch-size", "-5"],
                                   ["--stagger-steps", "-1"], ["--set", "observe_own_state=2"],
                                   ["--config", "grid-small", "--set", "closing_reward_for_tagger=-1"]])
def test_bad_new_options_on_the_command_line_are_one_line_errors_and_write_nothing(tmp_path, capsys, flags):
    code = main(["train", *flags, "--run-dir", str(tmp_path / "run"), "--backend", "numpy", "--quiet"])
    error = capsys.readouterr().err
    assert code == 2 and error.count("\n") == 1, error
    assert not (tmp_path / "run").exists()
