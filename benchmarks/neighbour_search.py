"""Times tag_continuous with each neighbour search forced: sweep-N, to place the ``auto``
thresholds, and the headline config, to choose between the two grid searches.

    python benchmarks/neighbour_search.py [--values 32,64,...] [--results-dir DIR]

Each point of sweep-N (E=256, one tagger in 20, partial K=10) runs once per search of
SEARCHES (configs "sweep-N grid", "sweep-N grid_tiles", "sweep-N brute_force"), and the
headline config once per grid search ("headline grid", "headline grid_tiles"; eager
launches). A table of the rates is printed, and with --results-dir DIR the records are
appended to DIR/<device>.json. GRID_SEARCH_MIN_AGENTS and GRID_SEARCH_MIN_TAGGERS in
envs/tag_continuous/env.py belong where the grid starts to win, and ``auto`` should take the
faster grid search.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from warpsim.bench.runner import keep_result, run_sim, saved_note
from warpsim.bench.sweeps import NAMED_SWEEPS, run_sweep
from warpsim.commands import add_results_dir
from warpsim.configs import NAMED_CONFIGS

SEARCHES = ("grid", "grid_tiles", "brute_force")
GRID_SEARCHES = ("grid", "grid_tiles")
"""The searches timed at the headline config (brute force is far behind at N = 1000)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", default="32,64,128,256,512,1024,2048,4096", help="the N of each point")
    add_results_dir(parser)
    args = parser.parse_args(argv)
    values = [int(value) for value in args.values.split(",")]
    sweep = NAMED_SWEEPS["sweep-N"]
    rates: dict[tuple[int | str, str], float] = {}
    paths: list[Path | None] = []
    for search in SEARCHES:
        forced = replace(sweep, name=f"sweep-N {search}",  # its own config name: apart from sweep-N in the report
                         base=replace(sweep.base, params=dict(sweep.base.params, neighbour_search=search)))
        for value, record in zip(values, run_sweep(forced, values, backend="cuda")):
            paths.append(keep_result(record, args.results_dir))
            rates[value, search] = record["agent_steps_per_second"]["median"]
    headline = NAMED_CONFIGS["headline"]
    for search in GRID_SEARCHES:
        record = run_sim(replace(headline, params=dict(headline.params, neighbour_search=search),
                                 name=f"headline {search}"), backend="cuda")
        paths.append(keep_result(record, args.results_dir))
        rates["headline", search] = record["agent_steps_per_second"]["median"]
    print(f"{'N':>8} " + " ".join(f"{search:>12}" for search in SEARCHES) + "  tiles/grid  grid/brute")
    for value in [*values, "headline"]:
        found = [rates.get((value, search)) for search in SEARCHES]
        grid, tiles, brute = found
        cells = " ".join(f"{rate:12.3e}" if rate else f"{'-':>12}" for rate in found)
        brute_ratio = f"{grid / brute:10.2f}" if brute else f"{'-':>10}"
        print(f"{value:>8} {cells}  {tiles / grid:10.2f}  {brute_ratio}")
    print(saved_note(args.results_dir, paths))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
