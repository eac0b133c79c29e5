"""Ctrl-C and SIGTERM while training: the iteration in flight finishes, every run is checkpointed,
the line printed names the iteration a resume continues from, and the resumed result equals an
uninterrupted one bit for bit. A second signal stops at once."""

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_run_faults import same_training

from warpsim.train import checkpoint
from warpsim.train.interrupts import StopRequests

# checkpoint_every above the iterations: whatever is not lost is saved by the interrupt itself.
TRAIN = ["--env", "tag_gridworld", "--set", "num_taggers=2", "--set", "grid_length=5", "--set", "episode_length=8",
         "--num-envs", "4", "--rollout-steps", "8", "--backend", "numpy", "--iterations", "40",
         "--checkpoint-every", "100", "--log-every", "3"]


def start(*argv: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("NUMBA_ENABLE_CUDASIM", None)  # the numpy backend needs no simulator
    process = subprocess.Popen([sys.executable, "-m", "warpsim.cli", "train", *argv], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)
    watchdog = threading.Timer(150, process.kill)  # never a hang, whatever goes wrong
    watchdog.daemon = True
    watchdog.start()
    return process


def wait_for_records(metrics: Path, process: subprocess.Popen, count: int) -> None:
    """Waits until ``metrics`` holds ``count`` records (the run is then under way)."""
    while process.poll() is None and (not metrics.exists() or metrics.read_text().count("\n") < count):
        time.sleep(0.005)
    assert process.poll() is None, "the run ended before the signal"


def interrupt(process: subprocess.Popen, number: int = signal.SIGINT) -> tuple[int, str, int]:
    """Sends ``number``; returns the exit code, standard error and the iteration the last line names."""
    process.send_signal(number)
    _, err = process.communicate()
    said = re.search(r"continues (?:them )?from iteration (\d+)", err)
    assert said, err
    return process.returncode, err, int(said[1])


@pytest.mark.slow
@pytest.mark.parametrize("quiet", [False, True], ids=["progress", "quiet"])
def test_a_run_interrupted_at_a_random_iteration_resumes_to_the_uninterrupted_result(tmp_path, quiet):
    run, straight = tmp_path / "run", tmp_path / "straight"
    flags = ["--quiet"] if quiet else []
    uninterrupted = start(*TRAIN, *flags, "--run-dir", str(straight))
    process = start(*TRAIN, *flags, "--run-dir", str(run))
    wait_for_records(run / "metrics.jsonl", process, 1)
    time.sleep(random.Random(11 + quiet).uniform(0.0, 0.6))
    code, err, iteration = interrupt(process)
    assert code == 130
    lines = [line for line in err.strip().splitlines() if line.startswith("interrupted")]
    assert lines == [f"interrupted by SIGINT after iteration {iteration}; its checkpoint is written: warpsim train "
                     f"--resume --run-dir {run} continues from iteration {iteration}"]
    assert 1 <= iteration < 40 and checkpoint.load(run)["iteration"] == iteration, "nothing after it was lost"
    resumed = start("--resume", "--run-dir", str(run), "--quiet")
    assert resumed.wait() == 0 and uninterrupted.wait() == 0
    assert same_training(run, straight)


@pytest.mark.slow
def test_an_experiment_interrupted_by_sigterm_checkpoints_every_run_and_resumes_to_the_uninterrupted_result(
        tmp_path):
    experiment, straight = tmp_path / "experiment", tmp_path / "straight"
    uninterrupted = start(*TRAIN, "--seeds", "3", "--quiet", "--run-dir", str(straight))
    process = start(*TRAIN, "--seeds", "3", "--quiet", "--run-dir", str(experiment))
    wait_for_records(experiment / "seed=2" / "metrics.jsonl", process, 2)
    time.sleep(random.Random(3).uniform(0.0, 0.4))
    code, err, iteration = interrupt(process, signal.SIGTERM)
    assert code == 143
    assert f"interrupted by SIGTERM after iteration {iteration}; a checkpoint of each of the batch's 3 runs" in err
    assert {checkpoint.load(experiment / f"seed={seed}")["iteration"] for seed in range(3)} == {iteration}
    assert start("--resume", "--run-dir", str(experiment), "--quiet").wait() == 0
    assert uninterrupted.wait() == 0
    for seed in range(3):
        assert same_training(experiment / f"seed={seed}", straight / f"seed={seed}"), seed


def test_a_second_signal_stops_at_once(tmp_path):
    """A SIGINT and a SIGTERM at once (two of the same signal may arrive as one): the second ends the
    run without waiting for a checkpoint; the line names the checkpoint that is there."""
    run = tmp_path / "run"
    process = start(*TRAIN, "--iterations", "100000", "--quiet", "--run-dir", str(run))
    wait_for_records(run / "metrics.jsonl", process, 1)
    process.send_signal(signal.SIGINT)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate()
    assert process.returncode == 130
    said = re.search(r"stopped at once: warpsim train --resume --run-dir \S+ continues from the last checkpoint, "
                     r"iteration (\d+)", err)
    assert said, err
    assert checkpoint.load(run)["iteration"] == int(said[1])


def test_stop_requests_take_the_first_signal_and_raise_at_the_second():
    before = signal.getsignal(signal.SIGINT)  # Python's default, or SIG_IGN in a job started in the background
    with StopRequests(announce=None) as stops:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stops.signal_number == signal.SIGTERM
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before, "the previous handler is back"
