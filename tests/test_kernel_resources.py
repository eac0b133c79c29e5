"""tag_continuous's step and reset kernels stay within the resource budgets of docs/design.md on sm_90.

NVVM compiles them and ptxas assembles them on the CPU (tests/compile_kernels.py --resources),
at K = 10 with each neighbour search, the grid (and the state it reads) in shared memory and in
global memory (and with bfloat16 observations), with full observations, and at K = 32. Budgets: no
local stack and no spills in any of them (a
K-nearest list indexed at run time would put it in local memory), no 64-bit integer division
(``div.s64``, a long subroutine), at most STEP_MAX_REGISTERS in the step kernel where the grid
and the state are in shared memory, and at most MAX_REGISTERS where a kernel already meets it;
the partial observations' register target is in docs/design.md. The same compile shows that they
compute in float32 and fuse no multiply-add (the rule of test_kernel_compile.py).
"""

import fcntl
import json
import os
from collections.abc import Callable

import pytest
from helpers import compile_kernels

pytestmark = pytest.mark.slow

MAX_REGISTERS = 64
"""65,536 registers per SM over 64 warps: at most 64 a thread for 50% occupancy (1,024 threads)."""
CONFIGS = {
    "full": dict(use_full_observation=True),
    "brute force": dict(use_full_observation=False, num_other_agents_observed=10, neighbour_search="brute_force"),
    "grid": dict(use_full_observation=False, num_other_agents_observed=10, neighbour_search="grid"),
    "grid tiles": dict(use_full_observation=False, num_other_agents_observed=10, neighbour_search="grid_tiles"),
    "grid, state in global memory": dict(use_full_observation=False, num_other_agents_observed=10,
                                         neighbour_search="grid", num_taggers=100, num_runners=1900),
    "grid in global memory": dict(use_full_observation=False, num_other_agents_observed=10, neighbour_search="grid",
                                  num_taggers=50, num_runners=3950),
    "grid, bfloat16, own state": dict(use_full_observation=False, num_other_agents_observed=10,
                                      neighbour_search="grid", observation_dtype="bfloat16", observe_own_state=True),
    "full, bfloat16, own state": dict(use_full_observation=True, observation_dtype="bfloat16", observe_own_state=True),
    "grid, continuous actions": dict(use_full_observation=False, num_other_agents_observed=10,
                                     neighbour_search="grid", continuous_actions=True),
    **{f"K = 32, {search}": dict(use_full_observation=False, num_other_agents_observed=32, num_runners=100,
                                 neighbour_search=search) for search in ("brute_force", "grid", "grid_tiles")},
}
"""Every kind of step and reset kernel tag_continuous compiles: its observations, searches and stores; and at K = 32,
where the loop over the observation's slots is not unrolled, each search (its list must still never be indexed at
run time: no local stack)."""
WITHIN_REGISTER_BUDGET = {"reset_environments (full)"}
"""The kernels held to MAX_REGISTERS today; the partial observations' are a target."""
STEP_MAX_REGISTERS = 96
"""5 blocks of 128 threads an SM: the step kernel's budget where the grid and the state are in shared memory."""
STAGED_CONFIGS = ("brute force", "grid", "grid tiles", "grid, bfloat16, own state", "grid, continuous actions")


@pytest.fixture(scope="module")
def observe_and_tag(tmp_path_factory) -> dict[str, dict]:
    """The step and reset kernels of every config, as ``<kernel> (<config>)``, and the runtime's
    count_resets: their resources, float64 variables and fused multiply-adds. The configs compile in one process
    (each after the first in about half the time of a process of its own), once for all the session's test
    processes (``compiled_once``)."""
    def compile_all() -> dict[str, dict]:
        labels = list(CONFIGS)
        results = compile_kernels("--both", "tag_continuous", *map(json.dumps, CONFIGS.values()))
        return {result["kernel"] if result["kernel"] == "count_resets" else
                f"{result['kernel']} ({labels[result['config']]})": result for result in results}

    return compiled_once(tmp_path_factory, compile_all)


def compiled_once(tmp_path_factory: pytest.TempPathFactory, compile_all: Callable[[], dict]) -> dict:
    """``compile_all()``, made by the first of the session's test processes (pytest-xdist's workers) to ask and
    read by the others, who wait for it: the module's tests run in several processes, and each compiling all
    the kernels again took a minute of both cores."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "observe_and_tag.json"
    with open(shared.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if shared.exists():
            return json.loads(shared.read_text())
        made = compile_all()
        shared.write_text(json.dumps(made))
        return made


def test_the_kernels_compute_in_float32_and_fuse_no_multiply_add(observe_and_tag):
    """The rounding rule: the NumPy reference rounds each product and sum apart (see test_kernel_compile.py)."""
    assert {name.split(" ")[0] for name in observe_and_tag} == {"step_environments", "reset_environments",
                                                                 "count_resets"}
    for name, result in observe_and_tag.items():
        assert result["float64"] == [], f"{name} computes in float64: {result['float64']}"
        assert result["contracted"] == 0, (
            f"{name} fuses {result['contracted']} multiply-add(s) the NumPy reference rounds twice; write the "
            f"products with warpsim.kernels.rounding.mul (or squared_distance)")


def test_observe_and_tag_kernels_use_no_local_stack_and_spill_nothing(observe_and_tag):
    for name, result in observe_and_tag.items():
        assert (result["stack"], result["spill_stores"], result["spill_loads"]) == (0, 0, 0), (
            f"{name} uses local memory: {result}")


def test_observe_and_tag_kernels_divide_no_64_bit_integers(observe_and_tag):
    for name, result in observe_and_tag.items():
        assert result["div_s64"] == 0, f"{name}: {result}"


def test_observe_and_tag_kernels_fit_the_register_budget(observe_and_tag):
    for name in WITHIN_REGISTER_BUDGET:
        assert observe_and_tag[name]["registers"] <= MAX_REGISTERS, f"{name}: {observe_and_tag[name]}"


def test_the_step_kernel_fits_five_blocks_a_multiprocessor_with_the_state_in_shared_memory(observe_and_tag):
    for config in STAGED_CONFIGS:
        result = observe_and_tag[f"step_environments ({config})"]
        assert result["registers"] <= STEP_MAX_REGISTERS, f"{config}: {result}"


def test_a_planted_list_indexed_at_run_time_shows_as_local_stack_and_a_64_bit_division():
    (planted,) = compile_kernels("--planted-resources")
    assert planted["stack"] >= 64 * 8 and planted["div_s64"] >= 1, planted


def test_the_report_counts_what_ptxas_and_the_ptx_say(observe_and_tag):
    """The figures are read, not defaulted: every kernel has registers and instructions, and the
    observations' features divide in IEEE float32."""
    assert len(observe_and_tag) == 2 * len(CONFIGS) + 1
    for name, result in observe_and_tag.items():
        assert result["registers"] > 0 and result["instructions"] > (20 if name == "count_resets" else 100), \
            f"{name}: {result}"
    assert observe_and_tag["step_environments (brute force)"]["div_rn_f32"] > 0
