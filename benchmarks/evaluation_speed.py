"""Wall time of evaluating an experiment's R runs against evaluating one of them alone.

    python benchmarks/evaluation_speed.py                     # tag-small, R = 10, the default evaluation
    python benchmarks/evaluation_speed.py --runs 4 --iterations 2 --episodes 64

The runs (seeds 0 to R-1) are trained for a few iterations into a temporary folder (how long
they trained does not change what evaluating them costs), then ``evaluate_experiment`` plays
all of them as ``warpsim evaluate EXP`` does, and ``evaluate_run`` plays the first alone as
``warpsim evaluate RUN`` does: sampled and greedy play, and random play as their baseline.
The target is R = 10 in at most 2x the time of one. The record (device, config, R, both wall
times, their ratio, commit) is summarised on one line, and with --results-dir DIR appended to
DIR/<device>.json (benchmarks/results/evaluation_speed for docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
import time
from pathlib import Path

from warpsim.analysis.evaluate import EPISODES, evaluate_run
from warpsim.analysis.evaluate_experiment import evaluate_experiment
from warpsim.bench.runner import keep_result, saved_note
from warpsim.commands import add_results_dir, positive_int
from warpsim.device import device_name
from warpsim.registry import make
from warpsim.source_commit import source_commit
from warpsim.train.config import build_config
from warpsim.train.loop import train_experiment
from warpsim.train.presets import PRESETS

TARGET = 2.0
"""R = 10 runs in at most this many times one run's evaluation."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=sorted(PRESETS), default="tag-small")
    parser.add_argument("--runs", type=positive_int, default=10, help="R, the runs (seeds 0 to R-1; default 10)")
    parser.add_argument("--iterations", type=positive_int, default=5, help="iterations each run trains (default 5)")
    parser.add_argument("--episodes", type=positive_int, default=EPISODES,
                        help=f"episodes of each play (default {EPISODES})")
    add_results_dir(parser)
    args = parser.parse_args(argv)
    config = build_config(PRESETS[args.config], {"iterations": args.iterations})
    with tempfile.TemporaryDirectory() as folder:
        experiment = Path(folder) / "experiment"
        train_experiment(config, experiment, seeds=tuple(range(args.runs)), progress=None)
        started = time.perf_counter()
        evaluate_experiment(experiment, args.episodes)
        all_runs = time.perf_counter() - started
        started = time.perf_counter()
        evaluate_run(experiment / "seed=0", args.episodes)
        one_run = time.perf_counter() - started
    env = make(config.env, 1, backend="auto", **config.env_params)
    record = {"tool": "warpsim", "benchmark": "evaluation_speed", "date": datetime.date.today().isoformat(),
              "device": device_name(env.placement), "backend": env.backend, "config": args.config,
              "runs": args.runs, "episodes": args.episodes, "all_runs_seconds": all_runs, "one_run_seconds": one_run,
              "ratio": all_runs / one_run, "target": TARGET, "warpsim_commit": source_commit()}
    path = keep_result(record, args.results_dir)
    print(f"{args.config}: {args.runs} runs evaluated in {all_runs:.1f} s, one alone in {one_run:.1f} s: "
          f"{record['ratio']:.2f}x one run's time (target {TARGET:g}x for 10); {saved_note(args.results_dir, [path])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
