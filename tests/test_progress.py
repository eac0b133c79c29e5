"""The training progress line: it fits the terminal, shows up after the first iteration and lists
the roles in one order whatever the environment."""

import io
import os
import shutil
from types import SimpleNamespace
from typing import Any, cast

import pytest
import torch

from warpsim.train import TrainConfig, progress
from warpsim.train.loop import start_line, train
from warpsim.train.progress import ProgressBar

METRICS = {"steps_per_second": 123456.0, "return_tagger": 1.5, "return_runner": -2.25, "tags_per_episode": 3.0}
GRID: dict[str, Any] = dict(env="tag_gridworld", env_params=dict(num_taggers=2, grid_length=5, episode_length=8),
            num_envs=4, rollout_steps=8, backend="numpy")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def drawn_line(columns: int, metrics: dict, monkeypatch) -> str:
    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback=(80, 24): os.terminal_size((columns, 24)))
    stream = Terminal()
    bar = ProgressBar(100, stream)
    bar.update(4, metrics)  # the time left needs a pace: two updates
    bar.update(5, metrics)
    return stream.getvalue().split("\r\033[K")[-1]


@pytest.mark.parametrize("columns", [30, 60, 80])
def test_the_line_fits_a_narrow_terminal(columns, monkeypatch):
    line = drawn_line(columns, METRICS, monkeypatch)
    assert len(line) < columns and "5/100" in line


def test_a_wide_terminal_shows_everything(monkeypatch):
    line = drawn_line(200, METRICS, monkeypatch)
    assert line.startswith("[#") and line.endswith("left") and "tags/episode 3" in line


def test_roles_are_listed_in_one_order(monkeypatch):
    swapped = {"steps_per_second": 1.0, "return_runner": -2.25, "return_tagger": 1.5}
    for metrics in (METRICS, swapped):
        assert "return runner -2.25 tagger 1.5" in drawn_line(200, metrics, monkeypatch)


def test_the_first_line_shows_after_the_first_iteration(tmp_path):
    stream = io.StringIO()
    train(TrainConfig(**GRID, iterations=3, log_every=10), tmp_path / "run", progress=stream)
    counts = [line.split("] ")[1].split(" |")[0] for line in stream.getvalue().splitlines() if line.startswith("[")]
    assert counts == ["1/3", "3/3"]


def test_the_run_says_where_and_on_what_before_the_first_iteration(tmp_path):
    stream = io.StringIO()
    train(TrainConfig(**GRID, iterations=2, checkpoint_every=1), tmp_path / "run", progress=stream, stop_after=1)
    first = stream.getvalue().splitlines()[0]
    assert first == (f"training tag_gridworld to iteration 2 in {tmp_path / 'run'}: environments on the numpy "
                     f"backend (cpu), networks on cpu in fp32, eager rollouts of 8 steps x 4 environments, eager "
                     f"updates of 4 minibatches x 4 epochs, not fused")
    stream = io.StringIO()
    train(None, tmp_path / "run", resume=True, progress=stream)
    assert stream.getvalue().splitlines()[0].startswith("resuming tag_gridworld at iteration 1, to iteration 2 in ")


def test_the_start_line_names_the_networks_gpu_and_its_compute_capability(monkeypatch, tmp_path):
    """Which GPU decides the precision auto resolves to (fp32 before compute capability 8.0)."""
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 5))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla T4")
    gpu = torch.device("cuda", 0)
    trainer = SimpleNamespace(config=TrainConfig(**GRID), iteration=0, env=SimpleNamespace(backend="cuda"),
                              env_device=gpu, device=gpu, precision="fp32", launches="cuda-graph",
                              update_launches="cuda-graph", minibatches=4, compiled=True,
                              policies=SimpleNamespace(gradient_kernels=False, loss_kernels=False))
    line = start_line(cast(Any, trainer), [cast(Any, SimpleNamespace(path=tmp_path / "run"))], resumed=False)
    assert ": environments on the cuda backend (cuda:0), networks on cuda:0 (Tesla T4, compute capability 7.5) in " \
           "fp32, cuda-graph rollouts" in line


def test_the_time_left_follows_the_pace_of_late_not_the_first_iteration(monkeypatch):
    """A first iteration of 30 s (start-up, compiling), then 0.1 s an iteration, then 0.2 s: the estimate
    leaves the 30 s out, and follows the slower pace within a window of updates."""
    clock = iter([30.0 + 1.0 * n for n in range(12)] + [42.0 + 2.0 * n for n in range(1, 12)])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    stream = io.StringIO()
    bar = progress.ProgressBar(1000, stream)
    for iteration in [1, *range(10, 111, 10)]:
        bar.update(iteration, METRICS)
    assert "left" not in stream.getvalue().splitlines()[0], "no pace yet after one update"
    assert stream.getvalue().splitlines()[-1].endswith("| 1:29 left"), "890 iterations at 0.1 s"
    for iteration in range(120, 221, 10):
        bar.update(iteration, METRICS)
    assert stream.getvalue().splitlines()[-1].endswith("| 2:36 left"), "780 iterations at 0.2 s"
