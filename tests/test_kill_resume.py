"""SIGKILL at several moments of a training run, each followed by a resume: the result
equals an uninterrupted run bit for bit, and no kill leaves a file that cannot be read."""

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import pytest
from test_run_faults import same_training

from warpsim.train import checkpoint

WORKER = Path(__file__).with_name("kill_worker.py")


def start(run: Path, hold: str, seeds: str | None = None) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("NUMBA_ENABLE_CUDASIM", None)  # the numpy backend needs no simulator
    process = subprocess.Popen([sys.executable, str(WORKER), str(run), hold, *([seeds] if seeds else [])],
                               stdout=subprocess.PIPE, text=True, env=env)
    watchdog = threading.Timer(120, process.kill)  # never a hang, whatever goes wrong
    watchdog.daemon = True
    watchdog.start()
    return process


def output(process: subprocess.Popen) -> IO[str]:
    """The worker's standard output, read line by line."""
    assert process.stdout is not None
    return process.stdout


def files_are_readable(run: Path) -> None:
    """What a kill leaves: whole metrics lines but maybe one, a loadable checkpoint if config.json exists."""
    if (run / "config.json").exists():
        json.loads((run / "config.json").read_text())
        checkpoint.load(run, needs=checkpoint.RESUME_KEYS)
    if (run / "metrics.jsonl").exists():
        for line in (run / "metrics.jsonl").read_text().splitlines():
            json.loads(line)


@pytest.mark.slow
def test_runs_killed_at_any_moment_resume_to_the_uninterrupted_result(tmp_path):
    run, straight = tmp_path / "run", tmp_path / "straight"
    uninterrupted = start(straight, "none")
    holds = [
        "checkpoint:1",  # its first checkpoint (iteration 0), before config.json exists: a new run takes over
        "metrics:2",  # records 1 and 2 written, the checkpoint holds iteration 0: the resume drops them
        "checkpoint:2",  # halfway through the checkpoint of iteration 4: the one of iteration 2 is intact
    ]
    kills = 0
    for hold in holds:
        process = start(run, hold)
        lines = iter(output(process).readline, "")
        assert "holding" in (line.strip() for line in lines), f"the run never reached {hold}"
        process.send_signal(signal.SIGKILL)
        process.wait()
        kills += 1
        files_are_readable(run)
    rng = random.Random(17)
    for _ in range(2):  # and at moments nobody chose: 1 to 4 records into the resumed run, plus a random instant
        kept = checkpoint.load(run)["iteration"]  # the records the resume keeps
        process = start(run, "none")
        assert output(process).readline().strip() == "logging"
        wanted = kept + rng.randint(1, 4)
        while process.poll() is None and (run / "metrics.jsonl").read_text().count("\n") < wanted:
            time.sleep(0.002)
        time.sleep(rng.uniform(0.0, 0.08))
        assert process.poll() is None, "the run ended before the kill"
        process.kill()
        process.wait()
        kills += 1
        files_are_readable(run)
        print(f"killed at a random moment: checkpoint of iteration {checkpoint.load(run)['iteration']}, "
              f"{(run / 'metrics.jsonl').read_text().count(chr(10))} records")
    assert start(run, "none").wait() == 0
    assert uninterrupted.wait() == 0
    assert kills == 5
    assert checkpoint.load(run)["iteration"] == 24
    assert same_training(run, straight)


@pytest.mark.slow
def test_an_experiment_killed_at_any_moment_resumes_every_run_to_the_uninterrupted_result(tmp_path):
    """Three seeds in one batch. The kills leave the runs at different iterations (one run's checkpoint
    written, the next one's cut halfway): the resume trains them on in batches by iteration."""
    experiment, straight = tmp_path / "experiment", tmp_path / "straight"
    uninterrupted = start(straight, "none", seeds="3")
    holds = [
        "checkpoint:2",  # run 1's first checkpoint cut halfway: run 0 holds a run, runs 1 and 2 start anew
        "metrics:4",  # run 0's second record written, every checkpoint at iteration 0: the resume drops it
        "checkpoint:5",  # (resumed: no first checkpoints) run 1's of iteration 4 cut halfway: run 0 at 4, the others 2
    ]
    for hold in holds:
        process = start(experiment, hold, seeds="3")
        assert "holding" in (line.strip() for line in iter(output(process).readline, "")), f"never reached {hold}"
        process.send_signal(signal.SIGKILL)
        process.wait()
        for run in experiment.glob("seed=*"):
            files_are_readable(run)
    iterations = {run.name: checkpoint.load(run)["iteration"] for run in experiment.glob("seed=*")}
    assert iterations == {"seed=0": 4, "seed=1": 2, "seed=2": 2}
    process = start(experiment, "none")  # and at a moment nobody chose
    assert output(process).readline().strip() == "logging"
    time.sleep(random.Random(5).uniform(0.5, 1.5))
    process.kill()
    process.wait()
    assert start(experiment, "none").wait() == 0
    assert uninterrupted.wait() == 0
    for name in ("seed=0", "seed=1", "seed=2"):
        assert checkpoint.load(experiment / name)["iteration"] == 24
        assert same_training(experiment / name, straight / name), name


@pytest.mark.slow
def test_a_continuous_run_killed_resumes_to_the_uninterrupted_result(tmp_path):
    """The beacon with continuous actions: float32 actions in the rollout, a learned log-std in the networks
    and Adam's state."""
    run, straight = tmp_path / "run", tmp_path / "straight"
    uninterrupted = start(straight, "none", seeds="continuous")
    for hold in ("metrics:3", "checkpoint:3"):
        process = start(run, hold, seeds="continuous")
        assert "holding" in (line.strip() for line in iter(output(process).readline, "")), f"never reached {hold}"
        process.send_signal(signal.SIGKILL)
        process.wait()
        files_are_readable(run)
    assert start(run, "none").wait() == 0
    assert uninterrupted.wait() == 0
    assert checkpoint.load(run)["iteration"] == 24 and "networks.0.log_std" in checkpoint.load(run)["policies"]
    assert same_training(run, straight)
