"""The aggregates researchers report over a setting's seeds: the mean, the median and the
interquartile mean (IQM), each with a 95% percentile-bootstrap confidence interval.

The definitions are rliable's (Agarwal et al., 2021): the IQM is the mean of the middle
half of the scores (``scipy.stats.trim_mean`` cutting 25% at each end), and the interval
is the percentile bootstrap over the runs (``scipy.stats.bootstrap``). Over the runs of
one task, rliable's stratified bootstrap is this one. The resampling is seeded, so a
report is the same every time it is made from the same scores.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 10_000
SEED = 0
"""Seeds the bootstrap's resampling: the same scores always give the same interval."""


def iqm(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """The interquartile mean: the mean of the scores left after cutting the lowest and the highest 25%."""
    from scipy import stats  # a second of every command line's start, paid here by those that aggregate

    return stats.trim_mean(scores, 0.25, axis=axis)


AGGREGATES: dict[str, Callable[..., Any]] = {"iqm": iqm, "mean": np.mean, "median": np.median}
"""Each aggregate by its name in reports, as a function of an array and an axis."""


@dataclass(frozen=True)
class Estimate:
    """An aggregate of scores and its confidence interval (NaN bounds from fewer than two scores)."""

    value: float
    low: float
    high: float

    def __str__(self) -> str:
        interval = "" if math.isnan(self.low) else f" [{self.low:.3g}, {self.high:.3g}]"
        return f"{self.value:.3g}{interval}"

    def record(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high}


def aggregate(scores: list[float] | np.ndarray) -> dict[str, Estimate]:
    """Every aggregate of ``scores`` (one per run; NaN ones left out) with its 95% interval."""
    values = np.asarray(scores, dtype=np.float64)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return {name: Estimate(math.nan, math.nan, math.nan) for name in AGGREGATES}
    estimates = {}
    for name, function in AGGREGATES.items():
        value = float(function(values, axis=-1))
        if values.size < 2:
            estimates[name] = Estimate(value, math.nan, math.nan)
        elif np.all(values == values[0]):  # every resample is the same: the interval is the point
            estimates[name] = Estimate(value, value, value)
        else:
            from scipy import stats

            interval = stats.bootstrap((values,), function, confidence_level=CONFIDENCE, n_resamples=RESAMPLES,
                                       method="percentile", vectorized=True, axis=-1,
                                       random_state=np.random.default_rng(SEED)).confidence_interval
            estimates[name] = Estimate(value, float(interval.low), float(interval.high))
    return estimates


def improvement_probability(better: np.ndarray, other: np.ndarray, axis: int = -1) -> np.ndarray:
    """P(X > Y): the chance that a run of the first setting scores above a run of the second, ties
    counting half (rliable's probability of improvement, over the runs of one task)."""
    x, y = np.moveaxis(better, axis, -1)[..., :, None], np.moveaxis(other, axis, -1)[..., None, :]
    return (x > y).mean(axis=(-2, -1)) + 0.5 * (x == y).mean(axis=(-2, -1))


def iqm_difference(first: np.ndarray, second: np.ndarray, axis: int = -1) -> np.ndarray:
    return iqm(first, axis=axis) - iqm(second, axis=axis)


def compare(first: list[float] | np.ndarray, second: list[float] | np.ndarray) -> dict[str, Estimate]:
    """The first setting's scores against the second's (NaN ones left out): the difference of their
    IQMs and the probability of improvement P(first > second), each with its 95% percentile-bootstrap
    interval, the two settings' runs resampled apart."""
    x, y = (np.asarray(scores, dtype=np.float64) for scores in (first, second))
    x, y = x[~np.isnan(x)], y[~np.isnan(y)]
    comparisons = {"iqm_difference": iqm_difference, "probability_of_improvement": improvement_probability}
    if x.size == 0 or y.size == 0:
        return {name: Estimate(math.nan, math.nan, math.nan) for name in comparisons}
    estimates = {}
    for name, function in comparisons.items():
        value = float(function(x, y))
        if x.size < 2 or y.size < 2:
            estimates[name] = Estimate(value, math.nan, math.nan)
        elif np.all(x == x[0]) and np.all(y == y[0]):
            estimates[name] = Estimate(value, value, value)
        else:
            from scipy import stats

            interval = stats.bootstrap((x, y), function, confidence_level=CONFIDENCE, n_resamples=RESAMPLES,
                                       method="percentile", vectorized=True, axis=-1, paired=False,
                                       random_state=np.random.default_rng(SEED)).confidence_interval
            estimates[name] = Estimate(value, float(interval.low), float(interval.high))
    return estimates
