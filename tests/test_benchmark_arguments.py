"""Every count a benchmark script takes is refused at 0, and an output file that a run or an experiment is
made of is refused, each as a one-line usage error before anything runs."""

import sys
from pathlib import Path

import pytest
from helpers import load_script

from warpsim.train import TrainConfig
from warpsim.train.loop import train

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
COUNTS = [
    ("beacon_continuous", "--episodes"), ("cpu_baseline", "--num-envs"), ("cpu_baseline", "--steps"),
    ("cpu_baseline", "--repeats"), ("evaluation_speed", "--runs"), ("evaluation_speed", "--iterations"),
    ("evaluation_speed", "--episodes"), ("fused_forward", "--num-envs"), ("fused_forward", "--repeats"),
    ("fused_forward", "--hidden-size"), ("gpu_peers", "--steps"), ("gpu_peers", "--repeats"),
    ("iteration_profile", "--steps"), ("learning_seeds", "--episodes"), ("many_runs", "--runs"),
    ("many_runs", "--iterations"), ("mpe_search_work", "--agents"), ("mpe_search_work", "--observed"),
    ("mpe_search_work", "--layouts"), ("mpe_search_work", "--queries"), ("mpe_speed", "--agents"),
    ("mpe_speed", "--neighbours"), ("mpe_speed", "--num-envs"), ("mpe_spread_learning", "--episodes"),
    ("mpe_spread_learning", "--num-envs"), ("placement", "--hidden"), ("placement", "--steps"),
    ("placement", "--repeats"), ("search_work", "--agents"), ("search_work", "--observed"),
    ("search_work", "--environments"), ("stacked_networks", "--runs"), ("stacked_networks", "--batch"),
    ("stacked_networks", "--hidden"), ("stacked_networks", "--repeats"),
]


@pytest.mark.parametrize("script, option", COUNTS)
def test_a_count_of_zero_is_a_usage_error(script, option, monkeypatch, capsys):
    try:
        module = load_script(BENCHMARKS / f"{script}.py")
    except ImportError as error:
        pytest.skip(f"{script}.py needs {error.name}")
    monkeypatch.setattr(sys, "argv", [f"{script}.py", option, "0"])
    with pytest.raises(SystemExit) as stopped:
        module.main()
    assert stopped.value.code == 2
    last_line = capsys.readouterr().err.strip().splitlines()[-1]
    assert last_line.endswith(f"error: argument {option}: 0 is not allowed; give an integer >= 1"), last_line


@pytest.mark.parametrize("script", ["fused_forward", "iteration_cost", "stacked_networks"])
@pytest.mark.parametrize("device, error", [
    ("gpu", "'gpu' is not allowed; give cpu, cuda or cuda:N"), ("cuda:7", "'cuda:7' is not here: torch sees")])
def test_a_device_that_is_not_here_is_a_usage_error(script, device, error, monkeypatch, capsys):
    module = load_script(BENCHMARKS / f"{script}.py")
    monkeypatch.setattr(sys, "argv", [f"{script}.py", "--device", device])
    with pytest.raises(SystemExit) as stopped:
        module.main()
    assert stopped.value.code == 2 and f"error: argument --device: {error}" in capsys.readouterr().err


@pytest.mark.parametrize("script", ["cpu_baseline", "evaluation_speed", "fused_forward", "many_runs", "mpe_speed",
                                    "neighbour_search", "placement"])
def test_a_results_directory_that_is_a_file_is_a_usage_error_before_anything_runs(script, tmp_path, monkeypatch,
                                                                                    capsys):
    try:
        module = load_script(BENCHMARKS / f"{script}.py")
    except ImportError as error:
        pytest.skip(f"{script}.py needs {error.name}")
    (tmp_path / "records").write_text("")
    monkeypatch.setattr(sys, "argv", [f"{script}.py", "--results-dir", str(tmp_path / "records")])
    with pytest.raises(SystemExit) as stopped:
        module.main()
    assert stopped.value.code == 2
    assert f"argument --results-dir: results directory {tmp_path / 'records'} is a file" in capsys.readouterr().err


@pytest.mark.parametrize("script", ["cpu_baseline", "gpu_peers"])
def test_the_removed_no_save_option_says_that_nothing_is_saved_unasked(script, monkeypatch, capsys):
    module = load_script(BENCHMARKS / f"{script}.py")
    monkeypatch.setattr(sys, "argv", [f"{script}.py", "--no-save"])
    with pytest.raises(SystemExit) as stopped:
        module.main()
    assert stopped.value.code == 2
    assert "--no-save was removed in warpsim 0.2.0: nothing is saved unless --results-dir DIR is given; drop " \
           "--no-save" in capsys.readouterr().err


def test_the_iteration_profile_without_a_gpu_is_a_usage_error_naming_the_cost_model(monkeypatch, capsys):
    module = load_script(BENCHMARKS / "iteration_profile.py")
    monkeypatch.setattr(sys, "argv", ["iteration_profile.py"])
    monkeypatch.setattr(module.torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit) as stopped:
        module.main()
    assert stopped.value.code == 2 and "benchmarks/iteration_cost.py counts" in capsys.readouterr().err


def test_the_search_count_takes_no_steps_after_the_start_but_not_fewer(capsys):
    script = load_script(BENCHMARKS / "mpe_search_work.py")
    with pytest.raises(SystemExit) as stopped:
        script.main(["--steps", "-1"])
    assert stopped.value.code == 2
    assert "--steps -1 is not allowed; give an integer >= 0 (0: the start alone)" in capsys.readouterr().err


@pytest.mark.parametrize("script, arguments", [
    ("iteration_cost", ["--json", "{run}/config.json"]),
    ("iteration_profile", ["--json", "{run}/config.json"]),
    ("runners_kept", ["a.json", "b.json", "--out", "{run}/config.json"]),
    ("mpe_spread_learning", ["{run}", "--json", "{run}/config.json"]),
])
def test_an_output_file_is_never_one_of_a_runs_own(script, arguments, tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    train(TrainConfig(env="beacon", env_params=dict(num_agents=1, episode_length=2), num_envs=1, rollout_steps=2,
                      minibatches=1, iterations=1, backend="numpy"), run, progress=None)
    config = (run / "config.json").read_bytes()
    module = load_script(BENCHMARKS / f"{script}.py")
    monkeypatch.setattr(sys, "argv", [f"{script}.py", *(argument.format(run=run) for argument in arguments)])
    with pytest.raises(SystemExit) as stopped:
        module.main()
    assert stopped.value.code == 2 and "which warpsim never replaces" in capsys.readouterr().err
    assert (run / "config.json").read_bytes() == config


def test_a_table_scripts_output_is_checked_before_the_table_is_made_and_then_written(tmp_path, capsys):
    """warpsim.commands.table_script, which the kernel-resources scripts run: a file that is not Markdown is
    a usage error before anything is compiled; a Markdown one receives what is printed."""
    from warpsim.commands import table_script
    made = []

    def table() -> str:
        made.append(True)
        return "| a |\n"

    with pytest.raises(SystemExit) as stopped:
        table_script(table, "a table", "resources table", [str(tmp_path / "table.txt")])
    assert stopped.value.code == 2 and made == [] and "must end in .md" in capsys.readouterr().err
    assert table_script(table, "a table", "resources table", [str(tmp_path / "out" / "table.md")]) == 0
    assert capsys.readouterr().out == "| a |\n" and (tmp_path / "out" / "table.md").read_text() == "| a |\n"
