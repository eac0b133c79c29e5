"""Learning curves: one metric of runs' metrics.jsonl against environment steps and wall time.

Each run is drawn as a line; a dashed line of the same colour is the metric under
uniformly random play of the run's environment (every role random, played here for
``baseline_episodes`` episodes). An experiment is drawn as one curve per setting, the
IQM over its seeds with its 95% interval shaded, over its runs drawn faint
(``plot_experiment``). Needs matplotlib (the ``plots`` extra).
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import TypeGuard

from warpsim.analysis.evaluate import EPISODES, random_play
from warpsim.analysis.statistics import aggregate
from warpsim.errors import InvalidValueError, RunFileError, UnavailableError, WarpsimError
from warpsim.extras import install_hint
from warpsim.files import describe_os_error, write_output
from warpsim.train.config import TrainConfig, build_saved_config
from warpsim.train.experiment import ExperimentDirectory, setting_label
from warpsim.train.run_dir import CONFIG_FILE, METRICS_FILE, output_file

MAX_VALUE = 1e300
"""Largest magnitude of a metric that is drawn: axis limits around larger ones overflow."""
MAX_BASELINE_EPISODES = 10_000
"""Most episodes of random play for a baseline: far more is a mistake that would play until killed."""


def read_metrics(run_dir: Path | str) -> list[dict]:
    """The records of a run's metrics.jsonl, with ``elapsed_seconds`` running on across resumes.

    What follows the last newline is a record cut off while it was written (a killed run):
    it is left out, as a resumed run drops it."""
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        raise RunFileError(f"{run_dir} holds no {METRICS_FILE}; give the directory of a training run")
    try:
        lines = path.read_bytes().split(b"\n")[:-1]
    except OSError as error:
        raise RunFileError(f"cannot read {path}: {describe_os_error(error)}") from None
    records, offset, previous = [], 0.0, 0.0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode())
        except UnicodeDecodeError:
            raise RunFileError(f"{path} line {number} is not UTF-8 text; is it a warpsim metrics file?") from None
        except json.JSONDecodeError as error:
            raise RunFileError(f"{path} line {number} is not JSON: {error}") from None
        _check_record(record, f"{path} line {number}")
        elapsed = record.get("elapsed_seconds") or 0.0
        if elapsed < previous:  # a resumed run counts its time from its own start
            offset += previous
        previous = elapsed
        record["elapsed_seconds"] = offset + elapsed
        records.append(record)
    return records


def _check_record(record, where: str) -> None:
    """A metrics record as a run writes it: an object with env_steps, numbers a plot can draw."""
    if not isinstance(record, dict):
        raise RunFileError(f"{where} is a JSON {type(record).__name__}, not an object of metrics")
    for key in ("env_steps", "elapsed_seconds"):
        value = record.get(key)
        if value is None and key == "elapsed_seconds":
            continue
        if not (_is_number(value) and 0 <= value < math.inf):
            raise RunFileError(f"{where} has {key}={value!r}; a metrics record has a number >= 0 there")
    for key, value in record.items():
        if _is_number(value) and math.isfinite(value) and abs(value) > MAX_VALUE:
            raise RunFileError(f"{where} has {key}={value!r}, beyond what a plot can draw (|value| <= {MAX_VALUE:g})")


def _is_number(value) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_config(run_dir: Path | str) -> TrainConfig:
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise RunFileError(f"{run_dir} holds no {CONFIG_FILE}; give the directory of a training run")
    try:
        return build_saved_config(json.loads(path.read_text()))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RunFileError(f"{path} is not JSON: {error}") from None
    except (WarpsimError, TypeError) as error:
        raise RunFileError(f"{path}: {error}") from None


def random_play_value(config: TrainConfig, metric: str, episodes: int) -> float:
    """``metric`` (a metrics.jsonl key) when every role of ``config``'s environment plays at random, as
    ``warpsim evaluate`` plays it (``evaluate.random_play``)."""
    return random_play(config, episodes).means.get(metric, math.nan)


def plot_runs(run_dirs: list[Path | str], out: Path | str, metric: str | None = None,
              baseline_episodes: int = EPISODES) -> Path:
    """Draws ``metric`` of every run against env steps and wall time into the PNG ``out``.

    ``metric`` defaults to the first counter per episode (e.g. tags_per_episode), else the return of
    the first role that learns; ``baseline_episodes=0`` leaves the random-play lines out.
    """
    out = output_file(out, "plot", ".png")
    _check_baseline_episodes(baseline_episodes)
    plt = _pyplot()
    series = [(Path(run_dir), read_config(run_dir), read_metrics(run_dir)) for run_dir in run_dirs]
    metric = metric or _default_metric(series[0][2], series[0][1].opponents)
    figure, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    levels = []
    for index, (path, config, records) in enumerate(series):
        points = curve_points(records, metric)
        if not points:
            known = sorted({key for r in records for key, value in r.items() if isinstance(value, (int, float))})
            raise InvalidValueError(f"{path}/{METRICS_FILE} has no values of {metric!r}; it has: {', '.join(known)}")
        colour = f"C{index}"
        for axis, x in zip(axes, ("env_steps", "elapsed_seconds")):
            axis.plot([r[x] for r in points], [r[metric] for r in points], color=colour, label=f"{path.name} (trained)",
                      marker=_lone(points))
        levels += [r[metric] for r in points]
        if baseline_episodes:
            level = random_play_value(config, metric, baseline_episodes)
            levels.append(level)
            for axis in axes:
                axis.axhline(level, color=colour, linestyle="--", label=f"{path.name}: random play")
    _pad(axes[0], levels)
    axes[0].set_xlabel("environment steps")
    axes[1].set_xlabel("wall time (s)")
    axes[0].set_ylabel(metric.replace("_", " "))
    axes[1].legend(loc="best", fontsize="small")
    for axis in axes:
        axis.grid(alpha=0.3)
    return _write_png(plt, figure, out)


def _write_png(plt, figure, out: Path) -> Path:
    """The figure as a PNG at ``out``, written whole (the bytes made in memory first)."""
    figure.tight_layout()
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=100)
    plt.close(figure)
    return write_output(out, image.getvalue(), "plot")


def _check_baseline_episodes(baseline_episodes: object) -> None:
    if not isinstance(baseline_episodes, int) or not 0 <= baseline_episodes <= MAX_BASELINE_EPISODES:
        raise InvalidValueError(f"baseline_episodes={baseline_episodes!r} is not allowed; give an integer in "
                                f"[0, {MAX_BASELINE_EPISODES}] (0: no random-play line)")


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UnavailableError(f"warpsim plot needs matplotlib: {install_hint('plots')}") from None
    return plt


def _pad(axis, levels: list[float]) -> None:
    """A margin around every line: a baseline at the curve's extreme would sit on the border."""
    finite = [level for level in levels if math.isfinite(level)]
    if finite:
        low, high = min(finite), max(finite)
        pad = 0.08 * (high - low) or 0.08 * abs(high) or 1.0
        axis.set_ylim(low - pad, high + pad)


def curve_points(records: list[dict], metric: str) -> list[dict]:
    """The records that hold ``metric``, less a fresh run's iteration 1 when later ones follow: it
    counts only the episodes short enough to end within the first rollout, a biased mean."""
    points = [r for r in records if _is_number(r.get(metric))]
    if len(points) > 1 and points[0].get("iteration") == 1:
        return points[1:]
    return points


def _lone(points: list) -> str | None:
    """A curve's marker: a dot where it has one point (a run shorter than its ``log_every``), which a line
    alone would not draw."""
    return "o" if len(points) == 1 else None


def _default_metric(records: list[dict], opponents: dict) -> str:
    """The first counter per episode; without counters, the return of the first role that learns
    (in MPE's scenarios and the template an episode's length is fixed); else episode_length."""
    keys = list(dict.fromkeys(key for record in records for key in record))
    counters = [key for key in keys if key.endswith("_per_episode")]
    returns = [key for key in keys if key.startswith("return_") and key.removeprefix("return_") not in opponents]
    return (counters or returns or ["episode_length"])[0]


def plot_experiment(source: Path | str, out: Path | str, metric: str | None = None,
                    baseline_episodes: int = EPISODES) -> Path:
    """Draws ``metric`` of an experiment against env steps into the PNG ``out``: per setting, the
    IQM over its seeds with a shaded 95% bootstrap interval, and each run faint; a run that
    diverged stays drawn up to its last record, dashed, ending in a cross."""
    out = output_file(out, "plot", ".png")
    _check_baseline_episodes(baseline_episodes)
    plt = _pyplot()
    experiment = ExperimentDirectory(source, resume=True)
    planned, diverged = experiment.planned_runs(), experiment.diverged()
    started = {run.name for run in planned if (experiment.path / run.name / METRICS_FILE).is_file()}
    curves = {run.name: read_metrics(experiment.path / run.name) if run.name in started else [] for run in planned}
    metric = metric or _default_metric([record for records in curves.values() for record in records],
                                       planned[0].config.opponents)
    settings = list(dict.fromkeys(setting_label(run.setting) for run in planned))
    faint = max(0.12, min(0.4, 4 / len(planned)))  # fainter as the runs grow many
    figure, axis = plt.subplots(figsize=(10, 5))
    levels: list[float] = []
    for index, label in enumerate(settings):
        colour = f"C{index % 10}"
        runs = [run for run in planned if setting_label(run.setting) == label]
        healthy: list[list[dict]] = []
        for run in runs:
            points = curve_points(curves[run.name], metric)
            xs, ys = [r["env_steps"] for r in points], [r[metric] for r in points]
            levels += ys
            if run.name in diverged:
                axis.plot(xs, ys, color=colour, alpha=0.8, linestyle="--", linewidth=1, marker=_lone(xs))
                if xs:
                    axis.plot(xs[-1:], ys[-1:], color=colour, marker="x", markersize=9, linestyle="none",
                              label=f"{run.name}: diverged by iteration {diverged[run.name]}")
            else:
                axis.plot(xs, ys, color=colour, alpha=faint, linewidth=0.8, marker=_lone(xs))
                healthy.append(points)
        steps = sorted(set.intersection(*(set(r["env_steps"] for r in points) for points in healthy))) \
            if healthy else []
        estimates = [aggregate([next(r[metric] for r in points if r["env_steps"] == step) for points in healthy])["iqm"]
                     for step in steps]
        if steps:
            axis.plot(steps, [e.value for e in estimates], color=colour, linewidth=2, marker=_lone(steps),
                      label=f"{label}: IQM of {len(healthy)} seed(s)")
            if len(healthy) > 1:
                axis.fill_between(steps, [e.low for e in estimates], [e.high for e in estimates], color=colour,
                                  alpha=0.2, linewidth=0)
        if baseline_episodes and (index == 0 or runs[0].config.env_params != planned[0].config.env_params):
            level = random_play_value(runs[0].config, metric, baseline_episodes)
            levels.append(level)
            axis.axhline(level, color=colour if index else "grey", linestyle=":", label=f"random play"
                         f"{'' if index == 0 else f' ({label})'}")
    if not any(curve_points(records, metric) for records in curves.values()):
        raise InvalidValueError(f"no run of {experiment.path} has values of {metric!r} yet")
    _pad(axis, levels)
    axis.set_xlabel("environment steps (each run's)")
    axis.set_ylabel(f"{metric.replace('_', ' ')}: IQM over seeds, shaded 95% bootstrap interval")
    axis.set_title(f"{experiment.path.name}: {len(planned)} runs, {len(settings)} setting(s)")
    axis.legend(loc="best", fontsize="small")
    axis.grid(alpha=0.3)
    return _write_png(plt, figure, out)
