"""The benchmarks of docs/benchmarks.md: what ``warpsim bench`` runs.

- :mod:`~warpsim.bench.runner`: the sim tier, result records and results files;
- :mod:`~warpsim.bench.policy_tiers`: the sim+policy and train tiers;
- :mod:`~warpsim.bench.floor`: the physical floor of a step;
- :mod:`~warpsim.bench.sweeps`: a named config run at a series of E or N;
- :mod:`~warpsim.bench.peers`: other tools' tag environments, timed side by side.

The named configs they time are data, in :mod:`warpsim.configs`.
"""

from warpsim.bench.runner import append_result, run_sim, summary
from warpsim.configs import NAMED_CONFIGS, BenchConfig

__all__ = ["NAMED_CONFIGS", "BenchConfig", "append_result", "run_sim", "summary"]
