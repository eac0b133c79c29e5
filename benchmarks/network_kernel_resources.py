"""What the networks' Triton kernels cost on an sm_90 GPU, from the compilers alone (no GPU needed).

    python benchmarks/network_kernel_resources.py [OUTPUT.md]

Compiles the forward kernel (``fused_actor_critic``) and the gradients' whole-trunk kernel
(``fused_trunk_backward``) as their launchers launch them at train-ref's shapes (71 inputs,
hidden layers of 64, 21 + 21 logits; the forward at tag-chase's width 128 too), with the
observations' rows as they were (71 entries) and aligned (``fused_forward.aligned_rows``: 80),
the forward kernel sampling those logits (``fused_sampling.actor_critic_sample``), and the kernels of
discrete actions on them (the update loss's both ways, ``categorical_terms``), and the gradients' kernels computing
that loss themselves (``fused_loss``) or a forward kernel computing it before them (``ppo_loss_forward``), through
Triton and ``ptxas -v``;
prints one Markdown table: registers per thread, spill bytes, programs that fit on one SM by their registers and
shared memory, in the PTX the global loads of 2 bytes and of 16, the asynchronous copies a pipelined loop issues
(``cp.async``) and the butterfly shuffles (a sum across a warp's lanes takes five), the machine instructions of
the kernel (nvdisasm; each once, a loop's body once however often it runs), and for the gradients' kernels those a
warp issues for one block of rows (its loop's pass, the first layer's loop counted as often as it runs).
tests/test_actor_critic_resources.py holds the kernels to these budgets.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile

import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import get_ptxas
from triton.compiler import ASTSource

from warpsim.commands import table_script
from warpsim.train import categorical_terms, fused_backward, fused_forward, fused_loss, fused_sampling, triton_launch

REGISTERS_PER_SM = 65536
SHARED_BYTES_PER_SM = 228 * 1024
SHARED_RESERVED_PER_PROGRAM = 1024
"""An H100's or H200's SM: its register file, its shared memory, and what the driver keeps of it per block."""
TRAIN_REF_INPUTS = 71
COLUMNS = ("registers", "spill_bytes", "programs_per_sm", "loads_2_bytes", "loads_16_bytes", "stores_2_bytes",
           "stores_16_bytes", "async_copies", "butterfly_shuffles", "instructions", "row_loop_instructions")


def compiled(kernel, constants: dict, float32: set[str], warps: int, stages: int = 1,
             divisible: frozenset[str] = frozenset(), pointers: dict[str, str] | None = None,
             max_registers: int | None = None, options: dict = triton_launch.OPTIONS, capability: int = 90):
    """``kernel`` compiled for a GPU of this compute capability (sm_90 unless told) at these constants, as Triton's
    launcher specializes it: every pointer 16-byte aligned, and the integer arguments named in ``divisible``
    multiples of 16 (Triton specializes a size that is); pointers named in ``float32`` to float32, those in
    ``pointers`` to the type it gives (``"*bf16"``, ``"*i32"``), the others to int16 (bfloat16 bits); ptxas held
    to ``max_registers`` a thread where given; with the launches' ``options`` (``triton_launch.OPTIONS``)."""
    pointers = pointers or {}
    signature = {name: "constexpr" if name in constants else
                 pointers.get(name, "*fp32" if name in float32 else "*i16") if name.endswith("_ptr") else "i32"
                 for name in kernel.arg_names}
    attributes = {(index,): [["tt.divisibility", 16]] for index, name in enumerate(kernel.arg_names)
                  if name not in constants and (name.endswith("_ptr") or name in divisible)}
    source = ASTSource(kernel, signature, constexprs={(kernel.arg_names.index(name),): value
                                                      for name, value in constants.items()}, attrs=attributes)
    return triton.compile(source, target=GPUTarget("cuda", capability, 32),
                          options=dict(num_warps=warps, num_stages=stages, maxnreg=max_registers, **options))


def resources(kernel, constants: dict, float32: set[str], warps: int, stages: int = 1,
              divisible: frozenset[str] = frozenset(), pointers: dict[str, str] | None = None,
              max_registers: int | None = None, options: dict = triton_launch.OPTIONS,
              loop_passes: int | None = None) -> dict[str, int]:
    """What ``kernel`` ``compiled`` (the same arguments) uses on an sm_90 GPU. With ``loop_passes``, also the
    instructions of a pass of its outermost loop, the loops inside run that often (``loop_instructions``)."""
    kernel = compiled(kernel, constants, float32, warps, stages, divisible, pointers, max_registers, options)
    ptx = kernel.asm["ptx"]
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as file:
        file.write(ptx)
        file.flush()
        report = subprocess.run([get_ptxas(90).path, "-v", "--gpu-name=sm_90a", file.name, "-o", "/dev/null"],
                                capture_output=True, text=True, check=True).stderr
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
    registers = re.search(r"Used (\d+) registers", report)
    assert spills and registers, report
    used = int(registers[1])
    by_registers = REGISTERS_PER_SM // (-(-used // 8) * 8 * 32 * warps)
    by_shared = SHARED_BYTES_PER_SM // (kernel.metadata.shared + SHARED_RESERVED_PER_PROGRAM)
    return {"registers": used, "spill_bytes": int(spills[1]) + int(spills[2]),
            "programs_per_sm": min(by_registers, by_shared),
            "loads_2_bytes": len(re.findall(r"ld\.global(?:\.\w+)*\.b16\b", ptx)),
            "loads_16_bytes": len(re.findall(r"ld\.global(?:\.\w+)*\.v4\.b32\b", ptx)),
            "stores_2_bytes": len(re.findall(r"st\.global(?:\.\w+)*\.b16\b", ptx)),
            "stores_16_bytes": len(re.findall(r"st\.global(?:\.\w+)*\.v4\.b32\b", ptx)),
            "async_copies": len(re.findall(r"cp\.async\.c[ag]\.shared\.global", ptx)),
            "butterfly_shuffles": len(re.findall(r"shfl\.sync\.bfly", ptx)),
            "instructions": machine_instructions(kernel.asm["cubin"])} | (
        {} if loop_passes is None else {"row_loop_instructions": loop_instructions(kernel.asm["cubin"], loop_passes)})


def machine_code(cubin: bytes) -> str:
    """A compiled kernel's SASS (nvdisasm)."""
    with tempfile.NamedTemporaryFile("wb", suffix=".cubin") as file:
        file.write(cubin)
        file.flush()
        return subprocess.run([triton.knobs.nvidia.nvdisasm.path, "-c", file.name], capture_output=True, text=True,
                              check=True).stdout


def machine_instructions(cubin: bytes) -> int:
    """The SASS instructions of a compiled kernel, padding (NOP) left out: each once, a loop's body once."""
    return len(re.findall(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?!NOP\b)\S", machine_code(cubin), re.MULTILINE))


def loop_instructions(cubin: bytes, inner_passes: int) -> int:
    """The SASS instructions (NOP left out) a warp issues in one pass of a kernel's outermost loop (the gradients'
    kernels' loop over blocks of rows), each loop inside it run ``inner_passes`` times (the first layer's products
    at train-ref's 80 entries a row, 64 at a time: 2)."""
    sass = machine_code(cubin)
    labels = {label: int(address, 16) for label, address in
              re.findall(r"^\.(L_x_\d+):\s*\n\s*/\*([0-9a-f]{4,})\*/", sass, re.MULTILINE)}
    instructions = [(int(address, 16), body) for address, body in
                    re.findall(r"^\s*/\*([0-9a-f]{4,})\*/\s+(?!NOP\b)([^;]*);", sass, re.MULTILINE)]
    loops = [(labels[target], address) for address, body in instructions
             for target in re.findall(r"\bBRA\b.*`\(\.(L_x_\d+)\)", body) if labels[target] <= address]
    first, last = max(loops, key=lambda loop: loop[1] - loop[0])
    inner = [(start, end) for start, end in loops if first <= start and end <= last and (start, end) != (first, last)]
    return sum(inner_passes ** sum(start <= address <= end for start, end in inner)
               for address, _ in instructions if first <= address <= last)


def forward_launch(hidden: int, stages: int, aligned: bool, sampled: bool = False, outputs: int = 42,
                   shared: bool = False) -> dict:
    """``compiled``'s arguments for the forward kernel as ``fused_forward.launch`` launches it for train-ref's roles
    at width ``hidden``; with ``sampled`` as ``launch_sample`` does, its 21 + 21 logits sampled in the kernel (its
    registers held as that launch holds them: ``fused_sampling.max_registers``)."""
    from warpsim.train.actor_critic_kernel import fused_actor_critic
    levels = dict(COMPONENTS=2, LEVELS=21, BLOCK_LEVELS=32) if sampled else dict(COMPONENTS=0, LEVELS=0,
                                                                                   BLOCK_LEVELS=16)
    constants = dict(HIDDEN=hidden, LAYERS=2, OUTPUTS=outputs, POLICY_ENTRIES=fused_forward.policy_row_entries(outputs),
                     SHARED=shared, BLOCK_ROWS=fused_forward.BLOCK_ROWS,
                     BLOCK_INPUTS=fused_forward.BLOCK_INPUTS, BLOCK_HIDDEN=hidden, BLOCK_OUTPUTS=64, DOT=tl.bfloat16,
                     **levels)
    float32 = {"values_ptr", "value_weight_ptr", "value_bias_ptr", "draws_ptr", "log_prob_ptr"}
    return dict(kernel=fused_actor_critic, constants=constants,
                float32=float32 | ({"policy_ptr"} if sampled else set()), warps=4, stages=stages,
                divisible=frozenset({"inputs", "run_stride"} if aligned else ()), pointers={"actions_ptr": "*i32"},
                max_registers=fused_sampling.max_registers(hidden) if sampled else None)


def forward(hidden: int, stages: int, aligned: bool, sampled: bool = False, outputs: int = 42,
            shared: bool = False) -> dict[str, int]:
    """What the forward kernel uses (``forward_launch``)."""
    return resources(**forward_launch(hidden, stages, aligned, sampled, outputs, shared))


def trunk_backward_launch(outputs: int, with_value: bool, aligned: bool, unrolled: bool = True,
                          narrow_tail: bool = True, loss: bool = False) -> dict:
    """``compiled``'s arguments for the whole-trunk gradients' kernel as ``fused_backward.launch_backward`` launches
    it at train-ref's shapes: the actor's (42 logits), the critic's (``outputs`` 1) or a shared trunk's
    (``with_value``); not ``unrolled``, its first layer's products in a loop (``fused_backward.input_chunks``); not
    ``narrow_tail``, the inputs in whole blocks of 64 and the first layer's weight's gradient in one block of 128,
    where the launch takes a narrower block for the 16 inputs past 64 (``fused_backward.first_layer_columns``);
    with ``loss``, as ``fused_loss.launch`` launches it (``ACTOR_LAUNCH``, ``CRITIC_LAUNCH``), computing PPO's loss
    of two components of 21 actions (the actor's) or of the value's unclipped error (the critic's)."""
    from warpsim.train.actor_critic_backward_kernel import fused_trunk_backward
    hidden, block_inputs = fused_backward.WHOLE_TRUNK_HIDDEN, fused_backward.WHOLE_TRUNK_BLOCK_INPUTS
    if narrow_tail:
        columns = fused_backward.first_layer_columns(TRAIN_REF_INPUTS)
        chunks = fused_backward.chunk_constants(TRAIN_REF_INPUTS, block_inputs)
    else:
        columns = (fused_backward.FIRST_LAYER_INPUTS, 0)
        chunks = dict(INPUT_CHUNKS=-(-TRAIN_REF_INPUTS // block_inputs), INPUT_TAIL=0)
    entries = fused_forward.policy_row_entries(outputs)  # the loss's gradient in the forward kernel's rows
    constants = dict(HIDDEN=hidden, LAYERS=2, OUTPUTS=outputs, GRADIENT_ENTRIES=entries,
                     WITH_VALUE=with_value, BLOCK_ROWS=fused_backward.BACKWARD_BLOCK_ROWS, BLOCK_INPUTS=block_inputs,
                     BLOCK_HIDDEN=hidden, BLOCK_OUTPUTS=max(16, 1 << (outputs - 1).bit_length()),
                     BLOCK_IN=columns[0], TAIL_IN=columns[1], DOT=tl.bfloat16,
                     **(chunks if unrolled else dict(INPUT_CHUNKS=0, INPUT_TAIL=0)),
                     LOSS=loss, COMPONENTS=2 if loss else 0, LEVELS=21 if loss else 0, VALUE_CLIP=False, PICKED=loss)
    if loss and outputs > 1:
        components, levels = fused_backward.loss_columns(2, 21)
        constants.update(BLOCK_OUTPUTS=components * levels, BLOCK_LEVELS=levels)
    float32 = {name for name in fused_trunk_backward.arg_names if name.endswith("sums_ptr")}
    float32 |= {"value_weight_ptr", "value_gradient_ptr", "old_log_probs_ptr", "advantages_ptr", "old_values_ptr",
                "returns_ptr", "coefficients_ptr", "statistics_ptr"}
    float32 |= {"head_weight_ptr", "head_gradient_ptr", "head_bias_ptr"} if outputs == 1 else set()
    shape = fused_backward.TrunkLaunch(fused_backward.BACKWARD_BLOCK_ROWS, fused_backward.backward_warps(hidden, True),
                                       None)
    if loss:
        shape = fused_loss.ACTOR_LAUNCH if outputs > 1 else fused_loss.CRITIC_LAUNCH
    constants["BLOCK_ROWS"] = shape.block_rows
    return dict(kernel=fused_trunk_backward, constants=constants, float32=float32, warps=shape.warps,
                divisible=frozenset({"run_stride", "inputs"} if aligned else ()),
                pointers={"actions_ptr": "*i32", "picks_ptr": "*i64"},
                max_registers=shape.max_registers)


def trunk_backward(outputs: int, with_value: bool, aligned: bool, unrolled: bool = True,
                   narrow_tail: bool = True, loss: bool = False) -> dict[str, int]:
    """What the whole-trunk gradients' kernel uses (``trunk_backward_launch``), and the instructions a warp issues
    for a block of rows."""
    return resources(**trunk_backward_launch(outputs, with_value, aligned, unrolled, narrow_tail, loss),
                     loop_passes=-(-TRAIN_REF_INPUTS // fused_backward.WHOLE_TRUNK_BLOCK_INPUTS))


def loss_forward_launch() -> dict:
    """``compiled``'s arguments for the kernel computing PPO's loss in the networks' forward pass
    (``ppo_loss_kernel.ppo_loss_forward``) as ``fused_loss.launch`` launches it ``in_forward`` at train-ref's
    shapes: two components of 21 actions, the value's error unclipped, on aligned rows."""
    from warpsim.train.ppo_loss_kernel import ppo_loss_forward
    components, levels = fused_backward.loss_columns(2, 21)
    constants = dict(HIDDEN=64, LAYERS=2, OUTPUTS=42, GRADIENT_ENTRIES=fused_forward.policy_row_entries(42),
                     BLOCK_ROWS=fused_forward.BLOCK_ROWS, BLOCK_INPUTS=fused_forward.BLOCK_INPUTS, BLOCK_HIDDEN=64,
                     DOT=tl.bfloat16, COMPONENTS=2, LEVELS=21, BLOCK_COMPONENTS=components, BLOCK_LEVELS=levels,
                     VALUE_CLIP=False)
    float32 = {"value_weight_ptr", "value_bias_ptr", "old_log_probs_ptr", "advantages_ptr", "old_values_ptr",
               "returns_ptr", "coefficients_ptr", "value_gradient_ptr", "statistics_ptr"}
    return dict(kernel=ppo_loss_forward, constants=constants, float32=float32, warps=4, stages=fused_forward.STAGES,
                divisible=frozenset({"run_stride", "inputs"}), pointers={"actions_ptr": "*i32", "picks_ptr": "*i64"})


def layer_backward_launch(hidden: int, target: int, outputs: int, with_value: bool) -> dict:
    """``compiled``'s arguments for the gradients' kernel of one layer (``target``: 0 the first, 1 the second, 2 the
    head) as ``fused_backward.launch_backward`` launches it at train-ref's 71 inputs and two layers of width
    ``hidden``: the actor's (42 logits), the critic's (``outputs`` 1) or a shared trunk's (``with_value``), on rows
    aligned to 80 entries."""
    from warpsim.train.actor_critic_backward_kernel import fused_actor_critic_backward
    first_columns, tail = fused_backward.first_layer_columns(TRAIN_REF_INPUTS)
    block_outputs = max(16, 1 << (outputs - 1).bit_length())
    out, into = {0: (hidden, first_columns), 1: (hidden, hidden), 2: (block_outputs, hidden)}[target]
    constants = dict(HIDDEN=hidden, LAYERS=2, OUTPUTS=outputs,
                     GRADIENT_ENTRIES=fused_forward.policy_row_entries(outputs), TARGET=target, WITH_VALUE=with_value,
                     BLOCK_ROWS=fused_backward.BACKWARD_BLOCK_ROWS, BLOCK_INPUTS=fused_forward.BLOCK_INPUTS,
                     BLOCK_HIDDEN=hidden, BLOCK_OUTPUTS=block_outputs, BLOCK_OUT=out, BLOCK_IN=into,
                     TAIL_IN=tail if target == 0 else 0, DOT=tl.bfloat16,
                     **fused_backward.chunk_constants(TRAIN_REF_INPUTS, fused_forward.BLOCK_INPUTS))
    float32 = {"value_weight_ptr", "value_gradient_ptr", "weight_sums_ptr", "bias_sums_ptr"}
    float32 |= {"head_weight_ptr", "head_gradient_ptr"} if outputs == 1 else set()
    return dict(kernel=fused_actor_critic_backward, constants=constants, float32=float32,
                warps=fused_backward.backward_warps(hidden, False), divisible=frozenset({"run_stride", "inputs"}))


def categorical_launch(kernel_name: str) -> dict:
    """``compiled``'s arguments for a kernel of discrete actions (``categorical_terms_kernel``: the loss's
    ``categorical_terms`` and its gradient's ``categorical_terms_backward``) as its launcher launches it for
    train-ref's bfloat16 logits of two components of 21, in rows padded to 48 entries as the fused path's networks
    write them."""
    from warpsim.train import categorical_terms_kernel
    entries = fused_forward.aligned_size(42)
    logits = torch.zeros(1, entries, dtype=torch.bfloat16)[:, :42]
    constants = dict(COMPONENTS=2, LEVELS=21, BLOCK_ROWS=categorical_terms.BLOCK_ROWS, FAST=True,
                     **categorical_terms.read_layout(logits))
    float32 = {"log_prob_ptr", "entropy_ptr", "log_prob_gradient_ptr", "entropy_gradient_ptr"}
    return dict(kernel=getattr(categorical_terms_kernel, kernel_name), constants=constants, float32=float32,
                warps=4, divisible=frozenset({"logits_stride", "gradient_stride"}),
                pointers={"logits_ptr": "*bf16", "gradient_ptr": "*bf16", "actions_ptr": "*i32"})


def categorical(kernel_name: str) -> dict[str, int]:
    """What a kernel of discrete actions uses (``categorical_launch``)."""
    return resources(**categorical_launch(kernel_name))


def rows(aligned: bool) -> str:
    padded = TRAIN_REF_INPUTS - TRAIN_REF_INPUTS % -fused_forward.ROW_ALIGNMENT
    return f"{padded} (aligned)" if aligned else str(TRAIN_REF_INPUTS)


def table() -> str:
    lines = ["| kernel | shape | row entries | stages | " + " | ".join(COLUMNS) + " |",
             "|---|---|---|---:|" + "---:|" * len(COLUMNS)]
    entries = [(f"forward, width {hidden}", "64 rows x 4 warps", rows(aligned), stages,
                forward(hidden, stages, aligned))
               for hidden in (64, 128) for aligned, stages in ((False, 1), (True, 1), (True, fused_forward.STAGES))]
    entries += [(f"forward and the rollout's sampling, width {hidden}", "64 rows x 4 warps", rows(True),
                 fused_sampling.STAGES, forward(hidden, fused_sampling.STAGES, True, sampled=True))
                for hidden in (64, 128)]
    entries += [(f"gradients, {name}", "32 rows x 8 warps", rows(aligned), 1,
                 trunk_backward(outputs, with_value, aligned))
                for name, outputs, with_value in (("actor", 42, False), ("critic", 1, False))
                for aligned in (False, True)]
    entries += [(f"gradients with the loss, {name}", f"{shape.block_rows} rows x {shape.warps} warps", rows(True), 1,
                 trunk_backward(outputs, False, True, loss=True))
                for name, outputs, shape in (("actor", 42, fused_loss.ACTOR_LAUNCH),
                                             ("critic", 1, fused_loss.CRITIC_LAUNCH))]
    entries += [("the loss in a forward kernel (actor and critic)", f"{fused_forward.BLOCK_ROWS} rows x 4 warps",
                 rows(True), fused_forward.STAGES, resources(**loss_forward_launch()))]
    entries += [(name, f"{categorical_terms.BLOCK_ROWS} rows x 4 warps", "42 logits", 1, categorical(kernel_name))
                for name, kernel_name in (("loss's log-probabilities and entropy", "categorical_terms"),
                                          ("loss's gradient", "categorical_terms_backward"))]
    for kernel, shape, entries_of_a_row, stages, figures in entries:
        lines.append(f"| {kernel} | {shape} | {entries_of_a_row} | {stages} | "
                     + " | ".join(str(figures.get(column, "-")) for column in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(table_script(table, __doc__.splitlines()[0], "resources table"))
