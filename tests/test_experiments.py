"""Experiments: several runs batched in one trainer, isolated from each other, their statistics."""

import csv
import dataclasses
import json
import math
from typing import Any

import numpy as np
import pytest
import torch
from test_run_faults import cli_error, records

from warpsim.analysis import evaluate as evaluate_module
from warpsim.analysis.evaluate import evaluate_run
from warpsim.analysis.evaluate_experiment import SettingSummary, _comparisons, _verdict, evaluate_experiment
from warpsim.analysis.play import Player, evaluate
from warpsim.analysis.statistics import Estimate, aggregate, compare
from warpsim.cli import main
from warpsim.device import Placement
from warpsim.errors import DoesNotFitError, InvalidValueError
from warpsim.registry import layout
from warpsim.removed import RemovedError
from warpsim.train import TrainConfig, Trainer, checkpoint, storage
from warpsim.train.distributed import World
from warpsim.train.experiment import parse_seeds, parse_sweep, plan_runs, setting_label
from warpsim.train.loop import train, train_experiment
from warpsim.train.runs import group_by_batch

GRID: dict[str, Any] = dict(env="tag_gridworld", env_params=dict(num_taggers=2, grid_length=5, episode_length=8), num_envs=4,
            rollout_steps=8, backend="numpy", epochs=2, log_every=1)
GRID_FLAGS = ["--env", "tag_gridworld", "--set", "num_taggers=2", "--set", "grid_length=5", "--set",
              "episode_length=8", "--num-envs", "4", "--rollout-steps", "8", "--backend", "numpy", "--epochs", "2",
              "--quiet"]


def run_metrics(trainer: Trainer, iterations: int) -> list[list[dict]]:
    """Each iteration's metrics of every run of ``trainer``."""
    history = []
    for _ in range(iterations):
        trainer.iterate()
        history.append(trainer.read_metrics())
    return history


def same(a, b) -> bool:
    """Metrics equal bit for bit, NaN equal to NaN."""
    return a.keys() == b.keys() and all(x == y or (x != x and y != y) for x, y in zip(a.values(), b.values()))


# ----- runs never touch each other -------------------------------------------------------------
@pytest.mark.parametrize("change", [dict(seed=7), dict(learning_rate=3e-3), dict(lr_schedule="constant",
                                                                                  learning_rate=1e30)],
                         ids=["seed", "learning rate", "driven to NaN"])
def test_changing_one_run_leaves_every_other_run_bit_for_bit(change):
    configs = [TrainConfig(**GRID, seed=seed) for seed in range(3)]
    changed = [configs[0], dataclasses.replace(configs[1], **change), configs[2]]
    base, other = Trainer(configs), Trainer(changed)
    base_history, other_history = run_metrics(base, 3), run_metrics(other, 3)
    for mine, theirs in zip(base_history, other_history):
        assert same(mine[0], theirs[0]) and same(mine[2], theirs[2])
        assert not same(mine[1], theirs[1]), "run 1 itself changed"
    for run in (0, 2):
        base_state, other_state = base.run_state_dict(run), other.run_state_dict(run)
        assert all(torch.equal(base_state["policies"][k], other_state["policies"][k]) for k in base_state["policies"])
    if "lr_schedule" in change:
        assert other_history[-1][1]["diverged"] and not other_history[-1][0]["diverged"]


def test_a_run_of_a_batch_learns_bit_for_bit_as_it_does_alone():
    """On the CPU every operation of the batch rounds each run as alone (docs/experiments.md)."""
    configs = [TrainConfig(**GRID, seed=seed, learning_rate=rate) for seed, rate in ((0, 1e-3), (1, 2e-3), (2, 1e-3))]
    batch_history = run_metrics(Trainer(configs), 3)
    for run, config in enumerate(configs):
        alone = run_metrics(Trainer(config), 3)
        assert all(same(metrics[run], solo[0]) for metrics, solo in zip(batch_history, alone)), run


def test_runs_of_other_shapes_train_in_separate_batches_one_after_another(tmp_path, capsys):
    configs = [TrainConfig(**GRID, seed=seed, hidden_size=size) for size in (16, 32) for seed in (0, 1)]
    assert group_by_batch(configs) == [[0, 1], [2, 3]]
    assert group_by_batch([dataclasses.replace(c, learning_rate=2e-3) if i % 2 else c
                           for i, c in enumerate(configs[:2])]) == [[0, 1]], "a rate is per run"
    with pytest.raises(InvalidValueError, match="differ in a setting that shapes the batch"):
        Trainer(configs)
    assert main(["train", *GRID_FLAGS, "--iterations", "2", "--seeds", "2", "--sweep", "hidden_size=16,32",
                 "--run-dir", str(tmp_path / "e")]) == 0
    runs = sorted(path.name for path in (tmp_path / "e").iterdir() if path.is_dir())
    assert runs == ["hidden_size=16_seed=0", "hidden_size=16_seed=1", "hidden_size=32_seed=0", "hidden_size=32_seed=1"]
    for name in runs:
        assert checkpoint.load(tmp_path / "e" / name)["iteration"] == 2


def test_a_run_that_diverges_is_stopped_and_marked_and_the_others_go_on(tmp_path, capsys):
    sweep = {"learning_rate": [1e-3, 1e30]}
    base = TrainConfig(**GRID, lr_schedule="constant", iterations=4, checkpoint_every=1)
    train_experiment(base, tmp_path / "e", seeds=(0,), sweep=sweep, progress=None)
    plan = json.loads((tmp_path / "e" / "experiment.json").read_text())
    status = {run["name"]: run["diverged_at"] for run in plan["runs"]}
    assert status["learning_rate=0.001_seed=0"] is None and status["learning_rate=1e+30_seed=0"] is not None
    assert checkpoint.load(tmp_path / "e" / "learning_rate=0.001_seed=0")["iteration"] == 4
    kept = checkpoint.load(tmp_path / "e" / "learning_rate=1e+30_seed=0")
    assert kept["iteration"] < status["learning_rate=1e+30_seed=0"], "its last good checkpoint"
    assert all(torch.isfinite(value).all() for value in kept["policies"].values())
    assert main(["evaluate", str(tmp_path / "e"), "--episodes", "4", "--num-envs", "4", "--no-compare-random"]) == 0
    out = capsys.readouterr().out
    assert f"learning_rate=1e+30_seed=0  diverged by iteration {status['learning_rate=1e+30_seed=0']}" in out
    assert "learning_rate=1e+30 (0 seeds, 1 diverged)" in out
    assert main(["plot", str(tmp_path / "e"), "--baseline-episodes", "0"]) == 0
    assert (tmp_path / "e" / "learning_curve.png").stat().st_size > 0


def test_the_batch_stays_fast_for_single_runs_and_refuses_what_it_cannot_isolate():
    with pytest.raises(InvalidValueError, match="fp16.*skips every run's step"):
        Trainer([TrainConfig(**GRID, precision="fp16", seed=seed) for seed in (0, 1)])
    with pytest.raises(InvalidValueError, match="under torchrun"):
        Trainer([TrainConfig(**GRID, seed=seed) for seed in (0, 1)], World(rank=0, size=2))
    with pytest.raises(InvalidValueError, match="the very same config"):
        Trainer([TrainConfig(**GRID), TrainConfig(**GRID)])


def test_the_fit_check_counts_every_run_and_names_how_many_fit(monkeypatch):
    config = TrainConfig(**GRID)
    spec, per_env = layout(config.env, 1, **config.env_params)
    one = storage.training_bytes(config, spec, per_env)
    monkeypatch.setattr(storage, "available_bytes", lambda placement: int(3.5 * one / storage.SAFETY))
    placement = Placement("numpy", torch.device("cpu"))
    storage.check_training_fits(config, spec, per_env, placement, runs=3)
    with pytest.raises(DoesNotFitError, match="8 runs of tag_gridworld.*at most 3 of them fit at once") as error:
        storage.check_training_fits(config, spec, per_env, placement, runs=8)
    assert "\n" not in str(error.value)


# ----- the experiment's files and commands ----------------------------------------------------
def test_every_run_of_an_experiment_is_a_run_every_command_takes(tmp_path, capsys):
    experiment = tmp_path / "e"
    assert main(["train", *GRID_FLAGS, "--iterations", "2", "--seeds", "0-1", "--run-dir", str(experiment)]) == 0
    plan = json.loads((experiment / "experiment.json").read_text())
    assert [run["name"] for run in plan["runs"]] == ["seed=0", "seed=1"] and plan["seeds"] == [0, 1]
    run = experiment / "seed=1"
    alone = train(TrainConfig(**GRID, seed=1, iterations=2), tmp_path / "alone", progress=None)
    assert records(run) == records(tmp_path / "alone") and alone.iteration == 2, "seed 1 of the batch is seed 1 alone"
    assert main(["evaluate", str(run), "--episodes", "4", "--num-envs", "4"]) == 0
    assert main(["render", str(run), "--max-steps", "3"]) == 0
    assert main(["train", "--resume", "--run-dir", str(run), "--iterations", "3", "--quiet"]) == 0
    assert main(["train", *GRID_FLAGS, "--iterations", "1", "--opponent", f"runner=checkpoint:{experiment / 'seed=0'}",
                 "--run-dir", str(tmp_path / "against")]) == 0
    assert main(["train", "--resume", "--run-dir", str(experiment), "--iterations", "3", "--quiet"]) == 0
    assert checkpoint.load(experiment / "seed=0")["iteration"] == 3
    assert main(["evaluate", str(experiment), "--episodes", "4", "--num-envs", "4", "--json",
                 str(tmp_path / "e.json"), "--measure", "tags_per_episode"]) == 0
    written = json.loads((tmp_path / "e.json").read_text())
    assert written["measure"] == "tags_per_episode" and len(written["settings"]["sampled"]) == 1
    assert written["settings"]["sampled"][0]["seeds"] == [0, 1] and len(written["runs"]) == 2
    assert written["settings"].keys() == {"sampled", "greedy"} and written["comparisons"] == []
    assert written["verdict"] == "best: nothing to compare (fewer than two settings with evaluated runs)"


def test_a_config_file_holds_the_seeds_and_the_sweep(tmp_path):
    file = tmp_path / "sweep.toml"
    file.write_text('seeds = [3, 5]\n[sweep]\nentropy_coef = [0.0, 0.01]\nepisode_length = [6, 8]\n')
    assert main(["train", *GRID_FLAGS, "--iterations", "1", "--config-file", str(file), "--run-dir",
                 str(tmp_path / "e")]) == 0
    plan = json.loads((tmp_path / "e" / "experiment.json").read_text())
    assert len(plan["runs"]) == 8 and plan["seeds"] == [3, 5]
    config = json.loads((tmp_path / "e" / "entropy_coef=0.01_episode_length=6_seed=5" / "config.json").read_text())
    assert (config["entropy_coef"], config["env_params"]["episode_length"], config["seed"]) == (0.01, 6, 5)


# ----- the grammar --------------------------------------------------------------------------
def test_the_seeds_grammar():
    assert parse_seeds("3") == (0, 1, 2)
    assert parse_seeds("2-4") == (2, 3, 4)
    assert parse_seeds("3,5,9") == (3, 5, 9)
    assert parse_seeds(" 7-7 ") == (7,)


def test_the_sweep_grammar_crosses_every_value_with_every_seed():
    sweep = parse_sweep(["learning_rate=3e-4,1e-3", "entropy_coef=0,0.01", "value_clip=none,0.2"], "tag_gridworld")
    assert sweep == {"learning_rate": [3e-4, 1e-3], "entropy_coef": [0, 0.01], "value_clip": [None, 0.2]}
    runs = plan_runs(TrainConfig(**GRID), (0, 1), sweep)
    assert len(runs) == 16 and runs[0].name == "learning_rate=0.0003_entropy_coef=0_value_clip=None_seed=0"
    assert len(group_by_batch([run.config for run in runs])) == 2, "value_clip None or a number: two batches"


@pytest.mark.parametrize("flags, message", [
    (["--seeds", ""], "--seeds '' is not allowed; give a count"),
    (["--seeds", "0"], "--seeds '0': give between 1 and 4096 seeds"),
    (["--seeds", "100000000000"], "--seeds '100000000000': give between 1 and 4096 seeds"),
    (["--seeds", "99999999999999999999"], "give between 1 and 4096 seeds"),
    (["--seeds", "0,99999999999999999999"], "--seeds: seed 99999999999999999999 is not allowed; give integers in "
                                            "[0, 4294967295]"),
    (["--seeds", "2", "--sweep", "num_envs=" + "9" * 400], "num_envs=999999999999999999999999...99999999 (400 "
                                                            "characters) is not allowed"),
    (["--seeds", "2", "--sweep", "learning_rate=" + "9" * 400], "learning_rate=999999999999999999999999...99999999 "
                                                                 "(400 characters) is not allowed; give a number > 0"),
    (["--seeds", "2", "--seed", "5"], "--seed 5 and --seeds 2 both choose the seed; give the seeds with --seeds alone"),
    (["--seeds", "3,3"], "seed 3 is given twice"),
    (["--seeds", "5-2"], "the range runs backwards; write 2-5"),
    (["--seeds", "a"], "--seeds 'a' is not allowed"),
    (["--seeds", "1-100000"], "makes 100000 seeds; at most 4096"),
    (["--sweep", "lr=1,2"], "'lr' is neither a config field nor a parameter of tag_gridworld"),
    (["--sweep", "learning_rate"], "expected NAME=V1,V2"),
    (["--sweep", "learning_rate="], "an empty value"),
    (["--sweep", "learning_rate=1e-3,,2e-3"], "an empty value"),
    (["--sweep", "learning_rate=1e-3,1e-3"], "gives a value twice"),
    (["--sweep", "learning_rate=1e-3", "--sweep", "learning_rate=2e-3"], "learning_rate is swept twice"),
    (["--sweep", "seed=1,2"], "seed cannot be swept; give the seeds apart (--seeds"),
    (["--sweep", "learning_rate=fast,1e-3"], "learning_rate='fast' is not allowed"),
    (["--sweep", "grid_length=-1,5"], "grid_length"),
])
def test_each_bad_seeds_or_sweep_is_a_one_line_error_and_writes_nothing(tmp_path, capsys, flags, message):
    experiment = tmp_path / "e"
    assert message in cli_error(capsys, ["train", *GRID_FLAGS, *flags, "--run-dir", str(experiment)])
    assert not experiment.exists()


@pytest.mark.parametrize("seeds, sweep, message", [
    (5, None, r"^seeds=5 is not allowed; give a tuple of integer seeds, e\.g\. \(0, 1, 2\)$"),
    ((), None, r"^seeds holds 0 seeds; give between 1 and 4096"),
    ((0, 2**40), None, r"^seeds: seed 1099511627776 is not allowed; give integers in \[0, 4294967295\]$"),
    ((1, 1), None, r"^seeds: seed 1 is given twice"),
    ((0.5,), None, r"^seeds: seed 0\.5 is not allowed"),
    ((0,), [("learning_rate", [1e-3])], r"^sweep=\[\('learning_rate', \[0\.001\]\)\] is not allowed; give a mapping"),
    ((0,), {"env_params": [{"grid_length": 5}]}, r"^sweep: env_params cannot be swept; sweep one setting at a time"),
    ((0,), {"learning_rate": 1e-3}, r"^sweep: learning_rate = 0\.001; give a non-empty list of values$"),
])
def test_train_experiment_from_python_checks_its_seeds_and_sweep_before_writing(tmp_path, seeds, sweep, message):
    with pytest.raises(InvalidValueError, match=message):
        train_experiment(TrainConfig(**GRID), tmp_path / "e", seeds=seeds, sweep=sweep, progress=None)
    assert not (tmp_path / "e").exists()


def test_numpy_seeds_from_python_are_written_as_integers(tmp_path):
    train_experiment(TrainConfig(**GRID, iterations=1), tmp_path / "e", seeds=(np.int64(3), np.int32(4)),
                     sweep={"learning_rate": (1e-3,)}, progress=None)
    plan = json.loads((tmp_path / "e" / "experiment.json").read_text())
    assert plan["seeds"] == [3, 4] and plan["sweep"] == {"learning_rate": [1e-3]}


@pytest.mark.parametrize("contents, message", [
    ("seeds = 0\n", "{file}: seeds '0': give between 1 and 4096 seeds"),
    ("seeds = [1, 1]\n", "{file}: seeds: seed 1 is given twice"),
    ("seeds = true\n", "{file}: seeds = True; give a count"),
    ("seeds = 2\n[sweep]\nlr = [1, 2]\n", "{file}: [sweep]: 'lr' is neither a config field"),
])
def test_a_config_file_error_names_the_file_and_its_key(tmp_path, capsys, contents, message):
    config_file = tmp_path / "plan.toml"
    config_file.write_text(contents)
    error = cli_error(capsys, ["train", *GRID_FLAGS, "--config-file", str(config_file), "--run-dir",
                               str(tmp_path / "e")])
    assert message.format(file=config_file) in error and "--seeds" not in error and "--sweep" not in error


def test_measure_names_are_checked_before_any_run_is_played(tmp_path, capsys, monkeypatch):
    assert main(["train", *GRID_FLAGS, "--iterations", "1", "--seeds", "2", "--run-dir", str(tmp_path / "e")]) == 0
    played = []
    monkeypatch.setattr("warpsim.analysis.evaluate_experiment.evaluate_runs", lambda *args, **kwargs: played.append(1))
    error = cli_error(capsys, ["evaluate", str(tmp_path / "e"), "--measure", "nope", "--backend", "numpy"])
    assert "--measure 'nope' is not a per-episode figure of tag_gridworld; choose one of episode_length" in error
    assert not played


def test_an_experiment_directory_is_never_trained_over(tmp_path, capsys):
    assert main(["train", *GRID_FLAGS, "--iterations", "1", "--seeds", "2", "--run-dir", str(tmp_path / "e")]) == 0
    assert "already holds an experiment; continue it with --resume" in cli_error(
        capsys, ["train", *GRID_FLAGS, "--seeds", "2", "--run-dir", str(tmp_path / "e")])
    assert "leave out --seeds and --sweep" in cli_error(
        capsys, ["train", "--resume", "--seeds", "2", "--run-dir", str(tmp_path / "e")])
    assert "is not an experiment" in cli_error(
        capsys, ["evaluate", str(tmp_path / "e" / "seed=0"), "--measure", "tags_per_episode"])
    assert "holds an experiment, not a run" in cli_error(capsys, ["train", *GRID_FLAGS, "--run-dir", str(tmp_path / "e")])
    assert f"is an experiment: render one of its runs, e.g. {tmp_path / 'e' / 'seed=0'}" in cli_error(
        capsys, ["render", str(tmp_path / "e")])


def test_an_experiment_stopped_before_some_runs_started_evaluates_the_others(tmp_path, capsys):
    """Two batches (two network widths); the experiment stopped after the first."""
    train_experiment(TrainConfig(**GRID, iterations=1), tmp_path / "e", seeds=(0, 1), sweep={"hidden_size": [16, 32]},
                     progress=None)
    for name in ("hidden_size=32_seed=0", "hidden_size=32_seed=1"):
        for path in sorted((tmp_path / "e" / name).rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        (tmp_path / "e" / name).rmdir()
    assert main(["evaluate", str(tmp_path / "e"), "--episodes", "4", "--num-envs", "4", "--no-compare-random"]) == 0
    out = capsys.readouterr().out
    assert "hidden_size=32_seed=1  not trained yet (continue the experiment with warpsim train --resume)" in out
    assert "hidden_size=32 (0 seeds, 2 not trained yet)" in out and "hidden_size=16 (2 seeds)" in out
    assert main(["train", "--resume", "--run-dir", str(tmp_path / "e"), "--quiet"]) == 0
    assert checkpoint.load(tmp_path / "e" / "hidden_size=32_seed=1")["iteration"] == 1


# ----- the statistics ---------------------------------------------------------------------------
def test_the_aggregates_of_a_known_small_sample():
    """IQM, mean and median of eight scores; rliable's IQM cuts a quarter at each end."""
    estimates = aggregate([0, 0, 1, 1, 1, 1, 100, 100])
    assert estimates["iqm"].value == 1.0 and estimates["median"].value == 1.0 and estimates["mean"].value == 25.5
    assert aggregate(list(range(1, 9)))["iqm"].value == 4.5  # the mean of 3, 4, 5, 6
    for estimate in estimates.values():
        assert 0 <= estimate.low <= estimate.value <= estimate.high <= 100
    assert aggregate([2.0, 2.0, 2.0])["mean"].low == 2.0 == aggregate([2.0, 2.0, 2.0])["mean"].high
    lonely = aggregate([3.0, math.nan])["iqm"]
    assert lonely.value == 3.0 and math.isnan(lonely.low), "one score: no interval"
    assert aggregate([1.0, 5.0, 2.0])["mean"] == aggregate([1.0, 5.0, 2.0])["mean"], "seeded: the same every time"


def test_the_bootstrap_interval_narrows_as_seeds_are_added():
    rng = np.random.default_rng(3)
    widths = []
    for count in (5, 80):
        estimate = aggregate(rng.normal(10.0, 2.0, count))["mean"]
        widths.append(estimate.high - estimate.low)
    assert widths[1] < widths[0] / 2


@pytest.mark.gpu
def test_on_the_gpu_a_batched_run_starts_as_it_does_alone():
    """cuBLAS may pick another kernel for a batch of R matmuls than for one, and round otherwise: the
    first rollout's actions are the same but where a rounding tips a sample (rare), its update's
    metrics agree to float tolerance."""
    settings: dict[str, Any] = dict(env="tag_continuous", num_envs=16, rollout_steps=8, backend="cuda", epochs=2, minibatches=2,
                    env_params=dict(num_taggers=2, num_runners=6, episode_length=5))
    configs = [TrainConfig(**settings, seed=seed) for seed in range(4)]
    batch, alone = Trainer(configs), Trainer(configs[2])
    batch.iterate()
    alone.iterate()
    for mine, theirs in zip(batch.storage.values(), alone.storage.values()):
        assert (mine.actions[2] == theirs.actions[0]).float().mean() > 0.99
    batched, single = batch.read_metrics()[2], alone.read_metrics()[0]
    for name in ("approx_kl", "value_loss", "policy_loss", "entropy", "explained_variance", "episode_length"):
        assert batched[name] == pytest.approx(single[name], rel=1e-3, abs=1e-5), name


def test_the_trainers_renamed_single_run_api_names_its_replacements():
    trainer = Trainer(TrainConfig(**GRID))
    # The stubs are what is under test: mypy flags every use of them (tests/test_removed.py).
    for call, replacement in [(lambda: trainer.state_dict(), r"trainer.run_state_dict\(run\)"),  # type: ignore[deprecated]
                              (lambda: trainer.load_state_dict({}),  # type: ignore[deprecated]
                               r"trainer.load_run_state_dict\(run, checkpoint\)"),
                              (lambda: trainer.collect(), r"trainer.collector.collect\(\)"),  # type: ignore[deprecated]
                              (lambda: trainer.generator, r"trainer.generators\[run\]")]:  # type: ignore[deprecated]
        with pytest.raises(RemovedError, match=rf"was removed in warpsim 0.2.0: .*{replacement}") as error:
            call()
        assert "\n" not in str(error.value)
    removed_name = "generator"  # hasattr reads the stub, as a user's hasattr does: it says no
    assert not hasattr(trainer, removed_name) and len(trainer.generators) == 1


# ----- which setting is better -------------------------------------------------------------------
def test_the_comparison_of_two_settings_is_rliables():
    """P(X > Y) over every pair of runs, ties counting half; the IQMs' difference; both with intervals."""
    compared = compare([1.0, 2.0, 3.0, 4.0], [0.5, 2.0, 2.5, 10.0])
    pairs = sum(x > y for x in [1, 2, 3, 4] for y in [0.5, 2, 2.5, 10]) + 0.5 * 1  # one tie (2 = 2)
    assert compared["probability_of_improvement"].value == pytest.approx(pairs / 16)
    assert compared["iqm_difference"].value == pytest.approx(2.5 - 2.25)
    for estimate in compared.values():
        assert estimate.low <= estimate.value <= estimate.high
    assert compare([1.0, 1.0], [1.0, 1.0])["probability_of_improvement"] == Estimate(0.5, 0.5, 0.5)


def summary(label_value: float, scores: list[float], lower_is_better: bool = False) -> SettingSummary:
    return SettingSummary({"entropy_coef": label_value}, list(range(len(scores))), scores, 0, 0, aggregate(scores),
                          lower_is_better)


@pytest.mark.parametrize("lower_is_better", [False, True])
def test_the_verdict_names_the_best_setting_only_when_its_lead_is_clear(lower_is_better):
    good, bad = [10.0, 11.0, 12.0, 13.0, 14.0], [1.0, 2.0, 3.0, 4.0, 5.0]
    if lower_is_better:
        good, bad = bad, good
    clear = sorted([summary(0.01, good, lower_is_better), summary(0.0, bad, lower_is_better)],
                   key=lambda s: (1 if lower_is_better else -1) * s.estimates["iqm"].value)
    comparisons = _comparisons(clear, None)
    assert [setting_label(c.first) for c in comparisons] == ["entropy_coef=0.01"]
    assert comparisons[0].estimates["iqm_improvement"].value == pytest.approx(9.0)
    assert comparisons[0].estimates["probability_of_improvement"].value == 1.0
    assert _verdict(clear, comparisons).startswith("best: entropy_coef=0.01, its IQM ahead of every other")
    close = [summary(0.01, [2.0, 3.0, 4.0], lower_is_better), summary(0.0, [1.0, 3.5, 3.9], lower_is_better)]
    assert _verdict(close, _comparisons(close, None)).startswith("best: none is distinguishable")


def test_an_experiment_is_compared_against_a_baseline_and_written_as_a_table(tmp_path, capsys):
    experiment = tmp_path / "e"
    assert main(["train", *GRID_FLAGS, "--iterations", "1", "--seeds", "2", "--sweep", "entropy_coef=0,0.01",
                 "--run-dir", str(experiment)]) == 0
    table = tmp_path / "e.csv"
    assert main(["evaluate", str(experiment), "--episodes", "4", "--num-envs", "4", "--baseline", "entropy_coef=0",
                 "--csv", str(table), "--measure", "episode_length", "--lower-is-better"]) == 0
    out = capsys.readouterr().out
    assert "measure episode_length in sampled play (lower is better)" in out
    assert "per setting, greedy play, over its seeds" in out, "the greedy aggregates too"
    assert "  entropy_coef=0.01 over entropy_coef=0: IQM ahead by " in out and "; P(better) " in out
    assert out.splitlines()[-2].startswith("best: ")
    rows = list(csv.reader(table.read_text().splitlines()))
    assert rows[0] == ["kind", "setting", "seed", "play", "figure", "aggregate", "value", "low", "high"]
    figures = {row[4] for row in rows[1:]}
    assert {"episode_length", "tags_per_episode", "return_tagger"} <= figures, "every measure"
    assert {(row[0], row[3]) for row in rows[1:]} == {(kind, play) for kind in ("run", "setting")
                                                       for play in ("sampled", "greedy")}
    assert "--baseline 'nope' is not a setting of" in cli_error(
        capsys, ["evaluate", str(experiment), "--baseline", "nope", "--backend", "numpy"])
    assert "--csv compares an experiment's runs" in cli_error(
        capsys, ["evaluate", str(experiment / "seed=0"), "--csv", str(tmp_path / "x.csv")])


def test_an_experiment_plays_its_runs_side_by_side_random_play_once_and_each_as_alone(tmp_path, monkeypatch):
    """The runs share their environment and networks' shapes: their plays play side by side in one
    environment, random play once, and every figure of every run equals its evaluation alone, and each
    play's equals the play in an environment of its own."""
    experiment = tmp_path / "e"
    assert main(["train", *GRID_FLAGS, "--iterations", "1", "--seeds", "3", "--run-dir", str(experiment)]) == 0
    batches = []
    original = evaluate_module.evaluate_plays

    def counted(player, episodes, *args):
        batches.append([play.policies is None for play in player.plays])
        return original(player, episodes, *args)

    monkeypatch.setattr(evaluate_module, "evaluate_plays", counted)
    together = evaluate_experiment(experiment, 8, num_envs=4, backend="numpy")
    monkeypatch.undo()
    assert batches == [[True] + [False] * 6], "one environment: random play, then each run sampled and greedy"
    for run in together.runs:
        alone = evaluate_run(experiment / run["name"], 8, num_envs=4, backend="numpy")
        assert run["evaluation"].record()["plays"] == alone.record()["plays"]
        assert run["evaluation"].record()["random"] == alone.record()["random"]
    for play in ("sampled", "greedy"):  # in an environment of its own, made as evaluate makes it
        env, policies, config = evaluate_module.load_run(experiment / "seed=2", 4, backend="numpy")
        own = evaluate(Player(env, policies, greedy=play == "greedy", seed=1,
                              stack_observations=config.stack_observations), 8)
        batched = together.runs[2]["evaluation"].plays[play]
        assert dataclasses.replace(batched, baseline=None).record() == own.record()
    random = evaluate_module.random_play(config, 8, num_envs=4, backend="numpy")
    assert together.runs[0]["evaluation"].random.record() == random.record()


def test_a_baseline_that_ranks_first_is_named_best_only_when_its_lead_is_clear():
    """Against a baseline the comparisons hold no lead of the baseline itself: the verdict measures them."""
    best, close = summary(0.0, [10.0, 11.0, 12.0, 13.0, 14.0]), summary(0.01, [9.0, 12.5, 11.5, 13.5, 10.0])
    comparisons = _comparisons([best, close], "entropy_coef=0.0")
    assert [setting_label(c.first) for c in comparisons] == ["entropy_coef=0.01"]
    assert _verdict([best, close], comparisons).startswith("best: none is distinguishable: entropy_coef=0.0 ranks")
