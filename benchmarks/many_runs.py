"""Wall time of R training runs batched in one experiment against the same R runs trained one
after another, each as its own ``warpsim train`` process, start-up included.

    python benchmarks/many_runs.py                                   # tag-small, R = 8, 100 iterations
    python benchmarks/many_runs.py --config tag-chase-small --runs 16 --iterations 50

Both ways train the same runs (seeds 0 to R-1) into a temporary folder; the script also
checks that each batched run's metrics equal its sequential twin's (timings aside), which
they do wherever the backend rounds the batch as it rounds one run (docs/experiments.md).
The record (device, config, R, iterations, both wall times, the speed-up, training
env-steps/s over all runs, commit) is summarised on one line, and with --results-dir DIR
appended to DIR/<device>.json (benchmarks/results/many_runs for docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from warpsim.bench.runner import keep_result, print_progress, saved_note
from warpsim.commands import add_results_dir, positive_int
from warpsim.device import device_name
from warpsim.source_commit import source_commit
from warpsim.train.config import build_config
from warpsim.train.placement import environment_placement
from warpsim.train.presets import PRESETS

TIMING = ("steps_per_second", "elapsed_seconds")
"""Metrics that differ between any two runs of the same training."""


def train(arguments: list[str]) -> float:
    """Seconds one ``warpsim train`` process takes, start-up included; its failure ends the benchmark."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "warpsim.cli", "train", *arguments, "--quiet"], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def metrics(run_dir: Path) -> list[dict]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [{key: value for key, value in json.loads(line).items() if key not in TIMING} for line in lines]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=sorted(PRESETS), default="tag-small")
    parser.add_argument("--runs", type=positive_int, default=8, help="R, the runs (seeds 0 to R-1; default 8)")
    parser.add_argument("--iterations", type=positive_int, default=100, help="iterations of every run (default 100)")
    add_results_dir(parser)
    args = parser.parse_args(argv)
    common = ["--config", args.config, "--iterations", str(args.iterations)]
    config = build_config(PRESETS[args.config], {"iterations": args.iterations})
    with tempfile.TemporaryDirectory() as folder:
        batch = Path(folder) / "batched"
        print_progress(f"{args.runs} runs of {args.config} batched in one process")
        batched = train([*common, "--seeds", str(args.runs), "--run-dir", str(batch)])
        sequential = 0.0
        for seed in range(args.runs):
            print_progress(f"run {seed + 1}/{args.runs} alone (seed {seed})")
            sequential += train([*common, "--seed", str(seed), "--run-dir", str(Path(folder) / f"seed={seed}")])
        same = all(metrics(batch / f"seed={seed}") == metrics(Path(folder) / f"seed={seed}")
                   for seed in range(args.runs))
    env_steps = args.runs * args.iterations * config.rollout_steps * config.num_envs
    record = {
        "benchmark": "many_runs", "config": args.config, "runs": args.runs, "iterations": args.iterations,
        "num_envs": config.num_envs, "rollout_steps": config.rollout_steps,
        "backend": environment_placement(config.backend).backend,
        "device": device_name(environment_placement(config.backend)), "cpu_threads": os.cpu_count(),
        "batched_seconds": batched, "sequential_seconds": sequential, "speedup": sequential / batched,
        "batched_env_steps_per_second": env_steps / batched, "sequential_env_steps_per_second": env_steps / sequential,
        "same_metrics": same, "warpsim_commit": source_commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    path = keep_result(record, args.results_dir)
    print(f"{args.runs} x {args.config} ({args.iterations} iterations) on {record['device']}: batched "
          f"{batched:.1f} s, sequential {sequential:.1f} s, {record['speedup']:.2f}x; "
          f"{record['batched_env_steps_per_second']:,.0f} training env-steps/s over all runs; "
          f"metrics {'equal' if same else 'NOT equal'} to the runs alone; {saved_note(args.results_dir, [path])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
