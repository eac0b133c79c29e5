"""The rollout's networks kernel compiled for an sm_90 GPU by Triton and ptxas, with no GPU: at
train-ref's shapes it stays in registers. Its first form took all 255 registers, spilled, and ran
no faster than the eager forward on an H200 (benchmarks/results/train-speed/README.md)."""

import re
import subprocess
import tempfile

import pytest

from warpsim.train import fused_forward

triton = pytest.importorskip("triton")


def resources(hidden: int, outputs: int, shared: bool) -> dict[str, int]:
    """ptxas's registers and spill bytes of the kernel at train-ref's 71 inputs, as ``launch`` shapes it."""
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import get_ptxas
    from triton.compiler import ASTSource

    from warpsim.train.actor_critic_kernel import fused_actor_critic as kernel
    constants = dict(HIDDEN=hidden, LAYERS=2, OUTPUTS=outputs, SHARED=shared, BLOCK_ROWS=fused_forward.BLOCK_ROWS,
                     BLOCK_INPUTS=fused_forward.BLOCK_INPUTS, BLOCK_HIDDEN=hidden, BLOCK_OUTPUTS=64, DOT=tl.bfloat16)
    float32 = {"values_ptr", "value_weight_ptr", "value_bias_ptr"}
    signature = {name: "constexpr" if name in constants else ("*fp32" if name in float32 else "*i16")
                 if name.endswith("_ptr") else "i32" for name in kernel.arg_names}
    source = ASTSource(kernel, signature, constexprs={(kernel.arg_names.index(name),): value
                                                      for name, value in constants.items()})
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4, num_stages=1))
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as ptx:
        ptx.write(compiled.asm["ptx"])
        ptx.flush()
        report = subprocess.run([get_ptxas(90).path, "-v", "--gpu-name=sm_90a", ptx.name, "-o", "/dev/null"],
                                capture_output=True, text=True, check=True).stderr
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
    registers = re.search(r"Used (\d+) registers", report)
    assert spills and registers, report
    return {"registers": int(registers[1]), "spill_stores": int(spills[1]), "spill_loads": int(spills[2])}


@pytest.mark.parametrize("hidden, outputs, shared, most_registers", [
    (64, 42, False, 128),  # train-ref: two trunks, 21 + 21 logits
    (64, 2, True, 128),  # a shared trunk, a Gaussian's two means
    (128, 42, False, 255),  # tag-chase's width: no spills is the bar
], ids=["train-ref", "shared", "width 128"])
def test_the_kernel_stays_in_registers(hidden, outputs, shared, most_registers):
    used = resources(hidden, outputs, shared)
    assert used["spill_stores"] == used["spill_loads"] == 0 and used["registers"] <= most_registers, used
