"""warpsim's MPE scenarios next to MPE2's own, in agent-steps per second, on this machine.

    python benchmarks/mpe_speed.py                               # simple_spread, N = 3, MPE2's defaults
    python benchmarks/mpe_speed.py --agents 3 --agents 100 --neighbours 10 --num-envs 1 --num-envs 4096
    python benchmarks/mpe_speed.py --scenario simple_tag --agents 4 --agents 100 --neighbours 10

For each N of ``--agents`` (agents in all: simple_tag keeps MPE2's 3 adversaries to 1 good agent,
simple_adversary's N good agents are N - 1) it times MPE2's parallel_env of the ``--scenario`` (one
environment, random actions, reset when the episode is cut), warpsim's PettingZoo adapter, the same
API over one environment, and warpsim's scenario at each ``--num-envs`` on the ``--backend`` (the
sim tier: ``warpsim.bench``'s timing, random actions already on the device). ``--neighbours K``
observes the K nearest agents and landmarks (MPE2's num_agent_neighbors and
num_landmark_neighbors). A table of rates and of the ratios to MPE2 is printed; with
--results-dir DIR each record is appended to DIR/<device>.json, warpsim's with the MPE2 rate
beside it (benchmarks/results/mpe_speed for docs/mpe.md).

``--peer NAME=PYTHON`` (vmas, jaxmarl; simple_spread at full observation) also runs that tool's
simple_spread script (benchmarks/peers/) with that Python at each N, sweeping the same E and
keeping its fastest, on the GPU where the tool finds one; its record goes to the same file:

    python benchmarks/mpe_speed.py --agents 3 --num-envs 4096 --peer vmas=peers-venv/vmas/bin/python
"""

from __future__ import annotations

import argparse
import importlib
import time
from pathlib import Path

import numpy as np

from warpsim.adapters.pettingzoo import parallel_env
from warpsim.bench import peers
from warpsim.bench.runner import keep_result, print_progress, run_sim, saved_note
from warpsim.commands import add_results_dir, positive_int
from warpsim.configs import BenchConfig

SCENARIOS = {
    "simple_spread": lambda n: {"N": n},
    "simple_tag": lambda n: {"num_adversaries": max(1, 3 * n // 4), "num_good": n - max(1, 3 * n // 4)},
    "simple_adversary": lambda n: {"N": n - 1},
    "simple_speaker_listener": lambda n: {},
}
"""Each scenario's parameters for N agents in all (simple_speaker_listener has 2, always)."""
MPE2_MODULES = {"simple_spread": "simple_spread_v3", "simple_tag": "simple_tag_v3",
                "simple_adversary": "simple_adversary_v3", "simple_speaker_listener": "simple_speaker_listener_v4"}


def agent_steps_per_second(env, seconds: float, seed: int) -> float:
    """A PettingZoo ParallelEnv stepped with random actions for about ``seconds``: agent-steps per second."""
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    agents = list(env.agents)
    spaces = [env.action_space(name) for name in agents]
    done, steps, started = 0, 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        actions = {name: int(rng.integers(space.n)) for name, space in zip(agents, spaces)}
        _, _, terminations, truncations, _ = env.step(actions)
        steps += 1
        if any(terminations.values()) or any(truncations.values()):
            env.reset()
            done += 1
    return steps * len(agents) / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="simple_spread")
    parser.add_argument("--agents", type=positive_int, action="append", help="N, agents in all, repeatable (default 4, "
                        "3 for simple_spread, 2 for simple_speaker_listener)")
    parser.add_argument("--neighbours", type=positive_int, help="observe the K nearest (default: all, MPE2's default)")
    parser.add_argument("--num-envs", type=positive_int, action="append",
                        help="warpsim's E, repeatable (default 1, 1024)")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--seconds", type=float, default=3.0, help="each PettingZoo timing (default 3)")
    add_results_dir(parser)
    parser.add_argument("--peer", action="append", default=[], metavar="NAME=PYTHON",
                        help=f"also time this tool's simple_spread with this Python, repeatable (names: "
                             f"{', '.join(peers.SPREAD_PEER_SCRIPTS)}; benchmarks/peers/README.md)")
    parser.add_argument("--peer-seconds", type=float, default=120.0,
                        help="a peer's time budget at one E, compilation aside (default 120)")
    args = parser.parse_args(argv)
    if not args.peer_seconds > 0:
        parser.error(f"--peer-seconds {args.peer_seconds}: give a time budget above 0")
    if args.peer and (args.scenario != "simple_spread" or args.neighbours is not None):
        parser.error("--peer times the peers' simple_spread, where every agent observes every other: give it "
                     "without --scenario and --neighbours")
    try:
        chosen = [peers.parse_peer(text, peers.SPREAD_PEER_SCRIPTS) for text in args.peer]
    except ValueError as error:
        parser.error(str(error))
    mpe2_module = importlib.import_module(f"mpe2.{MPE2_MODULES[args.scenario]}")
    rows = []
    default = {"simple_spread": 3, "simple_speaker_listener": 2}.get(args.scenario, 4)
    paths: list[Path | None] = []
    for n in args.agents or [default]:
        if n < 2 and args.scenario != "simple_spread":
            parser.error(f"--agents {n}: {args.scenario} needs at least 2 agents")
        if n != 2 and args.scenario == "simple_speaker_listener":
            parser.error(f"--agents {n}: simple_speaker_listener has 2 agents, a speaker and a listener")
        params = SCENARIOS[args.scenario](n)
        if args.neighbours is not None:
            params.update(num_agent_neighbors=args.neighbours, num_landmark_neighbors=args.neighbours)
        print_progress(f"MPE2 {args.scenario}, N={n}")
        mpe2_rate = agent_steps_per_second(mpe2_module.parallel_env(**params), args.seconds, 0)
        print_progress(f"warpsim's PettingZoo adapter, N={n}")
        adapter_rate = agent_steps_per_second(parallel_env(args.scenario, **params), args.seconds, 0)
        rows.append((n, "MPE2 parallel_env", 1, mpe2_rate))
        rows.append((n, "warpsim PettingZoo adapter (numpy)", 1, adapter_rate))
        for num_envs in args.num_envs or [1, 1024]:
            print_progress(f"warpsim {args.scenario}, N={n}, E={num_envs}, backend {args.backend}")
            record = run_sim(BenchConfig(args.scenario, num_envs, params, f"mpe-speed-{args.scenario}-N{n}"),
                             backend=args.backend)
            record["mpe2_agent_steps_per_second"] = mpe2_rate
            record["adapter_agent_steps_per_second"] = adapter_rate
            paths.append(keep_result(record, args.results_dir))
            rows.append((n, f"warpsim {record['backend']} ({record['device']})", record["num_envs"],
                         record["agent_steps_per_second"]["median"]))
        for peer, python in chosen:
            print_progress(f"{peer} simple_spread, N={n}, E={','.join(map(str, args.num_envs or [1, 1024]))}")
            record = peers.peer_record(peers.run_peer(
                peer, python, n, tuple(args.num_envs or [1, 1024]), max_seconds=args.peer_seconds,
                scripts=peers.SPREAD_PEER_SCRIPTS), f"mpe-speed-{args.scenario}-N{n}")
            if record["status"] != "ok":
                rows.append((n, f"{peer}: {record['status']}", "-", None))
                continue
            paths.append(keep_result(record, args.results_dir))
            rows.append((n, f"{peer} {record['backend']} ({record['device']})", record["num_envs"],
                         record["agent_steps_per_second"]["median"]))
    print_progress(saved_note(args.results_dir, paths))
    print("| N | simulator | environments | agent-steps/s | x MPE2 |")
    print("|---|---|---|---|---|")
    for n, name, num_envs, rate in rows:
        mpe2 = next(r for m, label, _, r in rows if m == n and label == "MPE2 parallel_env")
        print(f"| {n} | {name} | {num_envs} | " + (f"{rate:.3g} | {rate / mpe2:.1f} |" if rate else "- | - |"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
