"""The sim-tier benchmark harness: its record, its JSON file, its sweeps, its floor and its command line."""

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from warpsim import EnvSpec, Environment, StateArray, make
from warpsim.bench import floor, runner
from warpsim.bench.sweeps import NAMED_SWEEPS, run_sweep
from warpsim.cli import main
from warpsim.configs import NAMED_CONFIGS, BenchConfig
from warpsim.envs.tag_continuous.params import TagContinuousParams
from warpsim.envs.template import Beacon
from warpsim.envs.template.params import BeaconParams
from warpsim.source_commit import source_commit

TINY = BenchConfig("tag_continuous", 4, dict(num_taggers=2, num_runners=6, use_full_observation=False,
                                             num_other_agents_observed=3))
FIELDS = {"date", "tier", "device", "backend", "precision", "env", "num_envs", "num_agents", "observation",
          "thread_mapping", "params", "versions", "warmup_steps", "repeats", "steps_per_repeat",
          "startup_seconds", "env_steps_per_second", "agent_steps_per_second", "tool", "config",
          "requested_num_envs", "max_seconds", "floor", "launches", "host_us_per_step", "warpsim_commit"}
FLOOR_FIELDS = {"bytes_per_env_step", "distance_evaluations_per_env_step", "flops_per_env_step",
                "copy_bandwidth_gb_per_s", "copy_method", "fp32_gflop_per_s", "fp32_method",
                "memory_floor_seconds_per_env_step", "compute_floor_seconds_per_env_step",
                "run_seconds_per_env_step", "fraction_of_memory_floor"}


def test_run_sim_records_what_benchmarks_md_asks_for():
    messages: list[str] = []
    record = runner.run_sim(TINY, backend="numpy", steps=3, repeats=2, warmup_steps=1, progress=messages.append)
    assert FIELDS <= set(record) and FLOOR_FIELDS <= set(record["floor"])
    assert (record["num_envs"], record["num_agents"], record["observation"]) == (4, 8, "partial K=3")
    assert (record["tool"], record["config"], record["requested_num_envs"]) == ("warpsim", None, 4)
    assert record["backend"] == "numpy" and record["precision"] == "fp32"
    versions = record["versions"]
    assert versions["torch"] == torch.__version__ and versions["numba"] and versions["numba-cuda"]
    assert versions["cuda_driver"] is None, "no GPU here: no driver to name"
    assert record["warpsim_commit"] == source_commit()
    agent, env = record["agent_steps_per_second"], record["env_steps_per_second"]
    assert agent["min"] <= agent["median"] <= agent["max"]
    assert agent["median"] == pytest.approx(env["median"] * 8)
    assert len(messages) == 2


@pytest.mark.gpu
def test_a_gpu_record_names_the_cuda_driver():
    record = runner.run_sim(TINY, backend="cuda", steps=2, repeats=1, warmup_steps=1)
    assert re.fullmatch(r"\d+\.\d+", record["versions"]["cuda_driver"])


def test_results_are_appended_to_one_file_per_device(tmp_path):
    record = runner.run_sim(TINY, backend="numpy", steps=2, repeats=1, warmup_steps=1)
    first = runner.append_result(record, tmp_path)
    second = runner.append_result(record, tmp_path)
    assert first == second and first.name.startswith("cpu-")
    assert len(json.loads(first.read_text())) == 2


def test_named_configs_follow_benchmarks_md():
    headline, train = NAMED_CONFIGS["headline"], NAMED_CONFIGS["train-ref"]
    assert headline.num_envs == 2000 and headline.params["num_taggers"] + headline.params["num_runners"] == 1000
    assert train.num_envs == 2000 and train.params["num_taggers"] + train.params["num_runners"] == 110
    for config in (headline, train):
        assert config.params["num_other_agents_observed"] == 10 and not config.params["use_full_observation"]
    grid = NAMED_CONFIGS["grid"]
    assert (grid.env, grid.num_envs, grid.params["num_taggers"] + 1) == ("tag_gridworld", 2000, 5)
    assert grid.params["use_full_observation"]


def test_grid_config_runs_on_the_numpy_backend():
    config = BenchConfig("tag_gridworld", 8, NAMED_CONFIGS["grid"].params)
    record = runner.run_sim(config, backend="numpy", steps=2, repeats=1, warmup_steps=1)
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
    (["--backend", "cuda"], "--backend cuda runs the kernels on the CUDA simulator here"),
])
def test_command_line_errors_are_clear(argv, message, capsys):
    assert main(["bench", "--num-envs", "2", *argv]) == 2
    assert message in capsys.readouterr().err


def test_partial_gridworld_is_recorded_as_partial():
    config = BenchConfig("tag_gridworld", 2, dict(num_taggers=2, use_full_observation=False))
    assert runner.run_sim(config, backend="numpy", steps=1, repeats=1, warmup_steps=1)["observation"] == "partial"


# ----- sweeps ---------------------------------------------------------------------
def test_sweeps_follow_benchmarks_md():
    sweep_e, sweep_n = NAMED_SWEEPS["sweep-E"], NAMED_SWEEPS["sweep-N"]
    assert sweep_e.values[0] == 1 and sweep_e.values[-1] == 16384
    assert all(later in (4 * earlier, 2 * earlier) for earlier, later in zip(sweep_e.values, sweep_e.values[1:]))
    for value in sweep_e.values:
        point = sweep_e.point(value)
        assert (point.env, point.num_envs, point.name) == ("tag_continuous", value, "sweep-E")
        assert point.params == NAMED_CONFIGS["train-ref"].params  # 10 + 100, partial K=10, training rules
    assert sweep_n.values[0] == 10 and sweep_n.values[-1] == 4096 and any(1024 < n < 4096 for n in sweep_n.values)
    for value in sweep_n.values:
        point = sweep_n.point(value)
        params = TagContinuousParams(**point.params)  # every point is a valid environment
        assert (point.env, point.num_envs, point.name, params.num_agents) == ("tag_continuous", 256, "sweep-N", value)
        assert params.num_taggers == max(1, value // 20) and not params.use_full_observation
        assert params.num_other_agents_observed == min(10, value - 1)


@pytest.mark.parametrize("config, extra, sizes", [
    ("sweep-E", ["--values", "1,2"], [(1, 110), (2, 110)]),
    ("sweep-N", ["--values", "10,21", "--num-envs", "2"], [(2, 10), (2, 21)]),
])
def test_a_sweep_from_the_command_line_appends_a_record_per_point(config, extra, sizes, tmp_path, capsys):
    code = main(["bench", "--config", config, *extra, "--backend", "numpy", "--steps", "2", "--repeats", "2",
                 "--warmup", "1", "--results-dir", str(tmp_path)])
    assert code == 0
    (saved,) = tmp_path.glob("*.json")
    records = json.loads(saved.read_text())
    assert [(r["num_envs"], r["num_agents"]) for r in records] == sizes
    for record in records:
        assert FIELDS <= set(record) and FLOOR_FIELDS <= set(record["floor"])
        assert record["config"] == config and record["requested_num_envs"] == record["num_envs"]
        assert record["max_seconds"] == runner.DEFAULT_MAX_SECONDS["numpy"]
        assert 0 < record["floor"]["fraction_of_memory_floor"] and record["floor"]["bytes_per_env_step"] > 0
    out, err = capsys.readouterr()
    assert out.count("agent-steps/s") == 2 and out.count("appended to") == 2
    assert f"{config} point 1/2" in err and f"{config} point 2/2" in err and "repeat 2/2" in err


def test_a_named_config_keeps_its_name_unless_its_parameters_change(tmp_path):
    argv = ["bench", "--config", "grid", "--num-envs", "2", "--backend", "numpy", "--steps", "1", "--repeats", "1",
            "--warmup", "1", "--results-dir", str(tmp_path)]
    assert main(argv) == 0 and main([*argv, "--set", "num_taggers=2"]) == 0
    (saved,) = tmp_path.glob("*.json")
    assert [r["config"] for r in json.loads(saved.read_text())] == ["grid", None]


@pytest.mark.parametrize("argv, message", [
    (["--values", "1,4"], "--values gives the points of a sweep"),
    (["--config", "sweep-E", "--set", "num_runners=3"], "--set does not combine with --config sweep-E"),
    (["--config", "sweep-E", "--num-envs", "4"], "sweep-E sweeps E itself"),
    (["--config", "sweep-N", "--values", "10,1"], "sweep-N: N=1 is not allowed; give an integer >= 2"),
    (["--max-seconds", "0"], "max_seconds=0.0 is not allowed"),
])
def test_sweep_and_scaling_errors_are_clear(argv, message, capsys):
    assert main(["bench", "--backend", "numpy", *argv]) == 2
    assert message in capsys.readouterr().err


def test_values_must_be_integers(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--config", "sweep-E", "--values", "1,x"])
    assert "is not a comma-separated list of integers" in capsys.readouterr().err


def test_sweep_points_are_all_checked_before_the_first_runs():
    with pytest.raises(ValueError, match="E=0 is not allowed"):
        next(run_sweep(NAMED_SWEEPS["sweep-E"], values=[1, 0], backend="numpy"))


def test_no_time_limit_runs_the_requested_size():
    def never_timed(num_envs: int) -> float:
        raise AssertionError("without a time limit nothing is timed to fit")

    assert runner.fit_to_time(3, never_timed, steps=5, repeats=2, warmup_steps=1, max_seconds=math.inf) == (3, 5, 1)


def test_time_limit_picks_the_largest_power_of_two_that_fits_then_cuts_steps():
    def seconds_per_step(num_envs):  # 1 ms per environment and step
        return 1e-3 * num_envs
    # 1 + 2 * 5 = 11 steps: E=8 takes 0.088 s, E=16 would take 0.176 s
    assert runner.fit_to_time(100, seconds_per_step, steps=5, repeats=2, warmup_steps=1, max_seconds=0.1) == (8, 5, 1)
    assert runner.fit_to_time(6, seconds_per_step, steps=5, repeats=2, warmup_steps=1, max_seconds=1.0) == (6, 5, 1)
    assert runner.fit_to_time(100, seconds_per_step, steps=50, repeats=2, warmup_steps=10,
                              max_seconds=0.055) == (1, 25, 5)


def test_time_limit_probes_from_the_least_environments_given():
    probed = []

    def seconds_per_step(num_envs):
        probed.append(num_envs)
        return 1e-3 * num_envs

    assert runner.fit_to_time(100, seconds_per_step, 5, 2, 1, max_seconds=0.2, least_envs=3) == (12, 5, 1)
    assert probed == [3, 6, 12, 24]
    assert runner.fit_to_time(100, seconds_per_step, 50, 2, 10, max_seconds=0.165, least_envs=3) == (3, 25, 5)


def test_policy_tiers_time_a_role_of_one_agent_and_refuse_too_few_of_its_samples_in_bench_terms():
    from warpsim.bench.policy_tiers import run_policy_tier
    # One good agent a game: the time limit's first probe, at E=1, would hold 2 of its samples for 4 minibatches
    one_good = BenchConfig("simple_tag", 8, dict(num_adversaries=3, num_good=1))
    record = run_policy_tier(one_good, "train", backend="numpy", steps=2, repeats=1, max_seconds=60.0)
    assert record["num_envs"] in (2, 4, 8)
    too_few = dataclasses.replace(one_good, num_envs=1)
    with pytest.raises(ValueError, match=r"a rollout of 2 steps of 1 environments holds 2 samples of role 'agent', "
                                         r"too few for the update's 4 minibatches; give at least 2 environments"):
        run_policy_tier(too_few, "sim+policy", backend="numpy", steps=2, repeats=1)


# ----- the floor ------------------------------------------------------------------
class Ledger(Environment):
    """Buffers of hand-picked sizes and a step that does nothing: the floor's bytes, by hand."""

    name = "ledger"
    Params = BeaconParams

    def describe(self):
        return EnvSpec(num_agents=4, observation_size=3, action_levels=(5, 2), role_names=("walker",),
                       agent_roles=(0, 0, 0, 0), state=(
                           StateArray("x", np.float32, ("E", "N")), StateArray("flag", np.int8, ("E", "N")),
                           StateArray("clock", np.int32, ("E",)), StateArray("kind", np.int32, ("N",)),
                           StateArray("table", np.float32, (16,))))

    def reset_numpy(self, envs):
        pass

    def step_numpy(self):
        pass


def test_bytes_per_env_step_by_hand():
    env = Ledger(3, backend="numpy")
    # read + write x (4 x 4 B), flag (4 x 1 B), clock (4 B); read actions (4 x 2 x 4 B);
    # write observations (4 x 3 x 4 B), rewards (4 x 4 B), done (1 B); kind, table and episode not counted.
    assert floor.bytes_per_env_step(env) == 2 * (16 + 4 + 4) + 32 + 48 + 16 + 1 == 145
    assert floor.distance_evaluations_per_env_step(env) is None  # not declared: unknown, not 0


class NearestWalkers(Beacon):
    """A custom environment whose agents would observe their K nearest: it declares nothing."""

    name = "nearest_walkers"

    def describe(self):
        spec = super().describe()
        return EnvSpec(spec.num_agents, spec.observation_size, spec.action_levels, spec.state, spec.role_names,
                       spec.agent_roles)


class DeclaringWalkers(Beacon):
    name = "declaring_walkers"

    def describe(self):
        n = self.params.num_agents
        return dataclasses.replace(super().describe(), observation_label="partial K=2",
                                   distance_evaluations_per_step=n * n)


def test_a_custom_environment_that_declares_nothing_is_recorded_as_unknown():
    record = runner.run_sim(BenchConfig(NearestWalkers, 2, dict(num_agents=3)), backend="numpy", steps=1,
                            repeats=1, warmup_steps=1)
    assert record["observation"] == "unknown"
    assert record["floor"]["distance_evaluations_per_env_step"] == "unknown"
    assert record["floor"]["flops_per_env_step"] == "unknown"
    assert record["floor"]["compute_floor_seconds_per_env_step"] == "unknown"
    assert record["floor"]["fraction_of_memory_floor"] > 0
    assert "N=3 on numpy" in runner.summary(record), "an undeclared observation is left out of the summary"


def test_a_custom_environment_declares_its_observation_and_pairwise_work():
    record = runner.run_sim(BenchConfig(DeclaringWalkers, 2, dict(num_agents=3)), backend="numpy", steps=1,
                            repeats=1, warmup_steps=1)
    assert record["observation"] == "partial K=2"
    assert record["floor"]["distance_evaluations_per_env_step"] == 9
    assert record["floor"]["flops_per_env_step"] == 45


@pytest.mark.parametrize("full, distances", [(False, 8 * 8 + 6 * 2), (True, 6 * 2)])
def test_neighbour_search_arithmetic_by_hand(full, distances):
    env = make("tag_continuous", 2, backend="numpy", num_taggers=2, num_runners=6, use_full_observation=full,
               num_other_agents_observed=3)
    assert floor.distance_evaluations_per_env_step(env) == distances  # N x N search (partial) + runners x taggers
    assert floor.flops_per_env_step(env) == 5 * distances
    assert floor.distance_evaluations_per_env_step(make("tag_gridworld", 2, backend="numpy")) == 0


def test_floor_fields_from_given_device_figures(monkeypatch):
    measured = {"copy_bandwidth_gb_per_s": 100.0, "copy_method": "given", "fp32_gflop_per_s": 1.0,
                "fp32_method": "given"}
    monkeypatch.setattr(floor, "measure_device", lambda device: measured)
    fields = floor.floor_fields(Ledger(2, backend="numpy"), env_steps_per_second=1e8)
    assert fields["memory_floor_seconds_per_env_step"] == pytest.approx(145 / 100e9)
    assert fields["compute_floor_seconds_per_env_step"] == "unknown"
    assert fields["run_seconds_per_env_step"] == pytest.approx(1e-8)
    assert fields["fraction_of_memory_floor"] == pytest.approx(1.45e-9 / 1e-8)
    tag = make("tag_continuous", 2, backend="numpy", num_taggers=2, num_runners=6, use_full_observation=False,
               num_other_agents_observed=3)
    fields = floor.floor_fields(tag, env_steps_per_second=1e4)
    assert fields["compute_floor_seconds_per_env_step"] == pytest.approx(380e-9)
    # The compute floor (380 ns) exceeds the memory floor, yet the fraction is the memory floor's alone.
    assert fields["fraction_of_memory_floor"] == pytest.approx(fields["memory_floor_seconds_per_env_step"] / 1e-4)
    assert fields["memory_floor_seconds_per_env_step"] < 380e-9


# ----- the tiers --------------------------------------------------------------------
SHRUNK = {"tag_continuous": ["num_taggers=2", "num_runners=5", "num_other_agents_observed=3", "episode_length=4"],
          "tag_gridworld": ["num_taggers=2", "grid_length=4", "episode_length=3"]}


@pytest.mark.parametrize("tier", ["sim", "sim+policy", "train"])
@pytest.mark.parametrize("name", sorted(NAMED_CONFIGS))
def test_every_tier_of_every_named_config_runs_at_a_tiny_size(name, tier, tmp_path, capsys):
    named = NAMED_CONFIGS[name]
    assert isinstance(named.env, str)
    settings = [option for setting in SHRUNK[named.env] for option in ("--set", setting)]
    assert main(["bench", "--config", name, "--num-envs", "2", *settings, "--tier", tier, "--steps", "5",
                 "--repeats", "2", "--warmup", "1", "--backend", "numpy", "--results-dir", str(tmp_path)]) == 0
    [path] = tmp_path.iterdir()
    [record] = json.loads(path.read_text())
    assert FIELDS <= set(record)
    assert (record["tier"], record["env"], record["num_envs"], record["backend"]) == (tier, named.env, 2, "numpy")
    assert record["precision"] == "fp32" and record["steps_per_repeat"] == 5
    assert record["launches"] == "eager"
    assert record["agent_steps_per_second"]["median"] > 0
    if tier != "sim":
        assert record["networks"]["parameters"] > 0
    if tier == "train":
        rollout, update = record["rollout_ms"], record["update_ms"]
        assert 0 < rollout["min"] <= rollout["median"] <= rollout["max"] and 0 < update["min"] <= update["median"]
        # On a CPU nothing overlaps: the two phases are a repeat's whole time.
        repeat_ms = 1e3 * 5 * 2 / record["env_steps_per_second"]["median"]
        assert rollout["median"] + update["median"] == pytest.approx(repeat_ms, rel=0.5)
        assert record["update"]["launches"] == "eager" and record["update"]["compile_seconds"] == 0
        assert record["compiled"] is False and record["update"]["compiled"] is False
    assert f"{tier} tier" in capsys.readouterr().out


@pytest.mark.parametrize("tier", ["sim", "sim+policy", "train"])
def test_the_tiers_run_the_kernels_on_the_simulator(tier):
    from warpsim.bench.policy_tiers import run_policy_tier
    config = BenchConfig("tag_gridworld", 1, dict(num_taggers=2, grid_length=4, episode_length=3))
    options: dict[str, Any] = dict(backend="cuda", steps=4, repeats=1, warmup_steps=1)
    record = runner.run_sim(config, **options) if tier == "sim" else run_policy_tier(config, tier, **options)
    assert (record["backend"], record["device"], record["tier"]) == ("cuda", "CUDA simulator", tier)


@pytest.mark.gpu
@pytest.mark.parametrize("compile", ["off", "on"], ids=["eager", "fused"])
def test_the_train_tier_times_a_captured_update_and_its_phases_on_the_gpu(compile):
    from warpsim.bench.policy_tiers import run_policy_tier
    record = run_policy_tier(TINY, "train", backend="cuda", steps=8, repeats=3, graphs=True, compile=compile)
    assert record["launches"] == "cuda-graph" and record["update"]["launches"] == "cuda-graph"
    assert (record["update"]["compile_seconds"] > 0) is (compile == "on") and record["compiled"] is (compile == "on")
    rollout, update = record["rollout_ms"]["median"], record["update_ms"]["median"]
    # Events on the device's timeline: the two phases are the iteration, which the host waits for.
    repeat_ms = 1e3 * 8 * record["num_envs"] / record["env_steps_per_second"]["median"]
    assert 0 < rollout and 0 < update and rollout + update == pytest.approx(repeat_ms, rel=0.5)


def test_policy_tiers_reject_an_unknown_precision():
    from warpsim.bench.policy_tiers import run_policy_tier
    with pytest.raises(ValueError, match="precision='fp8' is not allowed; choose one of auto, fp32, bf16, fp16"):
        run_policy_tier(TINY, "train", backend="numpy", precision="fp8")


def test_host_time_per_step_is_recorded_apart_from_the_rate():
    record = runner.run_sim(TINY, backend="numpy", steps=3, repeats=3, warmup_steps=1)
    host, rate = record["host_us_per_step"], record["env_steps_per_second"]["median"]
    assert 0 < host["min"] <= host["median"] <= host["max"]
    # On a CPU the host does the whole step: its time is the step time, E environments at a time.
    assert host["median"] == pytest.approx(1e6 * record["num_envs"] / rate, rel=0.5)
    assert f"host {host['median']:.1f} us per step" in runner.summary(record)


@pytest.mark.parametrize("compiled, gradient_kernels, loss_kernels, said", [
    (False, False, False, "launches): "), (True, False, False, "launches, fused networks): "),
    (True, True, False, "launches, fused networks and gradient kernels): "),
    (True, True, True, "launches, fused networks and gradient kernels with the loss): ")])
def test_the_summary_says_how_the_networks_ran(compiled, gradient_kernels, loss_kernels, said):
    record = runner.run_sim(TINY, backend="numpy", steps=1, repeats=1, warmup_steps=1)
    record.update(compiled=compiled, update={"gradient_kernels": gradient_kernels, "loss_kernels": loss_kernels})
    assert said in runner.summary(record)


@pytest.mark.parametrize("graphs", ["on", "both"])
@pytest.mark.parametrize("tier", ["sim", "train"])
def test_graphs_on_where_none_can_be_captured_is_a_clear_error(graphs, tier, tmp_path, capsys):
    code = main(["bench", "--env", "tag_gridworld", "--num-envs", "1", "--backend", "numpy", "--tier", tier,
                 "--graphs", graphs, "--steps", "2", "--repeats", "1", "--results-dir", str(tmp_path)])
    assert code == 2
    error = capsys.readouterr().err
    assert "CUDA graphs with backend='numpy' is not possible: they need the cuda backend on a GPU" in error
    assert "graphs on" not in error, "--graphs both is not --graphs on"
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("where", ["elsewhere", "checkout"])
def test_bench_saves_nothing_unless_told_where(where, tmp_path, monkeypatch, capsys):
    """The README's bench run from the checkout's root must not change the committed records."""
    folder = tmp_path if where == "elsewhere" else Path(__file__).resolve().parent.parent
    results = folder / "benchmarks" / "results"
    before = {path: path.read_bytes() for path in results.glob("*.json")}
    monkeypatch.chdir(folder)
    assert main(["bench", "--env", "tag_gridworld", "--num-envs", "1", "--backend", "numpy", "--steps", "1",
                 "--repeats", "1", "--warmup", "1"]) == 0
    assert {path: path.read_bytes() for path in results.glob("*.json")} == before
    assert where == "checkout" or not any(tmp_path.iterdir())
    assert "records were printed only; give --results-dir DIR" in capsys.readouterr().err
    assert main(["bench", "--env", "tag_gridworld", "--num-envs", "1", "--backend", "numpy", "--steps", "1",
                 "--repeats", "1", "--warmup", "1", "--results-dir", str(tmp_path / "mine")]) == 0
    assert "appended to " + str(tmp_path / "mine") in capsys.readouterr().out


def test_the_removed_no_save_option_names_what_replaced_it(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["bench", "--no-save"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err.strip()
    assert error == ("warpsim bench: error: --no-save was removed in warpsim 0.2.0: bench saves nothing unless "
                     "--results-dir DIR is given; drop --no-save")
