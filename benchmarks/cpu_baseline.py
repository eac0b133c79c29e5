"""warpsim's NumPy backend next to the tag environments people use today, on this CPU, in one run.

    python benchmarks/cpu_baseline.py \\
        --peer warpdrive=peers-venv/warpdrive/bin/python \\
        --peer vmas=peers-venv/vmas/bin/python --peer mpe2=peers-venv/mpe2/bin/python

At each N of ``--agents`` (default 25 and 110 agents per environment, taggers 1:10
runners) it times warpsim's tag_continuous on the numpy backend (train-ref rules,
partial K=10, runners stay in the game when tagged) and then every peer given, each in
its own virtual environment (benchmarks/peers/README.md). VMAS is swept over its batch
sizes and its fastest kept. All records that ran are appended to <results-dir>/<device>.json
with --results-dir (benchmarks/results for docs/benchmarks.md); a table of rates and ratios
(warpsim agent-steps/s over the tool's) is printed, with the reason for any peer that
could not run.
"""

from __future__ import annotations

import argparse
import sys

from warpsim.bench import peers
from warpsim.bench.runner import keep_result, print_progress, run_sim, saved_note
from warpsim.commands import add_results_dir, positive_int
from warpsim.configs import BenchConfig
from warpsim.removed import RemovedOption

PEER_BATCH_SIZES = {"vmas": (1, 4, 16, 64, 256, 1024, 4096)}
"""Batch sizes swept per peer; the others step one environment."""


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    try:
        chosen = [peers.parse_peer(text) for text in args.peer]
    except ValueError as error:
        print(f"cpu_baseline: error: {error}", file=sys.stderr)
        return 2
    records = []
    for num_agents in args.agents:
        config = f"cpu-baseline-N{num_agents}"
        print_progress(f"warpsim numpy, N={num_agents}, E={args.num_envs}")
        records.append(run_sim(BenchConfig("tag_continuous", args.num_envs, peers.tag_params(num_agents), config),
                               backend="numpy", steps=args.steps, repeats=args.repeats,
                               warmup_steps=args.warmup_steps, seed=args.seed))
        for name, python in chosen:
            print_progress(f"{name}, N={num_agents}")
            output = peers.run_peer(name, python, num_agents, PEER_BATCH_SIZES.get(name, (1,)), steps=args.steps,
                                    repeats=args.repeats, warmup_steps=args.warmup_steps,
                                    max_seconds=args.max_seconds, timeout=args.timeout)
            records.append(peers.peer_record(output, config))
    print_progress(saved_note(args.results_dir, [keep_result(record, args.results_dir) for record in records
                                                 if record.get("status", "ok") == "ok"]))
    print(peers.ratio_table(records))
    return 0


def _parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer", action="append", default=[], metavar="NAME=PYTHON",
                        help=f"a peer and its virtual environment's python (names: {', '.join(peers.PEER_SCRIPTS)})")
    parser.add_argument("--agents", type=_positive_list, default=[25, 110], metavar="N1,N2",
                        help="agents per environment (default 25,110)")
    parser.add_argument("--num-envs", type=positive_int, default=256, help="warpsim's E (default 256)")
    parser.add_argument("--steps", type=positive_int, default=20, help="steps per timed repeat (default 20)")
    parser.add_argument("--repeats", type=positive_int, default=3, help="timed repeats (default 3)")
    parser.add_argument("--warmup-steps", type=int, default=3, help="untimed steps first (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=180.0,
                        help="time budget of one batch size of a peer: slower ones run fewer steps, or are "
                             "skipped (default 180; warpsim fits its E to about a minute, as warpsim bench does)")
    parser.add_argument("--timeout", type=float, default=peers.DEFAULT_TIMEOUT,
                        help=f"seconds before a peer's process is stopped (default {peers.DEFAULT_TIMEOUT:g})")
    add_results_dir(parser)
    parser.add_argument("--no-save", action=RemovedOption, version="0.2.0",
                        replacement="nothing is saved unless --results-dir DIR is given; drop --no-save")
    return parser.parse_args(argv)


def _positive_list(text: str) -> list[int]:
    try:
        values = [int(value) for value in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 2:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; give integers >= 2 separated by commas")
    return values


if __name__ == "__main__":
    sys.exit(main())
