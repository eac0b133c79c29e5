"""Times sweep-N with each neighbour search forced, to place tag_continuous's ``auto`` thresholds.

    python benchmarks/neighbour_search.py [--values 32,64,...] [--results-dir DIR]

Each point of sweep-N (E=256, one tagger in 20, partial K=10) runs twice, with
``neighbour_search=grid`` and ``brute_force``; the records (configs "sweep-N grid" and
"sweep-N brute_force") are appended to the results file of the device, and a table of the two rates per N is printed.
GRID_SEARCH_MIN_AGENTS and GRID_SEARCH_MIN_TAGGERS in envs/tag_continuous/env.py
belong where the grid starts to win.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from warpsim.bench.runner import RESULTS_DIR, append_result
from warpsim.bench.sweeps import NAMED_SWEEPS, run_sweep

SEARCHES = ("grid", "brute_force")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", default="32,64,128,256,512,1024,2048,4096", help="the N of each point")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    values = [int(value) for value in args.values.split(",")]
    sweep = NAMED_SWEEPS["sweep-N"]
    rates: dict[tuple[int, str], float] = {}
    for search in SEARCHES:
        forced = replace(sweep, name=f"sweep-N {search}",  # its own config name: apart from sweep-N in the report
                         base=replace(sweep.base, params=dict(sweep.base.params, neighbour_search=search)))
        for value, record in zip(values, run_sweep(forced, values, backend="cuda")):
            append_result(record, args.results_dir)
            rates[value, search] = record["agent_steps_per_second"]["median"]
    print(f"{'N':>6} {'grid':>12} {'brute_force':>12}  grid/brute")
    for value in values:
        grid, brute = rates[value, "grid"], rates[value, "brute_force"]
        print(f"{value:>6} {grid:12.3e} {brute:12.3e}  {grid / brute:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
