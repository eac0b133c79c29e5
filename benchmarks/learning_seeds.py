"""Trains a preset on several seeds and prints, per seed, the trained taggers' measure over random taggers'.

    python benchmarks/learning_seeds.py                      # tag-small, seeds 0-4, as the README runs it
    python benchmarks/learning_seeds.py --config grid-small --measure "episode length"

Each seed is ``warpsim train --config CONFIG --seed S`` and then ``warpsim evaluate RUN
--random runner --episodes 3``; the ratios printed, for sampled and for greedy play, are
the ones that command prints for ``--measure``. ``--set NAME=VALUE`` overrides a config field (a JSON
value) to try a change on every seed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from warpsim.train.config import build_config
from warpsim.train.evaluate import PLAYS, evaluate_run
from warpsim.train.loop import train
from warpsim.train.presets import PRESETS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="tag-small", choices=sorted(PRESETS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--episodes", type=int, default=3, help="episodes to evaluate (default 3, as in the README)")
    parser.add_argument("--measure", default="tags per episode", help="a ratio warpsim evaluate prints")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=JSON", help="override a config field")
    args = parser.parse_args()
    overrides = {name: json.loads(value) for name, _, value in (text.partition("=") for text in args.set)}
    ratios: dict[str, list[float]] = {play: [] for play in PLAYS}
    with tempfile.TemporaryDirectory() as scratch:
        for seed in args.seeds:
            config = build_config(PRESETS[args.config], overrides, {"seed": seed})
            run_dir = Path(scratch) / f"seed{seed}"
            started = time.perf_counter()
            train(config, run_dir, progress=None)
            seconds = time.perf_counter() - started
            result = evaluate_run(run_dir, args.episodes, random_roles=("runner",))
            for play, evaluation in result.plays.items():
                ratios[play].append(evaluation.ratios()[args.measure])
            print(f"{args.config} seed {seed}: trained in {seconds:.0f} s; {args.measure}: "
                  + ", ".join(f"{ratios[play][-1]:.2f}x {play}" for play in PLAYS) + " of random taggers'", flush=True)
    for play, values in ratios.items():
        print(f"{args.config}, {play} play: {args.measure} {', '.join(f'{r:.2f}x' for r in values)} "
              f"(lowest {min(values):.2f}x, highest {max(values):.2f}x)")


if __name__ == "__main__":
    main()
