"""The sweeps of docs/benchmarks.md: one named config run at a series of E or N.

``sweep-E`` is train-ref (tag_continuous, 10 taggers + 100 runners, partial K=10, the
reference training rules) at E = 1, 4, 16, ..., 16384; ``sweep-N`` is tag_continuous
with partial K=10 at E=256 and N = 10 .. 4096, one tagger in 20 (at least one) and
K = min(10, N - 1), since an agent has only N - 1 others to observe.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from warpsim.bench.runner import Progress, run_sim
from warpsim.configs import NAMED_CONFIGS, BenchConfig
from warpsim.errors import InvalidValueError
from warpsim.validation import require_int

AGENTS_PER_TAGGER = 20
"""sweep-N makes one agent in this many a tagger (at least one)."""
OBSERVED = 10
"""K of the partial observations of sweep-N (N - 1 where that is fewer)."""


@dataclass(frozen=True)
class Sweep:
    """A named config stepped over ``values`` of one size: ``num_envs`` (E) or ``num_agents`` (N)."""

    name: str
    swept: str
    """``"num_envs"`` or ``"num_agents"``."""
    values: tuple[int, ...]
    base: BenchConfig
    """The config of every point, but for the swept size."""
    smallest: int
    """The smallest value a point may take."""

    @property
    def symbol(self) -> str:
        return "E" if self.swept == "num_envs" else "N"

    def point(self, value: int) -> BenchConfig:
        """The config of the point ``value``."""
        value = require_int(f"{self.name}: {self.symbol}", value, self.smallest)
        if self.swept == "num_envs":
            return BenchConfig(self.base.env, value, self.base.params, self.name)
        taggers = max(1, value // AGENTS_PER_TAGGER)
        params = dict(self.base.params, num_taggers=taggers, num_runners=value - taggers,
                      num_other_agents_observed=min(OBSERVED, value - 1))
        return BenchConfig(self.base.env, self.base.num_envs, params, self.name)


_TRAIN_REF = NAMED_CONFIGS["train-ref"]
NAMED_SWEEPS = {
    "sweep-E": Sweep("sweep-E", "num_envs", tuple(4 ** k for k in range(8)), _TRAIN_REF, smallest=1),
    "sweep-N": Sweep("sweep-N", "num_agents", (10, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096),
                     BenchConfig("tag_continuous", 256,
                                 dict(use_full_observation=False, num_other_agents_observed=OBSERVED)),
                     smallest=2),
}
"""sweep-E: E = 1 .. 16384 in powers of 4 at N = 110; sweep-N: N = 10 .. 4096 at E = 256."""


def run_sweep(sweep: Sweep, values: Iterable[int] | None = None, num_envs: int | None = None,
              progress: Progress | None = None, **run_options: Any) -> Iterator[dict]:
    """Yields one sim-tier record per point of ``sweep`` (``values`` replaces its own).

    ``num_envs`` replaces E of a sweep over N; ``run_options`` go to :func:`run_sim`.
    Every point is checked before the first one runs.
    """
    if num_envs is not None:
        if sweep.swept == "num_envs":
            raise InvalidValueError(f"{sweep.name} sweeps E itself; give its points as values, not num_envs")
        sweep = replace(sweep, base=replace(sweep.base, num_envs=num_envs))
    values = sweep.values if values is None else tuple(values)
    configs = [sweep.point(value) for value in values]
    for index, (value, config) in enumerate(zip(values, configs)):
        where = f"{sweep.name} point {index + 1}/{len(configs)} ({sweep.symbol}={value})"
        yield run_sim(config, progress=_prefixed(progress, where) if progress else None, **run_options)


def _prefixed(progress: Progress, prefix: str) -> Progress:
    """``progress`` with ``prefix`` before every message."""
    return lambda message: progress(f"{prefix}: {message}")
