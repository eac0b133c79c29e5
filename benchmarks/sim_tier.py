"""Sim-tier benchmark (docs/benchmarks.md): ``python benchmarks/sim_tier.py --config headline``.

Same options as ``warpsim bench``: records are printed, and appended to DIR/<device>.json with
``--results-dir DIR`` (``--results-dir benchmarks/results`` for the committed ones).
"""

import sys

from warpsim.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
