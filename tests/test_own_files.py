"""No command replaces a file a run or an experiment is made of, a new run never takes over a folder
of the user's files, and an experiment's plan cannot send its runs outside its folder."""

import json
from pathlib import Path

import pytest
from test_run_faults import GRID_FLAGS, cli_error

from warpsim.cli import main
from warpsim.errors import RunFileError
from warpsim.train.experiment import ExperimentDirectory
from warpsim.train.run_dir import owner_of

EVALUATE = ["--episodes", "4", "--num-envs", "2", "--backend", "numpy", "--no-compare-random", "--greedy"]


@pytest.fixture(scope="module")
def experiment(tmp_path_factory) -> Path:
    """An experiment of two seeds trained for one iteration."""
    path = tmp_path_factory.mktemp("own") / "exp"
    assert main(["train", *GRID_FLAGS, "--iterations", "1", "--seeds", "2", "--run-dir", str(path)]) == 0
    return path


def contents(folder: Path) -> dict:
    return {path: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.mark.parametrize("target, owner", [
    ("experiment.json", "the plan of the experiment in"),
    ("seed=1/config.json", "the config of the run in"),
    ("seed=0/config.json", "the config of the run in"),
], ids=["the experiment's plan", "a sibling run's config", "its own config"])
def test_evaluate_never_replaces_a_run_or_experiment_file(experiment, capsys, target, owner):
    before = contents(experiment)
    error = cli_error(capsys, ["evaluate", str(experiment / "seed=0"), *EVALUATE, "--json", str(experiment / target)])
    assert f"evaluation file {experiment / target} is {owner}" in error
    assert "which warpsim never replaces; write to another file, e.g." in error
    assert contents(experiment) == before


def test_an_evaluation_beside_the_run_is_written_and_replaced_by_the_next(experiment, capsys):
    out = experiment / "seed=0" / "eval.json"
    for _ in range(2):
        assert main(["evaluate", str(experiment / "seed=0"), *EVALUATE, "--json", str(out)]) == 0
        assert json.loads(out.read_text())["plays"].keys() == {"greedy"}
    out.unlink()


@pytest.mark.parametrize("inside", ["tensorboard", "wandb"])
def test_plots_and_gifs_stay_out_of_a_run_loggers_folders(experiment, capsys, inside):
    run = experiment / "seed=1"
    (run / inside).mkdir(exist_ok=True)
    plot = cli_error(capsys, ["plot", str(run), "--baseline-episodes", "0", "--out", str(run / inside / "a.png")])
    assert f"plot {run / inside / 'a.png'} is inside the " in plot and "log of the run in" in plot
    gif = cli_error(capsys, ["render", str(run), "--backend", "numpy", "--out", str(run / inside / "a.gif")])
    assert f"output {run / inside / 'a.gif'} is inside the " in gif
    assert list((run / inside).iterdir()) == []


def test_owner_of_names_only_files_of_runs_and_experiments(tmp_path, experiment):
    assert owner_of(tmp_path / "config.json") is None, "a config.json of the user's own, outside any run"
    assert (owner_of(experiment / "seed=0" / "checkpoint.pt") or "").startswith("the checkpoint of the run in")
    assert (owner_of(experiment / "seed=0" / "metrics.jsonl") or "").startswith("the metrics of the run in")
    assert owner_of(experiment / "seed=0" / "episode.gif") is None


@pytest.mark.parametrize("own_file", ["metrics.jsonl", "checkpoint.pt", "notes.txt"])
def test_a_new_run_never_takes_over_a_folder_of_other_files(tmp_path, capsys, own_file):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / own_file).write_text("the user's own")
    error = cli_error(capsys, ["train", *GRID_FLAGS, "--iterations", "1", "--run-dir", str(folder)])
    assert error.endswith(f"run directory {folder} already holds files ({own_file}) but no warpsim run or "
                          f"experiment; give a new or empty directory (nothing was written)")
    assert [path.name for path in folder.iterdir()] == [own_file] and (folder / own_file).read_text() == "the user's own"


def test_a_new_experiment_never_takes_over_a_folder_of_other_files(tmp_path, capsys):
    folder = tmp_path / "mine"
    (folder / "seed=0").mkdir(parents=True)
    (folder / "seed=0" / "metrics.jsonl").write_text("the user's own\n")
    error = cli_error(capsys, ["train", *GRID_FLAGS, "--iterations", "1", "--seeds", "2", "--run-dir", str(folder)])
    assert f"experiment directory {folder} already holds files (seed=0) but no warpsim run" in error
    assert (folder / "seed=0" / "metrics.jsonl").read_text() == "the user's own\n"
    assert sorted(path.name for path in folder.rglob("*")) == ["metrics.jsonl", "seed=0"]


def test_a_run_cut_off_while_writing_its_first_checkpoint_can_start_again(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "checkpoint.pt.partial").write_bytes(b"half a checkpo")
    assert main(["train", *GRID_FLAGS, "--iterations", "1", "--run-dir", str(folder)]) == 0
    assert (folder / "config.json").is_file() and not (folder / "checkpoint.pt.partial").exists()


def plan_with(experiment: Path, tmp_path: Path, runs) -> Path:
    """A copy of ``experiment``'s plan (in a new folder) with ``runs`` as its list of runs."""
    copy = tmp_path / "copy"
    copy.mkdir()
    plan = json.loads((experiment / "experiment.json").read_text())
    plan["runs"] = runs(plan["runs"])
    (copy / "experiment.json").write_text(json.dumps(plan))
    return copy


@pytest.mark.parametrize("runs, expected", [
    (lambda runs: [{**runs[0], "name": "../x"}], "names a run '../x'; a run's name is one folder inside"),
    (lambda runs: [{**runs[0], "name": "/abs/run"}], "names a run '/abs/run'"),
    (lambda runs: [{**runs[0], "name": ".."}], "names a run '..'"),
    (lambda runs: [{**runs[0], "name": 7}], "names a run 7"),
    (lambda runs: [runs[0], runs[0]], "lists the run 'seed=0' twice; each run is listed once"),
    (lambda runs: [], "lists no runs; an experiment has at least one"),
], ids=["parent", "absolute", "dot-dot", "not text", "twice", "none"])
@pytest.mark.parametrize("command", ["evaluate", "plot", "resume"])
def test_an_experiment_plan_is_checked_when_read(experiment, tmp_path, capsys, runs, expected, command):
    copy = plan_with(experiment, tmp_path, runs)
    before = contents(tmp_path)
    argv = {"evaluate": ["evaluate", str(copy), *EVALUATE], "plot": ["plot", str(copy), "--baseline-episodes", "0"],
            "resume": ["train", "--resume", "--run-dir", str(copy), "--quiet"]}[command]
    error = cli_error(capsys, argv)
    assert f"{copy / 'experiment.json'} {expected}" in error
    assert contents(tmp_path) == before, "nothing was written, inside the experiment or beside it"


def test_a_run_name_that_is_a_file_is_refused(experiment, tmp_path):
    copy = plan_with(experiment, tmp_path, lambda runs: runs)
    (copy / "seed=0").write_text("a file")
    with pytest.raises(RunFileError, match=r"lists the run 'seed=0', but .* is a file, not a run directory"):
        ExperimentDirectory(copy, resume=True).read()
