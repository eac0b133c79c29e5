"""warpsim plot: learning curves of runs against steps and wall time, with random play."""

import json

import pytest

from warpsim.cli import main
from warpsim.train import TrainConfig
from warpsim.train.loop import train
from warpsim.train.plot import read_metrics

pytest.importorskip("matplotlib")

GRID = dict(env="tag_gridworld", env_params=dict(num_taggers=2, grid_length=5, episode_length=8),
            num_envs=4, rollout_steps=8, backend="numpy", log_every=1, opponents={"runner": "random"})


def test_plot_draws_two_runs_into_a_png(tmp_path, capsys):
    for name in ("a", "b"):
        train(TrainConfig(**GRID, iterations=3, seed=len(name)), tmp_path / name, progress=None)
    out = tmp_path / "curves.png"
    assert main(["plot", str(tmp_path / "a"), str(tmp_path / "b"), "--metric", "episode_length",
                 "--baseline-episodes", "4", "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    from PIL import Image
    with Image.open(out) as image:
        assert image.size == (1100, 400)


def test_wall_time_runs_on_across_a_resume(tmp_path):
    train(TrainConfig(**GRID, iterations=4, checkpoint_every=1), tmp_path, stop_after=2, progress=None)
    train(None, tmp_path, resume=True, progress=None)
    raw = [json.loads(line)["elapsed_seconds"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert raw[2] < raw[1], "the resumed call counts its own time"
    elapsed = [record["elapsed_seconds"] for record in read_metrics(tmp_path)]
    assert elapsed == sorted(elapsed) and elapsed[2] == pytest.approx(raw[1] + raw[2])


def test_bad_plots_are_clear_errors(tmp_path, capsys):
    assert main(["plot", str(tmp_path / "nowhere"), "--baseline-episodes", "0"]) == 2
    assert "holds no config.json" in capsys.readouterr().err
    train(TrainConfig(**GRID, iterations=1), tmp_path / "run", progress=None)
    assert main(["plot", str(tmp_path / "run"), "--metric", "speed", "--baseline-episodes", "0"]) == 2
    error = capsys.readouterr().err
    assert "has no values of 'speed'" in error and "episode_length" in error
