"""``warpsim evaluate`` of an experiment: every run evaluated as alone, then one measure
aggregated over each setting's seeds (statistics.py), best setting first.

The measure is a per-episode mean of one way of play (``Evaluation.means``): by default
the return of the first learning role's agents, for which higher is better. A run that
diverged is listed as diverged, never left out silently, and counts in no aggregate.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from warpsim.errors import InvalidValueError
from warpsim.files import write_output
from warpsim.train.checkpoint import FILE_NAME
from warpsim.train.evaluate import RunEvaluation, evaluate_run, finite_or_none
from warpsim.train.experiment import ExperimentDirectory, setting_label
from warpsim.train.statistics import AGGREGATES, Estimate, aggregate


@dataclass(frozen=True)
class SettingSummary:
    """One setting of a sweep (all runs, without one) over its seeds."""

    setting: dict
    seeds: list[int]
    """The seeds of its runs that count: those trained that did not diverge."""
    scores: list[float]
    """The measure of each of those runs, in the order of ``seeds``."""
    diverged: int
    """How many of its runs diverged."""
    untrained: int
    """How many of its runs have no checkpoint yet (an experiment stopped before they started)."""
    estimates: dict[str, Estimate]
    """Each aggregate of ``scores`` (``statistics.AGGREGATES``) with its 95% interval."""

    def record(self) -> dict:
        return {"setting": self.setting, "seeds": self.seeds, "scores": self.scores, "diverged": self.diverged,
                "untrained": self.untrained,
                **{name: estimate.record() for name, estimate in self.estimates.items()}}


@dataclass(frozen=True)
class ExperimentEvaluation:
    """Every run's evaluation (None for a diverged run) and each setting's aggregates, best IQM first."""

    source: str
    measure: str
    play: str
    runs: list[dict]
    """Per run: name, setting, seed, diverged_at and (unless it diverged) its RunEvaluation."""
    settings: list[SettingSummary]

    def __str__(self) -> str:
        lines = [f"experiment {self.source}: {len(self.runs)} runs; measure {self.measure} in {self.play} play",
                 "per run (every figure of every play: --json):"]
        width = max(len(run["name"]) for run in self.runs)
        for run in self.runs:
            evaluation: RunEvaluation | None = run["evaluation"]
            if evaluation is None:
                status = (f"diverged by iteration {run['diverged_at']}" if run["diverged_at"] is not None
                          else "not trained yet (continue the experiment with warpsim train --resume)")
                lines.append(f"  {run['name']:<{width}}  {status}")
            else:
                lines.append(f"  {run['name']:<{width}}  {_figures(evaluation, self.play, self.measure)}")
        lines.append(f"per setting, over its seeds: {', '.join(AGGREGATES)} with 95% bootstrap intervals, "
                     f"highest IQM first:")
        for summary in self.settings:
            diverged = (f", {summary.diverged} diverged" if summary.diverged else "") + (
                f", {summary.untrained} not trained yet" if summary.untrained else "")
            figures = "  ".join(f"{name} {estimate}" for name, estimate in summary.estimates.items())
            lines.append(f"  {setting_label(summary.setting)} ({len(summary.scores)} seeds{diverged}): {figures}")
        return "\n".join(lines)

    def record(self) -> dict:
        runs = [{key: value for key, value in run.items() if key != "evaluation"}
                | {"evaluation": None if run["evaluation"] is None else run["evaluation"].record()}
                for run in self.runs]
        return {"source": self.source, "measure": self.measure, "play": self.play, "runs": runs,
                "settings": [summary.record() for summary in self.settings]}

    def write_json(self, path: Path | str) -> Path:
        """Writes ``record()`` to ``path`` atomically; NaN figures become null."""
        text = json.dumps(finite_or_none(self.record()), indent=1, allow_nan=False) + "\n"
        return write_output(path, text.encode(), "evaluation file")


def evaluate_experiment(source: Path | str, episodes: int = 200, *, measure: str | None = None,
                        progress=None, **settings) -> ExperimentEvaluation:
    """Evaluates every run of the experiment in ``source`` as ``evaluate_run`` would (``settings``
    are its keyword arguments), and aggregates ``measure`` (a key of ``Evaluation.means``, by
    default ``return_<first learning role>``) of the first play over each setting's seeds."""
    experiment = ExperimentDirectory(source, resume=True)
    planned, diverged = experiment.planned_runs(), experiment.diverged()
    plays = settings.get("plays", ("sampled", "greedy"))
    runs: list[dict] = []
    for index, run in enumerate(planned):
        entry = {"name": run.name, "setting": run.setting, "seed": run.config.seed,
                 "diverged_at": diverged.get(run.name), "evaluation": None, "score": math.nan,
                 "trained": (experiment.path / run.name / FILE_NAME).is_file()}
        if run.name not in diverged and entry["trained"]:
            if progress:
                progress.write(f"evaluating run {index + 1}/{len(planned)}: {run.name}\n")
            evaluation = evaluate_run(experiment.path / run.name, episodes, **settings)
            entry["evaluation"] = evaluation
            means = evaluation.plays[plays[0]].means
            learning = [role for role in evaluation.plays[plays[0]].returns if role not in run.config.opponents]
            measure = measure or f"return_{learning[0]}"
            if measure not in means:
                raise InvalidValueError(f"--measure {measure!r} is not a per-episode figure of {run.config.env}; "
                                        f"choose one of {', '.join(sorted(means))}")
            entry["score"] = means[measure]
        runs.append(entry)
    summaries = []
    for label in dict.fromkeys(setting_label(run["setting"]) for run in runs):
        members = [run for run in runs if setting_label(run["setting"]) == label]
        counted = [run for run in members if run["evaluation"] is not None]
        scores = [run["score"] for run in counted]
        diverged_count = sum(run["diverged_at"] is not None for run in members)
        summaries.append(SettingSummary(members[0]["setting"], [run["seed"] for run in counted], scores,
                                        diverged_count, len(members) - len(counted) - diverged_count,
                                        aggregate(scores)))
    summaries.sort(key=lambda summary: -summary.estimates["iqm"].value if summary.scores else math.inf)
    return ExperimentEvaluation(str(source), measure or "(no run to measure)", plays[0], runs, summaries)


def _figures(evaluation: RunEvaluation, play: str, measure: str) -> str:
    """A run's line: the measure (and random play's), its counters per episode and its episode length."""
    result = evaluation.plays[play]
    parts = [f"{measure} {result.means[measure]:.4g}"]
    if result.baseline is not None:
        parts[0] += f" (random play {result.baseline.means.get(measure, math.nan):.4g})"
    parts += [f"{name}/episode {value:.3g}" for name, value in result.counters.items()]
    parts.append(f"length {result.episode_length:.1f}")
    return " | ".join(parts)
