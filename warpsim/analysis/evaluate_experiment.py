"""``warpsim evaluate`` of an experiment: every run evaluated as alone, then one measure
aggregated over each setting's seeds (statistics.py), best setting first.

The measure is a per-episode mean of one way of play (``Evaluation.means``): by default
the return of the first learning role's agents, for which higher is better. A run that
diverged is listed as diverged, never left out silently, and counts in no aggregate.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

from warpsim.analysis.evaluate import RunEvaluation, evaluate_runs, finite_or_none
from warpsim.analysis.statistics import AGGREGATES, Estimate, aggregate, compare
from warpsim.errors import InvalidValueError
from warpsim.files import write_output
from warpsim.registry import layout
from warpsim.train.checkpoint import FILE_NAME
from warpsim.train.episodes import figure_names
from warpsim.train.experiment import ExperimentDirectory, setting_label


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
    lower_is_better: bool = False

    def improvement_over(self, other: SettingSummary) -> dict[str, Estimate]:
        """``statistics.compare`` of this setting against ``other``, oriented so that a lead is positive."""
        first, second = (other, self) if self.lower_is_better else (self, other)
        compared = compare(first.scores, second.scores)
        return {"iqm_improvement": compared["iqm_difference"],
                "probability_of_improvement": compared["probability_of_improvement"]}

    def record(self) -> dict:
        return {"setting": self.setting, "seeds": self.seeds, "scores": self.scores, "diverged": self.diverged,
                "untrained": self.untrained,
                **{name: estimate.record() for name, estimate in self.estimates.items()}}


@dataclass(frozen=True)
class Comparison:
    """How much better one setting did than another on the measure, over their seeds."""

    first: dict
    second: dict
    estimates: dict[str, Estimate]
    """``iqm_improvement`` (the first's IQM ahead of the second's, in the measure's better direction) and
    ``probability_of_improvement`` (that a run of the first beats a run of the second), with 95% intervals."""

    def __str__(self) -> str:
        improvement, probability = self.estimates["iqm_improvement"], self.estimates["probability_of_improvement"]
        return (f"{setting_label(self.first)} over {setting_label(self.second)}: IQM ahead by {improvement}; "
                f"P(better) {probability}")

    def record(self) -> dict:
        return {"first": self.first, "second": self.second,
                **{name: estimate.record() for name, estimate in self.estimates.items()}}


@dataclass(frozen=True)
class ExperimentEvaluation:
    """Every run's evaluation (None for a diverged run); per play, each setting's aggregates, best IQM
    first; the first play's settings compared; and the verdict on the best one."""

    source: str
    measure: str
    lower_is_better: bool
    plays: tuple[str, ...]
    runs: list[dict]
    """Per run: name, setting, seed, diverged_at, and (unless it diverged or was never trained) its
    RunEvaluation and its score, the measure in the first play (NaN otherwise)."""
    settings: dict[str, list[SettingSummary]]
    """Per play, each setting's summary, best first."""
    comparisons: list[Comparison]
    """The first play's settings, each pair (the better ranked first) or each against the baseline."""
    verdict: str

    @property
    def play(self) -> str:
        """The play the runs' lines, the comparisons and the verdict are of."""
        return self.plays[0]

    def __str__(self) -> str:
        lines = [f"experiment {self.source}: {len(self.runs)} runs; measure {self.measure} in {self.play} play "
                 f"({'lower' if self.lower_is_better else 'higher'} is better)",
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
        for play, summaries in self.settings.items():
            lines.append(f"per setting, {play} play, over its seeds: {', '.join(AGGREGATES)} with 95% bootstrap "
                         f"intervals, best IQM first:")
            for summary in summaries:
                diverged = (f", {summary.diverged} diverged" if summary.diverged else "") + (
                    f", {summary.untrained} not trained yet" if summary.untrained else "")
                figures = "  ".join(f"{name} {estimate}" for name, estimate in summary.estimates.items())
                lines.append(f"  {setting_label(summary.setting)} ({len(summary.scores)} seeds{diverged}): {figures}")
        if self.comparisons:
            lines.append(f"compared, {self.play} play: the IQM's lead and the probability of improvement, with 95% "
                         f"bootstrap intervals:")
            lines += [f"  {comparison}" for comparison in self.comparisons]
        lines.append(self.verdict)
        return "\n".join(lines)

    def record(self) -> dict:
        runs = [{key: value for key, value in run.items() if key != "evaluation"}
                | {"evaluation": None if run["evaluation"] is None else run["evaluation"].record()}
                for run in self.runs]
        return {"source": self.source, "measure": self.measure, "lower_is_better": self.lower_is_better,
                "play": self.play, "runs": runs,
                "settings": {play: [summary.record() for summary in summaries]
                             for play, summaries in self.settings.items()},
                "comparisons": [comparison.record() for comparison in self.comparisons], "verdict": self.verdict}

    def write_json(self, path: Path | str) -> Path:
        """Writes ``record()`` to ``path`` atomically; NaN figures become null."""
        text = json.dumps(finite_or_none(self.record()), indent=1, allow_nan=False) + "\n"
        return write_output(path, text.encode(), "evaluation file")

    def write_csv(self, path: Path | str) -> Path:
        """Writes every figure of every measure and play to ``path`` (CSV): a row per run and figure, and
        a row per setting, figure and aggregate with its interval; written whole."""
        rows: list[list] = [["kind", "setting", "seed", "play", "figure", "aggregate", "value", "low", "high"]]
        evaluated = [run for run in self.runs if run["evaluation"] is not None]
        names = sorted(evaluated[0]["evaluation"].plays[self.play].means) if evaluated else []
        for play in self.plays:
            for name in names:
                for run in evaluated:
                    rows.append(["run", setting_label(run["setting"]), run["seed"], play, name, "",
                                 run["evaluation"].plays[play].means[name], "", ""])
                for label in dict.fromkeys(setting_label(run["setting"]) for run in evaluated):
                    scores = [run["evaluation"].plays[play].means[name] for run in evaluated
                              if setting_label(run["setting"]) == label]
                    for aggregate_name, estimate in aggregate(scores).items():
                        rows.append(["setting", label, "", play, name, aggregate_name, estimate.value, estimate.low,
                                     estimate.high])
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        return write_output(path, text.getvalue().encode(), "evaluation table")


def evaluate_experiment(source: Path | str, episodes: int = 200, *, measure: str | None = None,
                        lower_is_better: bool = False, baseline: str | None = None, progress=None,
                        **settings) -> ExperimentEvaluation:
    """Evaluates every run of the experiment in ``source`` as ``evaluate_run`` would (``settings``
    are its keyword arguments), and aggregates ``measure`` (a key of ``Evaluation.means``, by
    default ``return_<first learning role>``; higher is better unless ``lower_is_better``) of each
    play over each setting's seeds; compares the first play's settings, each pair or each against
    ``baseline`` (a setting as printed, e.g. ``learning_rate=0.001``), and names the best."""
    experiment = ExperimentDirectory(source, resume=True)
    planned, diverged = experiment.planned_runs(), experiment.diverged()
    plays = tuple(settings.get("plays", ("sampled", "greedy")))
    config = planned[0].config
    spec, _ = layout(config.env, 1, **config.env_params)
    learning = [role for role in spec.role_names if role not in config.opponents]
    measure = measure or f"return_{learning[0]}"
    names = figure_names(list(spec.role_names), list(spec.counters))
    if measure not in names:  # before anything is played
        raise InvalidValueError(f"--measure {measure!r} is not a per-episode figure of {config.env}; choose one of "
                                f"{', '.join(sorted(names))}")
    labels = list(dict.fromkeys(setting_label(run.setting) for run in planned))
    if baseline is not None and baseline not in labels:
        raise InvalidValueError(f"--baseline {baseline!r} is not a setting of {experiment.path}; its settings: "
                                f"{'; '.join(labels)}")
    runs: list[dict] = [{"name": run.name, "setting": run.setting, "seed": run.config.seed,
                         "diverged_at": diverged.get(run.name), "evaluation": None, "score": math.nan,
                         "trained": (experiment.path / run.name / FILE_NAME).is_file()} for run in planned]
    playable = [entry for entry in runs if entry["trained"] and entry["name"] not in diverged]
    evaluations = evaluate_runs([experiment.path / entry["name"] for entry in playable], episodes,
                                progress=progress, **settings) if playable else []
    for entry, evaluation in zip(playable, evaluations):
        entry["evaluation"], entry["score"] = evaluation, evaluation.plays[plays[0]].means[measure]
    summaries = {play: _summaries(runs, labels, play, measure, lower_is_better) for play in plays}
    ranked = summaries[plays[0]]
    comparisons = _comparisons(ranked, baseline)
    return ExperimentEvaluation(str(source), measure, lower_is_better, plays, runs, summaries, comparisons,
                                _verdict(ranked, comparisons))


def _summaries(runs: list[dict], labels: list[str], play: str, measure: str,
               lower_is_better: bool) -> list[SettingSummary]:
    """Each setting's summary of ``play``, best IQM first."""
    summaries = []
    for label in labels:
        members = [run for run in runs if setting_label(run["setting"]) == label]
        counted = [run for run in members if run["evaluation"] is not None]
        scores = [run["evaluation"].plays[play].means[measure] for run in counted]
        diverged_count = sum(run["diverged_at"] is not None for run in members)
        summaries.append(SettingSummary(members[0]["setting"], [run["seed"] for run in counted], scores,
                                        diverged_count, len(members) - len(counted) - diverged_count,
                                        aggregate(scores), lower_is_better))
    sign = 1 if lower_is_better else -1
    return sorted(summaries, key=lambda summary: sign * summary.estimates["iqm"].value if summary.scores
                  else math.inf)


def _comparisons(ranked: list[SettingSummary], baseline: str | None) -> list[Comparison]:
    """Each pair of settings with scores, the better ranked first; or each setting against ``baseline``."""
    scored = [summary for summary in ranked if summary.scores]
    if baseline is not None:
        base = next(summary for summary in scored if setting_label(summary.setting) == baseline)
        pairs = [(summary, base) for summary in scored if summary is not base]
    else:
        pairs = [(first, second) for i, first in enumerate(scored) for second in scored[i + 1:]]
    return [Comparison(first.setting, second.setting, first.improvement_over(second)) for first, second in pairs]


def _verdict(ranked: list[SettingSummary], comparisons: list[Comparison]) -> str:
    """The one line on the best setting: the first ranked, if its lead over every other is clear (the
    leads ``comparisons`` holds already are not compared again)."""
    scored = [summary for summary in ranked if summary.scores]
    if len(scored) < 2:
        return "best: nothing to compare (fewer than two settings with evaluated runs)"
    best = setting_label(scored[0].setting)
    compared = {setting_label(comparison.second): comparison.estimates for comparison in comparisons
                if setting_label(comparison.first) == best}
    leads = [(compared.get(setting_label(other.setting)) or scored[0].improvement_over(other))["iqm_improvement"]
             for other in scored[1:]]
    if all(lead.low > 0 for lead in leads):
        return f"best: {best}, its IQM ahead of every other setting's (each lead's 95% interval above 0)"
    return (f"best: none is distinguishable: {best} ranks first, but its lead over another setting has a 95% "
            f"interval that reaches 0 or below (more seeds narrow the intervals)")


def _figures(evaluation: RunEvaluation, play: str, measure: str) -> str:
    """A run's line: the measure (and random play's), its counters per episode and its episode length."""
    result = evaluation.plays[play]
    parts = [f"{measure} {result.means[measure]:.4g}"]
    if result.baseline is not None:
        parts[0] += f" (random play {result.baseline.means.get(measure, math.nan):.4g})"
    parts += [f"{name}/episode {value:.3g}" for name, value in result.counters.items()]
    parts.append(f"length {result.episode_length:.1f}")
    return " | ".join(parts)
