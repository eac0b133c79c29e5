"""Peers on a GPU at the E x N of warpsim's named configs: their records beside warpsim's own.

    python benchmarks/gpu_peers.py --peer jaxmarl=peers-venv/jaxmarl/bin/python \\
        --config train-ref --config headline --results-dir OUT/bench

For each config, each peer's script (benchmarks/peers/, run with that peer's Python)
steps the config's E environments of its N agents (taggers 1:10 runners, as every peer
splits them); where they do not fit in the GPU's memory, E is halved until they do, and
the record says which E ran (``num_envs`` of ``requested_num_envs``) and which did not
fit (``batch_sweep``). One E at a time: a JAX peer compiles its step anew for every E,
for minutes at large N. Records are appended under the config's name, so the named
configs' table of docs/benchmarks.md sets them beside warpsim's GPU figure of that config.
"""

from __future__ import annotations

import argparse
import sys

from warpsim.bench import peers
from warpsim.bench.runner import keep_result, print_progress, saved_note
from warpsim.commands import add_results_dir, positive_int
from warpsim.configs import NAMED_CONFIGS
from warpsim.removed import RemovedOption


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    try:
        chosen = [peers.parse_peer(text) for text in args.peer]
    except ValueError as error:
        print(f"gpu_peers: error: {error}", file=sys.stderr)
        return 2
    records = []
    for name in args.config:
        config = NAMED_CONFIGS[name]
        num_agents = config.params["num_taggers"] + config.params["num_runners"]
        for peer, python in chosen:
            print_progress(f"{peer}, {name}: N={num_agents}, E={config.num_envs} (halved while it does not fit)")
            output = peers.run_peer_where_it_fits(peer, python, num_agents, config.num_envs, steps=args.steps,
                                                  repeats=args.repeats, warmup_steps=args.warmup_steps,
                                                  max_seconds=args.max_seconds, timeout=args.timeout)
            records.append(peers.peer_record(output, name))
            print_progress(f"{peer}, {name}: {records[-1]['status']}")
    print_progress(saved_note(args.results_dir, [keep_result(record, args.results_dir) for record in records
                                                 if record["status"] == "ok"]))
    print(peers.ratio_table(records))
    return 0


def _parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer", action="append", required=True, metavar="NAME=PYTHON",
                        help=f"a peer and its virtual environment's python (names: {', '.join(peers.PEER_SCRIPTS)})")
    parser.add_argument("--config", action="append", required=True, choices=peers.GPU_CONFIGS,
                        help="a named config whose E x N the peers run at (repeatable)")
    parser.add_argument("--steps", type=positive_int, default=20, help="steps per timed repeat (default 20)")
    parser.add_argument("--repeats", type=positive_int, default=3, help="timed repeats (default 3)")
    parser.add_argument("--warmup-steps", type=int, default=3, help="untimed steps first (default 3)")
    parser.add_argument("--max-seconds", type=float, default=120.0,
                        help="time budget of a peer's warm-up and timed steps at one E (default 120)")
    parser.add_argument("--timeout", type=float, default=peers.DEFAULT_TIMEOUT,
                        help=f"seconds before a peer's process at one E is stopped, compilation included "
                             f"(default {peers.DEFAULT_TIMEOUT:g})")
    add_results_dir(parser)
    parser.add_argument("--no-save", action=RemovedOption, version="0.2.0",
                        replacement="nothing is saved unless --results-dir DIR is given; drop --no-save")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
