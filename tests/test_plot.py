"""warpsim plot: learning curves of runs against steps and wall time, with random play."""

import json
from typing import Any

import pytest

from warpsim.analysis.plot import curve_points, plot_experiment, plot_runs, read_metrics
from warpsim.cli import main
from warpsim.train import TrainConfig
from warpsim.train.loop import train, train_experiment

pytest.importorskip("matplotlib")

GRID: dict[str, Any] = dict(env="tag_gridworld", env_params=dict(num_taggers=2, grid_length=5, episode_length=8),
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


def drawn(monkeypatch, plot) -> list:
    """Each figure ``plot()`` draws, kept instead of written."""
    from warpsim.analysis import plot as plotting
    figures: list = []

    def kept(plt, figure, out):
        figures.append(figure)
        return out

    monkeypatch.setattr(plotting, "_write_png", kept)
    plot()
    return figures


def test_a_curve_of_one_point_is_drawn_as_a_dot(tmp_path, monkeypatch):
    """A run shorter than its log_every has one point once iteration 1 is left out: a line alone draws nothing."""
    train(TrainConfig(**dict(GRID, log_every=10), iterations=5), tmp_path / "run", progress=None)
    (figure,) = drawn(monkeypatch, lambda: plot_runs([tmp_path / "run"], tmp_path / "c.png", "episode_length",
                                                      baseline_episodes=0))
    lines = [line for axis in figure.axes for line in axis.get_lines()]
    assert len(lines) == 2 and all(len(line.get_xdata()) == 1 and line.get_marker() == "o" for line in lines)
    train_experiment(TrainConfig(**dict(GRID, log_every=10), iterations=5), tmp_path / "e", seeds=(0, 1),
                     progress=None)
    (figure,) = drawn(monkeypatch, lambda: plot_experiment(tmp_path / "e", tmp_path / "e.png", "episode_length",
                                                           baseline_episodes=0))
    lines = figure.axes[0].get_lines()
    assert len(lines) == 3 and all(line.get_marker() == "o" for line in lines), "two runs and their IQM"
    train(TrainConfig(**GRID, iterations=3), tmp_path / "longer", progress=None)
    (figure,) = drawn(monkeypatch, lambda: plot_runs([tmp_path / "longer"], tmp_path / "l.png", "episode_length",
                                                      baseline_episodes=0))
    assert all(line.get_marker() == "None" for axis in figure.axes for line in axis.get_lines())


def test_wall_time_runs_on_across_a_resume(tmp_path):
    # six iterations before the stop, one after: the resumed call's own clock stays well behind the first's
    # even when a busy machine slows its start
    train(TrainConfig(**GRID, iterations=7, checkpoint_every=1), tmp_path, stop_after=6, progress=None)
    train(None, tmp_path, resume=True, progress=None)
    raw = [json.loads(line)["elapsed_seconds"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert raw[6] < raw[5], "the resumed call counts its own time"
    elapsed = [record["elapsed_seconds"] for record in read_metrics(tmp_path)]
    assert elapsed == sorted(elapsed) and elapsed[6] == pytest.approx(raw[5] + raw[6])


def test_bad_plots_are_clear_errors(tmp_path, capsys):
    assert main(["plot", str(tmp_path / "nowhere"), "--baseline-episodes", "0"]) == 2
    assert "holds no config.json" in capsys.readouterr().err
    train(TrainConfig(**GRID, iterations=1), tmp_path / "run", progress=None)
    assert main(["plot", str(tmp_path / "run"), "--metric", "speed", "--baseline-episodes", "0"]) == 2
    error = capsys.readouterr().err
    assert "has no values of 'speed'" in error and "episode_length" in error


def test_a_partial_last_line_is_left_out_as_resume_drops_it(tmp_path):
    train(TrainConfig(**GRID, iterations=2), tmp_path, progress=None)
    whole = read_metrics(tmp_path)
    with (tmp_path / "metrics.jsonl").open("a") as metrics:
        metrics.write('{"iteration": 3, "env_st')
    assert read_metrics(tmp_path) == whole


def test_the_curve_leaves_out_iteration_one_whose_mean_favours_short_episodes():
    records = [{"iteration": 1, "episode_length": 3.0}, {"iteration": 2, "episode_length": 7.0}]
    assert curve_points(records, "episode_length") == records[1:]
    resumed = [{"iteration": 5, "episode_length": 6.0}, {"iteration": 6, "episode_length": 7.0}]
    assert curve_points(resumed, "episode_length") == resumed
    assert curve_points(records[:1], "episode_length") == records[:1], "a lone point is still drawn"


def test_the_random_play_line_lies_inside_the_axes(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt
    train(TrainConfig(**GRID, iterations=3), tmp_path, progress=None)
    values = [record["episode_length"] for record in curve_points(read_metrics(tmp_path), "episode_length")]
    monkeypatch.setattr("warpsim.analysis.plot.random_play_value", lambda *args: min(values))
    limits = []
    monkeypatch.setattr(plt, "close", lambda figure: limits.append(figure.axes[0].get_ylim()))
    plot_runs([tmp_path], tmp_path / "a.png", "episode_length", baseline_episodes=1)
    (low, high), = limits
    span = max(values) - min(values) or abs(max(values))
    # matplotlib's own 5% margin leaves a dashed line at the extreme hard to tell from the frame.
    assert min(values) - low > 0.075 * span and high - max(values) > 0.075 * span


@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("plotted")
    train(TrainConfig(**GRID, iterations=2), run, progress=None)
    return run


@pytest.mark.parametrize("content, expected", [
    (b"\x00\xff\xfe binary\n", "line 1 is not UTF-8 text"),
    ('{"env_steps": 8}\n'.encode("utf-16"), "line 1 is not UTF-8 text"),
    (b'[1, 2, 3]\n', "line 1 is a JSON list, not an object of metrics"),
    (b'{"env_steps": 8, "episode_length": 3.0}\n{"episode_length": 4.0}\n',
     "line 2 has env_steps=None; a metrics record has a number >= 0 there"),
    (b'{"env_steps": "ten", "episode_length": 3.0}\n', "line 1 has env_steps='ten'; a metrics record has a number"),
    (b'{"env_steps": 8, "episode_length": 1e308}\n', "line 1 has episode_length=1e+308, beyond what a plot can draw"),
    (b'{"env_steps": 8, "elapsed_seconds": "soon"}\n', "line 1 has elapsed_seconds='soon'"),
    (b'{"env_steps": 8}\n{"env_steps": 16\n', "line 2 is not JSON"),
])
def test_a_corrupt_metrics_file_is_one_line_naming_the_file_and_line(one_run, tmp_path, capsys, content, expected):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_bytes((one_run / "config.json").read_bytes())
    (run / "metrics.jsonl").write_bytes(content)
    assert main(["plot", str(run), "--metric", "episode_length", "--baseline-episodes", "0"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and f"{run / 'metrics.jsonl'} {expected}" in lines[0], lines
    assert not captured.out and sorted(run.iterdir()) == [run / "config.json", run / "metrics.jsonl"]


def test_the_plot_s_random_line_is_evaluate_s_random_play(tmp_path):
    """One definition of random play (every role at random, evaluate's default episodes, environments
    and seed): the dashed line and evaluate's baseline are the same figure."""
    from warpsim.analysis.evaluate import evaluate_run
    from warpsim.analysis.plot import random_play_value
    from warpsim.train import TrainConfig, train

    config = TrainConfig(env="tag_gridworld", env_params=dict(num_taggers=2, grid_length=5, episode_length=10),
                         num_envs=4, rollout_steps=4, iterations=1, backend="numpy", seed=7)
    train(config, tmp_path / "run", progress=None)
    evaluation = evaluate_run(tmp_path / "run", backend="numpy")
    assert evaluation.random is not None
    for metric in ("tags_per_episode", "episode_length"):
        assert random_play_value(config, metric, evaluation.settings["episodes"]) == evaluation.random.means[metric]


def test_the_default_is_a_counter_else_the_return_of_the_first_role_that_learns(tmp_path, monkeypatch):
    from warpsim.analysis import plot

    asked: list[str] = []

    def random_play_value(config, metric: str, episodes: int) -> float:
        asked.append(metric)
        return 0.0

    monkeypatch.setattr(plot, "random_play_value", random_play_value)
    train(TrainConfig(**GRID, iterations=2), tmp_path / "grid", progress=None)
    # simple_adversary counts nothing and every episode lasts max_cycles: its length would be a flat line
    train(TrainConfig(env="simple_adversary", num_envs=2, rollout_steps=25, iterations=2, backend="numpy",
                      log_every=1, opponents={"adversary": "random"}), tmp_path / "mpe", progress=None)
    plot_runs([tmp_path / "grid"], tmp_path / "grid.png", baseline_episodes=1)
    plot_runs([tmp_path / "mpe"], tmp_path / "mpe.png", baseline_episodes=1)
    assert asked == ["tags_per_episode", "return_agent"]
