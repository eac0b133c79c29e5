"""Sim-tier benchmark (docs/benchmarks.md): ``python benchmarks/sim_tier.py --config headline``.

Same options as ``warpsim bench``; results are appended to benchmarks/results/<device>.json.
"""

import sys

from warpsim.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
