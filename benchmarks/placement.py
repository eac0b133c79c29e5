"""Times the train tier for three placements of environments and networks.

    python benchmarks/placement.py                          # every placement this machine has
    python benchmarks/placement.py --sizes tag-small --hidden 64 --repeats 1 --max-seconds 5

Placements: ``all-cpu`` (NumPy environments, networks on the CPU), ``numpy-env-gpu-networks``
(NumPy environments, networks on the GPU: ``--backend numpy --policy-device cuda``) and
``all-gpu`` (CUDA environments and networks, the rollout as one CUDA graph, as training
runs by default). Each is timed at hidden sizes 64, 256 and 1024 on tag-small (64
environments of 1 tagger and 6 runners) and train-ref (10 taggers, 100 runners), whose
environment count each placement scales down to fit ``--max-seconds``. Every record's
one-line summary is printed, and with --results-dir DIR the record is appended to
DIR/<device>.json with a ``placement`` field. Without a GPU only ``all-cpu`` runs, and the script says so.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from warpsim.bench.policy_tiers import run_policy_tier
from warpsim.bench.runner import keep_result, print_progress, saved_note, summary
from warpsim.commands import add_results_dir, positive_int
from warpsim.configs import NAMED_CONFIGS, BenchConfig
from warpsim.device import gpu_available
from warpsim.train.presets import TAG_SMALL_ENV

PLACEMENTS = {  # name: (environment backend, policy device, CUDA graphs)
    "all-cpu": ("numpy", "cpu", False),
    "numpy-env-gpu-networks": ("numpy", "cuda", False),
    "all-gpu": ("cuda", "auto", True),
}
SIZES = {"tag-small": BenchConfig("tag_continuous", 64, TAG_SMALL_ENV, "tag-small"),
         "train-ref": NAMED_CONFIGS["train-ref"]}
HIDDEN_SIZES = (64, 256, 1024)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--placements", nargs="+", choices=sorted(PLACEMENTS), default=list(PLACEMENTS))
    parser.add_argument("--sizes", nargs="+", choices=sorted(SIZES), default=list(SIZES))
    parser.add_argument("--hidden", type=positive_int, nargs="+", default=list(HIDDEN_SIZES),
                        help="hidden layer widths")
    parser.add_argument("--steps", type=positive_int, default=32, help="rollout steps per iteration (default 32)")
    parser.add_argument("--repeats", type=positive_int, default=5, help="timed iterations (default 5)")
    parser.add_argument("--max-seconds", type=float, default=60.0,
                        help="time budget of one measurement; environments are scaled down to fit (default 60)")
    add_results_dir(parser)
    args = parser.parse_args(argv)
    placements = args.placements
    if not gpu_available():
        skipped = [name for name in placements if name != "all-cpu"]
        placements = [name for name in placements if name == "all-cpu"]
        if skipped:
            print_progress(f"no CUDA GPU here: timing all-cpu only (not {', '.join(skipped)}); run this script on "
                           f"a GPU machine for the other placements")
    paths: list[Path | None] = []
    for size in args.sizes:
        for hidden_size in args.hidden:
            for name in placements:
                backend, policy_device, graphs = PLACEMENTS[name]
                print_progress(f"{size}, hidden {hidden_size}, {name}")
                record = run_policy_tier(SIZES[size], "train", backend=backend, steps=args.steps,
                                         repeats=args.repeats, warmup_steps=1, max_seconds=args.max_seconds,
                                         progress=print_progress, graphs=graphs, hidden_size=hidden_size,
                                         policy_device=policy_device)
                record["placement"] = name
                paths.append(keep_result(record, args.results_dir))
                print(f"{name:24} {size:10} hidden {hidden_size:5}: {summary(record)}", flush=True)
    print(saved_note(args.results_dir, paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
