"""Where a run's metrics go besides metrics.jsonl: TensorBoard when installed, W&B when asked; each run says
where at its start."""

import json
import sys
import types

import pytest

from warpsim.cli import main

GRID = ["--config", "grid-small", "--iterations", "2", "--num-envs", "4", "--rollout-steps", "8", "--set",
        "grid_length=5", "--set", "episode_length=10", "--backend", "numpy", "--log-every", "1"]


class FakeRun:
    def __init__(self, calls):
        self.calls = calls

    def log(self, numbers, step):
        self.calls.append(("log", numbers, step))

    def finish(self):
        self.calls.append(("finish",))


@pytest.fixture
def fake_wandb(monkeypatch):
    """A stand-in for the wandb package that records what a run hands it."""
    calls: list[tuple] = []

    def init(**kwargs):
        calls.append(("init", kwargs))
        return FakeRun(calls)

    module = types.ModuleType("wandb")
    module.init = init  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wandb", module)
    return calls


def test_wandb_receives_the_config_and_every_metrics_record_at_its_env_steps(fake_wandb, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", *GRID, "--run-dir", str(run), "--wandb", "tag-study"]) == 0
    (_, init), *logged, finish = fake_wandb
    assert init["project"] == "tag-study" and init["name"] == "run" and init["group"] == "tag_gridworld"
    assert init["config"] == json.loads((run / "config.json").read_text()) and init["resume"] == "allow"
    assert init["id"] == (run / "wandb-run-id").read_text()
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [step for _, _, step in logged] == [record["env_steps"] for record in records] == [32, 64]
    assert all("iteration" not in numbers and numbers["env_steps"] == step for _, numbers, step in logged)
    assert finish == ("finish",)
    assert "Weights & Biases: logging to project tag-study, run run" in capsys.readouterr().err

    fake_wandb.clear()
    assert main(["train", "--resume", "--run-dir", str(run), "--iterations", "3", "--wandb", "tag-study"]) == 0
    assert fake_wandb[0][1]["id"] == init["id"], "a resumed run goes on logging to the same W&B run"


def test_wandb_missing_is_one_line_before_anything_is_written(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb raises ImportError
    assert main(["train", *GRID, "--run-dir", str(tmp_path / "run"), "--wandb", "p"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("warpsim train: error: --wandb logs to Weights & Biases, which needs the wandb "
                            "package: ") and "wandb" in error.rsplit(":", 1)[1] and "\n" not in error
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("installed", [True, False])
def test_a_run_says_at_its_start_where_tensorboard_logs_and_is_quiet_without_it(installed, monkeypatch, tmp_path,
                                                                                capsys):
    if installed:
        pytest.importorskip("tensorboard")
    else:
        monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    run = tmp_path / "run"
    assert main(["train", *GRID, "--run-dir", str(run)]) == 0
    err = capsys.readouterr().err
    if installed:
        assert f"TensorBoard: logging to {run / 'tensorboard'} (tensorboard --logdir {tmp_path})" in err
        assert any((run / "tensorboard").iterdir())
    else:
        assert "TensorBoard" not in err and "tensorboard" not in err, "no hint at every run: metrics.jsonl has all"
        assert not (run / "tensorboard").exists()


def test_no_tensorboard_turns_it_off(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", *GRID, "--run-dir", str(run), "--no-tensorboard"]) == 0
    assert "TensorBoard" not in capsys.readouterr().err and not (run / "tensorboard").exists()


def test_tensorboard_asked_for_without_the_package_is_one_line_before_anything_is_written(monkeypatch, tmp_path,
                                                                                         capsys):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    assert main(["train", *GRID, "--run-dir", str(tmp_path / "run"), "--tensorboard"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("warpsim train: error: --tensorboard logs to TensorBoard, which needs the tensorboard "
                            "package: ") and "\n" not in error
    assert not (tmp_path / "run").exists()


def test_an_experiment_logs_each_run_to_wandb_grouped_by_the_experiment(fake_wandb, tmp_path):
    experiment = tmp_path / "study"
    assert main(["train", *GRID, "--seeds", "2", "--sweep", "entropy_coef=0,0.01", "--run-dir", str(experiment),
                 "--wandb", "tag-study", "--quiet"]) == 0
    inits = [entry[1] for entry in fake_wandb if entry[0] == "init"]
    names = ["entropy_coef=0_seed=0", "entropy_coef=0_seed=1", "entropy_coef=0.01_seed=0", "entropy_coef=0.01_seed=1"]
    assert sorted(init["name"] for init in inits) == sorted(names)
    assert {init["group"] for init in inits} == {"study"} and {init["project"] for init in inits} == {"tag-study"}
    for init in inits:
        run = experiment / init["name"]
        assert init["config"] == json.loads((run / "config.json").read_text())
        assert init["id"] == (run / "wandb-run-id").read_text()
    ids = {init["name"]: init["id"] for init in inits}
    fake_wandb.clear()
    assert main(["train", "--resume", "--run-dir", str(experiment), "--iterations", "3", "--wandb", "tag-study",
                 "--quiet"]) == 0
    resumed = {entry[1]["name"]: entry[1]["id"] for entry in fake_wandb if entry[0] == "init"}
    assert resumed == ids, "a resumed experiment goes on logging to the same W&B runs"


def test_the_real_wandb_logs_offline(monkeypatch, tmp_path):
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = tmp_path / "run"
    assert main(["train", *GRID, "--run-dir", str(run), "--wandb", "warpsim-test", "--quiet"]) == 0
    (offline,) = (run / "wandb").glob("offline-run-*")
    assert offline.name.endswith((run / "wandb-run-id").read_text()) and wandb is not None


def test_quiet_training_still_prints_where_the_run_is_and_what_to_do_next(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", *GRID, "--run-dir", str(run), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"run directory: {run}", f"next: warpsim evaluate {run}  |  warpsim plot {run}  |  warpsim render {run}"]
    assert not captured.err

