"""The sim-tier benchmark harness: its record, its JSON file and its command line."""

import json

import pytest

from warpsim import bench
from warpsim.cli import main

TINY = bench.BenchConfig("tag_continuous", 4, dict(num_taggers=2, num_runners=6, use_full_observation=False,
                                                   num_other_agents_observed=3))
FIELDS = {"date", "tier", "device", "backend", "precision", "env", "num_envs", "num_agents", "observation",
          "thread_mapping", "params", "versions", "warmup_steps", "repeats", "steps_per_repeat",
          "startup_seconds", "env_steps_per_second", "agent_steps_per_second"}


def test_run_sim_records_what_benchmarks_md_asks_for():
    messages = []
    record = bench.run_sim(TINY, backend="numpy", steps=3, repeats=2, warmup_steps=1, progress=messages.append)
    assert FIELDS <= set(record)
    assert (record["num_envs"], record["num_agents"], record["observation"]) == (4, 8, "partial K=3")
    assert record["backend"] == "numpy" and record["precision"] == "fp32"
    assert record["versions"]["torch"] and record["versions"]["numba"]
    agent, env = record["agent_steps_per_second"], record["env_steps_per_second"]
    assert agent["min"] <= agent["median"] <= agent["max"]
    assert agent["median"] == pytest.approx(env["median"] * 8)
    assert len(messages) == 2


def test_results_are_appended_to_one_file_per_device(tmp_path):
    record = bench.run_sim(TINY, backend="numpy", steps=2, repeats=1, warmup_steps=1)
    first = bench.append_result(record, tmp_path)
    second = bench.append_result(record, tmp_path)
    assert first == second and first.name.startswith("cpu-")
    assert len(json.loads(first.read_text())) == 2


def test_named_configs_follow_benchmarks_md():
    headline, train = bench.NAMED_CONFIGS["headline"], bench.NAMED_CONFIGS["train-ref"]
    assert headline.num_envs == 2000 and headline.params["num_taggers"] + headline.params["num_runners"] == 1000
    assert train.num_envs == 2000 and train.params["num_taggers"] + train.params["num_runners"] == 110
    for config in (headline, train):
        assert config.params["num_other_agents_observed"] == 10 and not config.params["use_full_observation"]
    grid = bench.NAMED_CONFIGS["grid"]
    assert (grid.env, grid.num_envs, grid.params["num_taggers"] + 1) == ("tag_gridworld", 2000, 5)
    assert grid.params["use_full_observation"]


def test_grid_config_runs_on_the_numpy_backend():
    config = bench.BenchConfig("tag_gridworld", 8, bench.NAMED_CONFIGS["grid"].params)
    record = bench.run_sim(config, backend="numpy", steps=2, repeats=1, warmup_steps=1)
    assert (record["env"], record["num_agents"], record["observation"]) == ("tag_gridworld", 5, "full")


def test_command_line_runs_and_saves(tmp_path, capsys):
    code = main(["bench", "--config", "train-ref", "--num-envs", "2", "--backend", "numpy", "--steps", "2",
                 "--repeats", "1", "--warmup", "1", "--set", "num_runners=20", "--results-dir", str(tmp_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "E=2 N=30 partial K=10 on numpy" in out and "agent-steps/s" in out
    (saved,) = tmp_path.glob("*.json")
    assert json.loads(saved.read_text())[0]["params"]["num_runners"] == 20


@pytest.mark.parametrize("argv, message", [
    (["--set", "num_runerz=3"], "NAME one of"),
    (["--set", "num_runners=abc"], "is not a number"),
    (["--steps", "0"], "steps=0 is not allowed"),
    (["--backend", "cuda"], "backend='cuda'"),
])
def test_command_line_errors_are_clear(argv, message, capsys):
    assert main(["bench", "--num-envs", "2", "--no-save", *argv]) == 2
    assert message in capsys.readouterr().err


def test_partial_gridworld_is_recorded_as_partial():
    config = bench.BenchConfig("tag_gridworld", 2, dict(num_taggers=2, use_full_observation=False))
    assert bench.run_sim(config, backend="numpy", steps=1, repeats=1, warmup_steps=1)["observation"] == "partial"
