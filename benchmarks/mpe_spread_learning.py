"""simple_spread's learning result as a paper reports it: every seed of a trained team against
uniformly random play and the scripted team (``envs/simple_spread/heuristic.py``), on the same
environments.

    warpsim train --config simple-spread-small --seeds 5 --run-dir runs/spread
    python benchmarks/mpe_spread_learning.py runs/spread [--episodes 640] [--num-envs 64] [--json FILE]

Each team plays ``--episodes`` episodes in ``--num-envs`` environments of the experiment's
simple_spread (NumPy backend, the same seeds for every team; a trained team samples its actions,
as in training). Two measures per team: the return (MPE2's reward summed over an episode, the
mean over agents) and the coverage at an episode's end (the sum over landmarks of the nearest
agent's distance: 0 when an agent sits on each). The seeds' figures are summarised as their
interquartile mean with a 95% bootstrap interval (``warpsim.analysis.statistics``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

import warpsim
from warpsim.analysis import statistics
from warpsim.commands import json_output, positive_int
from warpsim.envs.simple_spread.heuristic import ScriptedTeam, coverage
from warpsim.files import write_output
from warpsim.train.experiment import ExperimentDirectory, is_experiment

SEED = 1234
"""The environments' seed: every team plays the same starts."""


def play(env_params: dict, num_envs: int, episodes: int, team: Callable) -> dict:
    """``episodes`` episodes (rounded up to whole rounds of ``num_envs``), each ended without a reset
    to read its coverage; ``team(env)`` gives the function that writes a step's actions."""
    env = warpsim.make("simple_spread", num_envs, backend="numpy", seed=SEED, **env_params)
    act = team(env)
    returns, coverages = [], []
    for _ in range(-(-episodes // num_envs)):
        env.reset()
        total = np.zeros(num_envs)
        for _ in range(env.params.max_cycles):
            act()
            env.step(auto_reset=False)
            total += env.rewards.numpy().mean(-1)
        returns.append(total)
        coverages.append(coverage(env))
    return {"return": float(np.concatenate(returns).mean()), "coverage": float(np.concatenate(coverages).mean())}


def random_team(env) -> Callable[[], None]:
    generator = torch.Generator().manual_seed(SEED)
    return lambda: env.actions.copy_(torch.randint(0, 5, env.actions.shape, generator=generator))


def trained_team(run: Path) -> Callable:
    policy = warpsim.load_policy(run, "agent", seed=SEED)
    return lambda env: lambda: env.actions.copy_(torch.as_tensor(policy.act(env.observations, greedy=False)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", type=Path, help="an experiment of simple_spread runs (warpsim train --seeds)")
    parser.add_argument("--episodes", type=positive_int, default=640)
    parser.add_argument("--num-envs", type=positive_int, default=64)
    parser.add_argument("--json", type=json_output("learning figures"), help="also write the figures to this file")
    args = parser.parse_args(argv)
    if not is_experiment(args.experiment):
        parser.error(f"{args.experiment} holds no experiment; make one with warpsim train --config "
                     f"simple-spread-small --seeds 5 --run-dir {args.experiment}")
    runs = ExperimentDirectory(args.experiment, resume=True).planned_runs()
    env_params = dict(runs[0].config.env_params)
    if runs[0].config.env != "simple_spread" or any(run.config.env_params != env_params for run in runs):
        parser.error(f"{args.experiment} is not an experiment of simple_spread runs of one setting")
    seeds = {run.name: play(env_params, args.num_envs, args.episodes, trained_team(args.experiment / run.name))
             for run in runs}
    result = {"env_params": env_params, "episodes": -(-args.episodes // args.num_envs) * args.num_envs,
              "random": play(env_params, args.num_envs, args.episodes, random_team),
              "scripted": play(env_params, args.num_envs, args.episodes, lambda env: ScriptedTeam(env).act),
              "seeds": seeds,
              "iqm": {measure: statistics.aggregate([seed[measure] for seed in seeds.values()])["iqm"].record()
                      for measure in ("return", "coverage")}}
    for name, figures in [("random play", result["random"]), ("scripted team", result["scripted"]), *seeds.items()]:
        print(f"{name:>14}: return {figures['return']:8.2f}, coverage at the end {figures['coverage']:.3f}")
    for measure in ("return", "coverage"):
        estimate = result["iqm"][measure]
        print(f"trained, IQM of {len(seeds)} seeds: {measure} {estimate['value']:.3f} [{estimate['low']:.3f}, "
              f"{estimate['high']:.3f}]")
    if args.json:
        write_output(args.json, json.dumps(result, indent=1).encode(), "learning figures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
