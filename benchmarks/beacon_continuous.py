"""The continuous-action learning task on the CPU: beacon-continuous over five seeds, against the
obvious heuristic, walking straight at the beacon at full speed (envs/template/heuristic.py).

    python benchmarks/beacon_continuous.py                  # seeds 0-4, one batched experiment
    python benchmarks/beacon_continuous.py --seeds 0-9 --episodes 400

The seeds train as one experiment (``warpsim train --config beacon-continuous --seeds ...``);
each run is then evaluated as ``warpsim evaluate`` does (200 episodes of 64 environments, seed
1), greedy and sampled, and the heuristic plays the very same episodes. It prints each seed's
return as a share of the heuristic's, and their IQM, mean and median with 95% bootstrap
intervals (the bar: at least 90% on every seed). About a minute on two cores.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import warpsim
from warpsim.analysis.evaluate_experiment import evaluate_experiment
from warpsim.analysis.play import Player, evaluate
from warpsim.analysis.statistics import aggregate
from warpsim.commands import positive_int
from warpsim.envs.template.heuristic import walk_to_beacon
from warpsim.train.config import build_config
from warpsim.train.experiment import parse_seeds
from warpsim.train.loop import train_experiment
from warpsim.train.presets import PRESETS

EVALUATION = dict(num_envs=64, seed=1, backend="numpy")
"""How every run, and the heuristic, is played: ``warpsim evaluate``'s defaults on the CPU."""


class HeuristicPlayer(Player):
    """Every agent walks at its beacon (``walk_to_beacon``) instead of following a policy."""

    def step(self) -> None:
        self.env.step(walk_to_beacon(self.env))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-4", help="as warpsim train --seeds (default 0-4)")
    parser.add_argument("--episodes", type=positive_int, default=200)
    args = parser.parse_args(argv)
    config = build_config(PRESETS["beacon-continuous"], {"backend": "numpy"})
    env = warpsim.make(config.env, EVALUATION["num_envs"], backend="numpy", seed=EVALUATION["seed"],
                       **config.env_params)
    heuristic = evaluate(HeuristicPlayer(env, None, seed=EVALUATION["seed"]), args.episodes).returns["walker"]
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        train_experiment(config, Path(folder) / "beacon", seeds=parse_seeds(args.seeds), progress=None)
        trained = time.perf_counter() - started
        results = {play: evaluate_experiment(Path(folder) / "beacon", args.episodes, plays=(play,), **EVALUATION)
                   for play in ("greedy", "sampled")}
    print(f"beacon-continuous, seeds {args.seeds}: trained in {trained:.1f} s; heuristic return {heuristic:.3f} "
          f"({args.episodes} episodes, the same seeds)")
    for play, result in results.items():
        shares = [run["score"] / heuristic for run in result.runs]
        estimates = aggregate(shares)
        per_seed = ", ".join(f"seed {run['seed']} {share:.3f}" for run, share in zip(result.runs, shares))
        print(f"{play}: share of the heuristic's return: {per_seed}; "
              + "  ".join(f"{name} {estimate}" for name, estimate in estimates.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
