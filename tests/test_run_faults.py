"""Run directories under faults: bad paths, corrupt files, full disks, stops before a checkpoint."""

import errno
import json
import os
import subprocess
import time
from typing import Any

import pytest
import torch

from warpsim.cli import main
from warpsim.errors import DoesNotFitError, RunFileError
from warpsim.train import TrainConfig, Trainer, TrainingDiverged, checkpoint
from warpsim.train.loop import train

GRID: dict[str, Any] = dict(env="tag_gridworld", env_params=dict(num_taggers=2, grid_length=5, episode_length=8),
            num_envs=4, rollout_steps=8, backend="numpy")
GRID_FLAGS = ["--env", "tag_gridworld", "--set", "num_taggers=2", "--set", "grid_length=5", "--set",
              "episode_length=8", "--num-envs", "4", "--rollout-steps", "8", "--backend", "numpy", "--quiet"]
TIMING = ("steps_per_second", "elapsed_seconds")


def records(run) -> list[dict]:
    """metrics.jsonl without its timings (which differ between any two runs)."""
    lines = (run / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in lines]


def same_training(a, b) -> bool:
    """Two run directories hold bit-identical networks, optimizer state and metrics."""
    one, two = checkpoint.load(a), checkpoint.load(b)
    same_policies = all(torch.equal(one["policies"][k], two["policies"][k]) for k in one["policies"])
    moments = [(x, y) for s1, s2 in zip(one["optimizer"]["state"].values(), two["optimizer"]["state"].values())
               for x, y in ((s1["exp_avg"], s2["exp_avg"]), (s1["exp_avg_sq"], s2["exp_avg_sq"]))]
    return (same_policies and all(torch.equal(x, y) for x, y in moments)
            and one["iteration"] == two["iteration"] and records(a) == records(b))


def cli_error(capsys, argv) -> str:
    """Runs the command line, expects exit 2 and returns its one line of error."""
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


# ----- bad run directories, one line each ---------------------------------------------------
def test_run_dir_that_is_a_file_or_lies_under_one(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert f"run directory {afile} is a file" in cli_error(capsys, ["train", *GRID_FLAGS, "--run-dir", str(afile)])
    under = afile / "run"
    assert f"lies under {afile}, which is a file" in cli_error(
        capsys, ["train", *GRID_FLAGS, "--run-dir", str(under)])
    assert afile.read_text() == "x"


def test_empty_run_dir_is_refused(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["train", *GRID_FLAGS, "--run-dir", ""])
    assert stop.value.code == 2
    assert "an empty path is not allowed" in capsys.readouterr().err
    with pytest.raises(RunFileError, match="empty path"):
        train(TrainConfig(**GRID, iterations=1), "", progress=None)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_run_dir(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    assert "is read-only" in cli_error(capsys, ["train", *GRID_FLAGS, "--run-dir", str(locked / "run")])


def test_resume_without_config_json(tmp_path, capsys):
    (tmp_path / "checkpoint.pt").write_bytes(b"")
    line = cli_error(capsys, ["train", "--resume", "--run-dir", str(tmp_path)])
    assert f"{tmp_path} holds no config.json" in line


# ----- corrupt files ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("finished")
    train(TrainConfig(**GRID, iterations=2, log_every=1), run, progress=None)
    return run


@pytest.mark.parametrize("damage, reason", [
    (lambda data: data[: len(data) // 2], "truncated, corrupt or not a warpsim checkpoint"),
    (lambda data: b"", "is empty"),
    (lambda data: os.urandom(4096), "truncated, corrupt or not a warpsim checkpoint"),
])
def test_corrupt_checkpoint_is_one_line_naming_it(finished_run, tmp_path, capsys, damage, reason):
    run = tmp_path / "run"
    run.mkdir()
    for name in ("config.json", "metrics.jsonl"):
        (run / name).write_bytes((finished_run / name).read_bytes())
    (run / "checkpoint.pt").write_bytes(damage((finished_run / "checkpoint.pt").read_bytes()))
    for argv in (["evaluate", str(run), "--backend", "numpy"], ["train", "--resume", "--run-dir", str(run)]):
        line = cli_error(capsys, argv)
        assert str(run / "checkpoint.pt") in line and reason in line and "weights_only" not in line


def test_checkpoint_with_missing_keys(finished_run, tmp_path, capsys):
    saved = torch.load(finished_run / "checkpoint.pt", weights_only=True)
    del saved["policies"]
    torch.save(saved, tmp_path / "checkpoint.pt")
    line = cli_error(capsys, ["evaluate", str(tmp_path / "checkpoint.pt"), "--backend", "numpy"])
    assert "lacks policies" in line and str(tmp_path / "checkpoint.pt") in line


def test_checkpoint_whose_networks_do_not_fit(finished_run, tmp_path, capsys):
    saved = torch.load(finished_run / "checkpoint.pt", weights_only=True)
    saved["policies"] = {key: value[:1] if value.dim() else value for key, value in saved["policies"].items()}
    torch.save(saved, tmp_path / "checkpoint.pt")
    line = cli_error(capsys, ["evaluate", str(tmp_path / "checkpoint.pt"), "--backend", "numpy"])
    assert "its networks do not fit" in line


@pytest.mark.parametrize("text, reason", [("{\"env\": ", "cannot be read"), ("[1, 2]", "JSON object"),
                                          ("{\"gamma\": 7}", "gamma=7")])
def test_corrupt_config_json_on_resume_names_the_file(finished_run, tmp_path, capsys, text, reason):
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint.pt").write_bytes((finished_run / "checkpoint.pt").read_bytes())
    (run / "config.json").write_text(text)
    line = cli_error(capsys, ["train", "--resume", "--run-dir", str(run)])
    assert str(run / "config.json") in line and reason in line


# ----- command-line values ---------------------------------------------------------------------
@pytest.mark.parametrize("argv", [["--fps", "0"], ["--fps", "-1"], ["--max-steps", "0"], ["--out", ""]])
def test_render_refuses_bad_values_as_usage_errors(finished_run, tmp_path, capsys, argv):
    out = ["--out", str(tmp_path / "a.gif")] if "--out" not in argv else []
    with pytest.raises(SystemExit) as stop:
        main(["render", str(finished_run), *out, *argv])
    assert stop.value.code == 2
    assert argv[1] in capsys.readouterr().err


def test_render_to_a_file_that_is_no_gif_fails_before_playing(finished_run, tmp_path, capsys):
    line = cli_error(capsys, ["render", str(finished_run), "--out", str(tmp_path / "x.png")])
    assert line.endswith(f"output {tmp_path / 'x.png'} must end in .gif") and not any(tmp_path.iterdir())


def test_render_draws_into_the_run_directory_by_default(finished_run, capsys):
    assert main(["render", str(finished_run), "--max-steps", "2"]) == 0
    assert f"to {finished_run / 'episode.gif'}" in capsys.readouterr().out
    (finished_run / "episode.gif").unlink()


def test_render_to_a_path_under_a_file_fails_before_playing(finished_run, tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    line = cli_error(capsys, ["render", str(finished_run), "--out", str(tmp_path / "afile" / "a.gif")])
    assert f"{tmp_path / 'afile'} is a file" in line


def test_empty_results_dir_is_refused(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["bench", "--backend", "numpy", "--env", "tag_gridworld", "--results-dir", ""])
    assert stop.value.code == 2 and "an empty path is not allowed" in capsys.readouterr().err


def test_bench_results_dir_under_a_file_fails_before_timing(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    begin = time.perf_counter()
    line = cli_error(capsys, ["bench", "--backend", "numpy", "--env", "tag_gridworld", "--num-envs", "2",
                              "--results-dir", str(tmp_path / "afile" / "results")])
    assert f"lies under {tmp_path / 'afile'}" in line and time.perf_counter() - begin < 5


# ----- resume rules -----------------------------------------------------------------------------
@pytest.mark.parametrize("stop", ["interrupt", "nan"])
def test_run_stopped_before_its_first_checkpoint_can_be_resumed(tmp_path, monkeypatch, stop):
    config = TrainConfig(**GRID, iterations=3, checkpoint_every=100, log_every=1)
    original = Trainer.iterate

    def failing(self):
        if stop == "interrupt":
            raise KeyboardInterrupt
        next(self.policies.parameters()).data.fill_(float("nan"))
        original(self)

    monkeypatch.setattr(Trainer, "iterate", failing)
    with pytest.raises(KeyboardInterrupt if stop == "interrupt" else TrainingDiverged):
        train(config, tmp_path / "stopped", progress=None)
    monkeypatch.setattr(Trainer, "iterate", original)
    assert checkpoint.load(tmp_path / "stopped")["iteration"] == 0, "the message's --resume finds a checkpoint"
    train(None, tmp_path / "stopped", resume=True, progress=None)
    train(config, tmp_path / "straight", progress=None)
    assert same_training(tmp_path / "stopped", tmp_path / "straight")


def test_a_directory_without_config_json_is_not_taken_over(tmp_path):
    """Files without a config.json may be the user's own: a new run refuses them rather than overwrite them."""
    (tmp_path / "metrics.jsonl").write_text('{"iteration": 1}\n{"iter')
    (tmp_path / "checkpoint.pt").write_bytes(b"partial")
    with pytest.raises(RunFileError, match=r"already holds files \(checkpoint.pt, metrics.jsonl\) but no warpsim run"):
        train(TrainConfig(**GRID, iterations=2, log_every=1), tmp_path, progress=None)
    assert (tmp_path / "checkpoint.pt").read_bytes() == b"partial"


def test_resume_drops_metrics_past_the_checkpoint_and_a_partial_line(tmp_path, monkeypatch):
    config = TrainConfig(**GRID, iterations=5, checkpoint_every=2, log_every=1)
    original = Trainer.iterate

    def crash_after_three(self):
        if self.iteration == 3:
            raise KeyboardInterrupt  # iteration 3 is logged, the checkpoint holds iteration 2
        original(self)

    monkeypatch.setattr(Trainer, "iterate", crash_after_three)
    with pytest.raises(KeyboardInterrupt):
        train(config, tmp_path / "run", progress=None)
    monkeypatch.setattr(Trainer, "iterate", original)
    with (tmp_path / "run" / "metrics.jsonl").open("a") as stream:
        stream.write('{"iteration": 4, "env_st')  # a record cut by a crash
    train(None, tmp_path / "run", resume=True, progress=None)
    train(config, tmp_path / "straight", progress=None)
    assert [r["iteration"] for r in records(tmp_path / "run")] == [1, 2, 3, 4, 5]
    assert same_training(tmp_path / "run", tmp_path / "straight")


def test_resume_with_fewer_iterations_than_done_is_an_error(finished_run, capsys):
    config_before = (finished_run / "config.json").read_bytes()
    line = cli_error(capsys, ["train", "--resume", "--run-dir", str(finished_run), "--iterations", "1"])
    assert "--iterations 1 is below the 2 iterations" in line
    assert (finished_run / "config.json").read_bytes() == config_before


def test_extending_a_finished_run_anneals_from_the_rate_it_reached(tmp_path):
    train(TrainConfig(**GRID, iterations=4, log_every=1, learning_rate=0.01, lr_schedule="linear", min_learning_rate=0.0),
          tmp_path, progress=None)
    train(None, tmp_path, resume=True, iterations=8, progress=None)
    rates = [r["learning_rate"] for r in records(tmp_path)]
    assert rates[:4] == pytest.approx([0.01, 0.0075, 0.005, 0.0025])
    assert rates[4:] == pytest.approx([0.0025, 0.0025 * 3 / 4, 0.0025 / 2, 0.0025 / 4])
    assert all(b <= a for a, b in zip(rates, rates[1:])), "the rate never jumps back up"
    assert json.loads((tmp_path / "config.json").read_text())["iterations"] == 8


# ----- storage ------------------------------------------------------------------------------------
def test_training_storage_is_estimated_before_it_is_allocated(capsys):
    begin = time.perf_counter()
    with pytest.raises(DoesNotFitError, match=r"num_envs=3000000, rollout_steps=32 .* GiB .*lower num_envs"):
        Trainer(TrainConfig(env="tag_continuous", num_envs=3_000_000, backend="numpy"))
    assert time.perf_counter() - begin < 5.0


def test_bench_train_tier_picks_a_rollout_that_fits(monkeypatch):
    from warpsim.bench import policy_tiers
    from warpsim.configs import BenchConfig
    from warpsim.train import storage
    config = BenchConfig("tag_gridworld", 4, dict(num_taggers=2, grid_length=5), None)
    spec = Trainer(TrainConfig(**GRID)).env.spec
    per_env = 4 * 3 * 100  # generous
    budget = storage.training_bytes(TrainConfig(**{**GRID, "rollout_steps": 16}), spec, per_env)
    monkeypatch.setattr(storage, "available_bytes", lambda placement: int(budget / storage.SAFETY) + 1)
    messages: list[str] = []
    record = policy_tiers.run_policy_tier(config, "train", backend="numpy", steps=64, repeats=1,
                                          max_seconds=float("inf"), progress=messages.append)
    assert record["steps_per_repeat"] in (16, 32) and any("does not fit in memory" in m for m in messages)
    monkeypatch.setattr(storage, "available_bytes", lambda placement: 1000)
    with pytest.raises(DoesNotFitError, match="rollout_steps=1 "):
        policy_tiers.run_policy_tier(config, "train", backend="numpy", steps=64, repeats=1)


# ----- a full disk ---------------------------------------------------------------------------------
def fail_nth_write_to(monkeypatch, suffix: str, nth: int):
    """Makes the ``nth`` os.write into a file whose name ends in ``suffix`` write part of its
    bytes and then fail as on a full disk."""
    real_write = os.write
    calls = {"n": 0}

    def write(descriptor, data):
        if os.readlink(f"/proc/self/fd/{descriptor}").endswith(suffix):
            calls["n"] += 1
            if calls["n"] == nth:
                real_write(descriptor, bytes(data[:7]))
                raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(descriptor, data)

    monkeypatch.setattr(os, "write", write)


def test_a_failed_metrics_append_leaves_whole_records(tmp_path, monkeypatch):
    config = TrainConfig(**GRID, iterations=4, checkpoint_every=1, log_every=1)
    fail_nth_write_to(monkeypatch, "metrics.jsonl", 3)
    with pytest.raises(RunFileError, match=r"cannot append to .*metrics.jsonl: No space left on device; the "
                                           r"records before it are intact"):
        train(config, tmp_path, progress=None)
    monkeypatch.undo()
    assert [r["iteration"] for r in records(tmp_path)] == [1, 2]
    assert checkpoint.load(tmp_path)["iteration"] == 2
    train(None, tmp_path, resume=True, progress=None)
    assert [r["iteration"] for r in records(tmp_path)] == [1, 2, 3, 4]
    train(config, tmp_path / "straight", progress=None)
    assert same_training(tmp_path, tmp_path / "straight")


def test_a_failed_checkpoint_write_keeps_the_previous_one(tmp_path, monkeypatch):
    config = TrainConfig(**GRID, iterations=4, checkpoint_every=2, log_every=1)
    fail_nth_write_to(monkeypatch, "checkpoint.pt.partial", 3)  # iteration 0, 2, then 4 fails halfway
    with pytest.raises(RunFileError, match=r"cannot write checkpoint .*checkpoint.pt: No space left on device; "
                                           r"the previous checkpoint is intact"):
        train(config, tmp_path, progress=None)
    monkeypatch.undo()
    assert not (tmp_path / "checkpoint.pt.partial").exists()
    assert checkpoint.load(tmp_path)["iteration"] == 2


@pytest.mark.parametrize("command, name, what", [
    (["evaluate", "--episodes", "2", "--num-envs", "2", "--backend", "numpy", "--json"], "out.json",
     "evaluation file"),
    (["plot", "--baseline-episodes", "0", "--out"], "out.png", "plot"),
    (["render", "--max-steps", "2", "--backend", "numpy", "--out"], "out.gif", "output"),
])
def test_every_output_is_replaced_whole_or_kept(finished_run, tmp_path, monkeypatch, capsys, command, name, what):
    """A write that fails halfway (a full disk, a kill) leaves the previous file as it was."""
    out = tmp_path / name
    out.write_bytes(b"the previous one")
    fail_nth_write_to(monkeypatch, f"{name}.partial", 1)
    line = cli_error(capsys, [command[0], str(finished_run), *command[1:], str(out)])
    assert line.endswith(f"cannot write {what} {out}: No space left on device; the previous {what} is intact")
    assert out.read_bytes() == b"the previous one" and sorted(tmp_path.iterdir()) == [out]
    monkeypatch.undo()
    assert main([command[0], str(finished_run), *command[1:], str(out)]) == 0
    assert out.read_bytes() != b"the previous one"


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs, where the test may mount one (root on Linux); skipped otherwise."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)],
                             capture_output=True).returncode == 0 if os.geteuid() == 0 else False
    if not mounted:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_run_on_a_full_disk(small_disk, tmp_path, capsys):
    run = small_disk / "run"
    argv = ["train", *GRID_FLAGS, "--iterations", "4", "--checkpoint-every", "2", "--log-every", "1",
            "--run-dir", str(run)]
    line = cli_error(capsys, argv)  # a checkpoint is 160 KiB: the second one does not fit beside the first
    assert "No space left on device" in line and str(run) in line
    assert not (run / "checkpoint.pt.partial").exists()
    saved = checkpoint.load(run)
    [json.loads(text) for text in (run / "metrics.jsonl").read_text().splitlines()]
    assert json.loads((run / "config.json").read_text())["iterations"] == 4
    # The disk freed (here: the run moved to a larger one), the run continues to the same end.
    moved = tmp_path / "moved"
    subprocess.run(["cp", "-r", str(run), str(moved)], check=True)
    assert main(["train", "--resume", "--run-dir", str(moved), "--quiet"]) == 0
    assert checkpoint.load(moved)["iteration"] == 4 and saved["iteration"] < 4
    main([*argv[:-1], str(tmp_path / "straight")])
    assert same_training(moved, tmp_path / "straight")


def test_a_config_file_that_is_not_text(tmp_path, capsys):
    (tmp_path / "settings.toml").write_bytes(b"\xff\xfe\x00binary")
    line = cli_error(capsys, ["train", "--config-file", str(tmp_path / "settings.toml"), "--run-dir",
                              str(tmp_path / "run")])
    assert f"config file {tmp_path / 'settings.toml'} is not text" in line


def test_bench_policy_tier_keeps_the_whole_rollout_at_the_smaller_batch_it_scales_down_to(monkeypatch):
    from warpsim.bench import policy_tiers
    from warpsim.configs import BenchConfig
    from warpsim.train import storage
    config = BenchConfig("tag_gridworld", 64, dict(num_taggers=2, grid_length=5), None)
    spec = Trainer(TrainConfig(**GRID)).env.spec
    budget = storage.training_bytes(TrainConfig(**{**GRID, "num_envs": 8, "rollout_steps": 64}), spec, 4 * 3 * 100)
    monkeypatch.setattr(storage, "available_bytes", lambda placement: int(budget / storage.SAFETY) + 1)
    messages: list[str] = []
    record = policy_tiers.run_policy_tier(config, "sim+policy", backend="numpy", steps=64, repeats=1,
                                          max_seconds=1e-9, progress=messages.append)
    assert record["num_envs"] < 64, "the time budget scales the batch down"
    assert record["steps_per_repeat"] == 64, f"a rollout halved for E=64 kept at E={record['num_envs']}"
    assert not any("does not fit in memory" in message for message in messages)
