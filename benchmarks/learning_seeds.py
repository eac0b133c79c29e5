"""Trains presets on several seeds and prints a table per preset: the trained taggers' measure over random taggers'.

    python benchmarks/learning_seeds.py          # the two CPU tables: tag-small and tag-chase-small, seeds 0-4
    python benchmarks/learning_seeds.py --config grid-small --measure "episode length"

With no --config it runs the CPU bars of docs/benchmarks.md: tag-small (tags per episode,
at least 2x random taggers') and tag-chase-small, the small chase environment with
tag-chase's trainer settings (episode length, at most 0.67x). Each seed is ``warpsim train
--config CONFIG --seed S`` and then ``warpsim evaluate RUN --random runner --episodes N``;
the ratios printed, for sampled and for greedy play, are the ones that command prints for
the measure. ``--set NAME=VALUE`` overrides a config field (a JSON value) on every seed.
A few minutes per preset on two cores.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from warpsim.analysis.evaluate import PLAYS, evaluate_run
from warpsim.commands import positive_int
from warpsim.train.config import build_config
from warpsim.train.loop import train
from warpsim.train.presets import PRESETS

CPU_BARS = {"tag-small": ("tags per episode", ">=", 2.0), "tag-chase-small": ("episode length", "<=", 0.67)}
"""The presets run by default, each with its measure and its bar against random taggers."""


def seed_ratios(preset: str, measure: str, seeds: list[int], episodes: int, overrides: dict) -> dict[str, list]:
    """Per way of play, the measure's ratio to random taggers on each seed."""
    ratios: dict[str, list[float]] = {play: [] for play in PLAYS}
    with tempfile.TemporaryDirectory() as scratch:
        for seed in seeds:
            config = build_config(PRESETS[preset], overrides, {"seed": seed})
            run_dir = Path(scratch) / f"seed{seed}"
            started = time.perf_counter()
            train(config, run_dir, progress=None)
            seconds = time.perf_counter() - started
            result = evaluate_run(run_dir, episodes, random_roles=("runner",))
            for play, evaluation in result.plays.items():
                ratios[play].append(evaluation.ratios()[measure])
            print(f"{preset} seed {seed}: trained in {seconds:.0f} s; {measure}: "
                  + ", ".join(f"{ratios[play][-1]:.2f}x {play}" for play in PLAYS) + " of random taggers'", flush=True)
    return ratios


def table(preset: str, measure: str, seeds: list[int], ratios: dict[str, list], bar: tuple | None) -> str:
    """A markdown table: a row per way of play, a column per seed, and whether each meets ``bar``
    (a comparison, ">=" or "<=", and a ratio)."""
    lines = [f"{preset}: {measure}, trained / random taggers" + (f" (bar {bar[0]} {bar[1]}x)" if bar else ""),
             "| play | " + " | ".join(f"seed {seed}" for seed in seeds) + " | lowest | highest |" + (
                 " bar met |" if bar else ""),
             "|---" * (len(seeds) + 3 + bool(bar)) + "|"]
    for play, values in ratios.items():
        row = f"| {play} | " + " | ".join(f"{value:.2f}x" for value in values) + f" | {min(values):.2f}x | " \
              f"{max(values):.2f}x |"
        if bar:
            met = all(value >= bar[1] if bar[0] == ">=" else value <= bar[1] for value in values)
            row += f" {'yes' if met else 'no'} |"
        lines.append(row)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=sorted(PRESETS), help="one preset (default: those of CPU_BARS)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--episodes", type=positive_int, default=64, help="episodes to evaluate per play (default 64)")
    parser.add_argument("--measure", help="a ratio warpsim evaluate prints (default: the preset's, else tags)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=JSON", help="override a config field")
    args = parser.parse_args()
    overrides = {name: json.loads(value) for name, _, value in (text.partition("=") for text in args.set)}
    presets = [args.config] if args.config else list(CPU_BARS)
    tables = []
    for preset in presets:
        bar = CPU_BARS.get(preset)
        if args.measure and bar and args.measure != bar[0]:
            bar = None  # another measure has no bar
        measure = args.measure or (bar[0] if bar else "tags per episode")
        ratios = seed_ratios(preset, measure, args.seeds, args.episodes, overrides)
        tables.append(table(preset, measure, args.seeds, ratios, bar[1:] if bar else None))
    print("\n\n".join(tables))


if __name__ == "__main__":
    main()
