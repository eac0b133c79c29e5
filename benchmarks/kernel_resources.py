"""What every shipped kernel costs on an sm_90 GPU, from the compiler alone (no GPU needed).

    python benchmarks/kernel_resources.py [OUTPUT.md]

Compiles each kernel of each config below to PTX through NVVM and assembles it with
``ptxas -v`` (tests/compile_kernels.py --resources), then prints one Markdown table:
registers per thread, local stack, spill stores and loads, static shared memory (bytes;
the grid kernels' dynamic shared memory is sized at launch and not counted), and the PTX
instructions with their 64-bit integer (``div.s64``) and IEEE float32 (``div.rn.f32``)
divisions. tests/test_kernel_resources.py holds the observe and tag kernels to the
budgets of docs/design.md.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from warpsim.commands import table_script

SCRIPT = Path(__file__).resolve().parent.parent / "tests" / "compile_kernels.py"
PARTIAL = dict(use_full_observation=False, num_other_agents_observed=10)
CONFIGS = (
    ("tag_continuous", "partial K=10, brute force", dict(PARTIAL, neighbour_search="brute_force")),
    ("tag_continuous", "partial K=10, grid", dict(PARTIAL, neighbour_search="grid")),
    ("tag_continuous", "partial K=10, grid tiles", dict(PARTIAL, neighbour_search="grid_tiles")),
    ("tag_continuous", "partial K=10, grid, bfloat16 observations",
     dict(PARTIAL, neighbour_search="grid", observation_dtype="bfloat16")),
    ("tag_continuous", "partial K=10, grid, state in global memory",
     dict(PARTIAL, neighbour_search="grid", num_taggers=100, num_runners=1900)),
    ("tag_continuous", "partial K=10, grid in global memory",
     dict(PARTIAL, neighbour_search="grid", num_taggers=50, num_runners=3950)),
    ("tag_continuous", "partial K=10, grid, continuous actions",
     dict(PARTIAL, neighbour_search="grid", continuous_actions=True)),
    ("tag_continuous", "full", dict(use_full_observation=True)),
    ("tag_gridworld", "partial", dict(use_full_observation=False)),
    ("tag_gridworld", "full", dict(use_full_observation=True)),
    ("beacon", "default", {}),
    ("beacon", "continuous", {"continuous_actions": True}),
)
"""(environment, label, params): the headline's and train-ref's K = 10 with each search (the
grid and the state the observations read in shared memory; bfloat16 observations; the state
in global memory at N = 2000, and the grid too at N = 4000), and every other kernel of the
shipped environments once."""
COLUMNS = ("registers", "stack", "spill_stores", "spill_loads", "shared", "instructions", "div_s64", "div_rn_f32")


def kernel_resources(env_id: str, params: dict) -> list[dict]:
    """One dict per kernel launched by a step and a reset of ``env_id`` (first launch of each)."""
    environment = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, str(SCRIPT), "--resources", env_id, json.dumps(params)],
                          env=environment, capture_output=True, text=True, check=True)
    unique: dict[str, dict] = {}
    for line in done.stdout.splitlines():
        result = json.loads(line)
        unique.setdefault(result["kernel"], result)
    return list(unique.values())


def table() -> str:
    lines = ["| environment | config | kernel | " + " | ".join(COLUMNS) + " |",
             "|---|---|---|" + "---:|" * len(COLUMNS)]
    for env_id, label, params in CONFIGS:
        for result in kernel_resources(env_id, params):
            figures = " | ".join(str(result[column]) for column in COLUMNS)
            lines.append(f"| {env_id} | {label} | {result['kernel']} | {figures} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(table_script(table, __doc__.splitlines()[0], "resources table"))
