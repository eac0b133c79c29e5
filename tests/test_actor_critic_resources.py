"""The networks' kernels compiled for an sm_90 GPU by Triton and ptxas, with no GPU: at train-ref's
shapes they stay in registers, and on its rows aligned to 16 entries they read vectors and the forward
kernel pipelines its first layer's reads; the kernels of discrete actions stay in registers too. The
forward kernel's first form took all 255 registers, spilled, and ran no faster than the eager forward on
an H200 (benchmarks/results/train-speed/README.md)."""

import re
from pathlib import Path

import pytest
from helpers import load_script

from warpsim.train import fused_forward, fused_loss, fused_sampling, triton_launch

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

from warpsim.train.actor_critic_kernel import _bfloat16, _operand, _round, _tanh  # noqa: E402
from warpsim.train.categorical_terms_kernel import _exp  # noqa: E402

NETWORK_KERNELS = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "network_kernel_resources.py")


@pytest.mark.parametrize("hidden, outputs, shared, sampled, most_registers", [
    (64, 42, False, False, 128),  # train-ref: two trunks, 21 + 21 logits (four programs an SM)
    (64, 42, False, True, 96),  # the same logits sampled in the kernel, as the rollout runs it (five)
    (64, 2, True, False, 128),  # a shared trunk, a Gaussian's two means
    (128, 42, False, False, 255),  # tag-chase's width: no spills is the bar
    (128, 42, False, True, 168),  # sampled, as many programs an SM as without (three)
], ids=["train-ref", "train-ref sampled", "shared", "width 128", "width 128 sampled"])
def test_the_forward_kernel_stays_in_registers(hidden, outputs, shared, sampled, most_registers):
    stages = fused_sampling.STAGES if sampled else fused_forward.STAGES
    used = NETWORK_KERNELS.forward(hidden, stages, True, sampled, outputs, shared)
    assert used["spill_bytes"] == 0 and used["registers"] <= most_registers, used


@pytest.mark.parametrize("hidden", [64, 128], ids=["train-ref", "width 128"])
@pytest.mark.parametrize("target, outputs, with_value", [
    (0, 42, False), (1, 42, False), (2, 42, False),  # the actor's first layer, its second, the policy's head
    (0, 1, False), (2, 1, False),  # the critic's first layer and the value's column
    (1, 2, True),  # a shared trunk's second layer, under both heads
], ids=["first", "second", "policy head", "critic first", "value head", "shared second"])
def test_the_gradients_kernel_stays_in_registers(hidden, target, outputs, with_value):
    """At train-ref's 71 inputs and two layers, with ``launch_backward``'s shape of a program; its biases' gradients
    summed by products."""
    used = NETWORK_KERNELS.resources(**NETWORK_KERNELS.layer_backward_launch(hidden, target, outputs, with_value))
    assert used["spill_bytes"] == 0, used
    # a bias's gradient, a sum over the rows, is a product on the tensor cores: only the value's float32 column
    # sums across a warp's lanes
    assert (used["butterfly_shuffles"] > 0) == (outputs == 1 and target == 2), used


@pytest.mark.parametrize("outputs, with_value", [(42, False), (1, False), (2, True)],
                         ids=["actor", "critic", "shared trunk"])
def test_a_whole_trunks_gradients_kernel_stays_in_registers(outputs, with_value):
    """At train-ref's shapes (71 inputs, two layers of 64): every gradient of a trunk and its head (and
    of the value's column, for a shared trunk) summed in one program's registers, the biases' by products."""
    used = NETWORK_KERNELS.resources(**NETWORK_KERNELS.trunk_backward_launch(outputs, with_value, True))
    assert used["spill_bytes"] == 0, used
    # the biases' gradients summed on the tensor cores (the actor's program made 53 butterfly shuffles when they
    # were sums across the warps): only the value's float32 column sums across a warp's lanes
    assert (used["butterfly_shuffles"] > 0) == (outputs == 1 or with_value), used


@pytest.mark.parametrize("outputs, most_instructions_a_row", [(42, 260), (1, 130)], ids=["actor", "critic"])
def test_a_whole_trunks_gradients_kernel_computing_the_loss_stays_in_registers(outputs, most_instructions_a_row):
    """At train-ref's shapes, PPO's loss computed in the kernel (``fused_loss``), each program's shape its launch's:
    no spills, two programs an SM, and a row within its budget of instructions (the actor's: 420 at 32 rows by 8 warps
    when each component's log-softmax was a pass over all 64 columns; 120 without the loss; the critic's 122)."""
    shape = fused_loss.ACTOR_LAUNCH if outputs > 1 else fused_loss.CRITIC_LAUNCH
    used = NETWORK_KERNELS.trunk_backward(outputs, False, True, loss=True)
    assert used["spill_bytes"] == 0 and used["programs_per_sm"] == 2, used
    assert used["row_loop_instructions"] * shape.warps / shape.block_rows <= most_instructions_a_row, used


def test_the_loss_in_a_forward_kernel_stays_in_registers_with_each_rows_logits_in_one_warp():
    """At train-ref's shapes, PPO's loss computed in a forward kernel of its own (``fused_loss.launch``
    ``in_forward``): no spills, three programs an SM (136 registers), and a component's log-softmax reduced across
    a warp's lanes, never through shared memory: at the forward kernel's 64 rows by 4 warps each warp holds 16 whole
    rows, where the gradients' kernels' 16 rows by 4 warps spread a row's logits over all four."""
    launch = NETWORK_KERNELS.loss_forward_launch()
    used = NETWORK_KERNELS.resources(**launch)
    assert used["spill_bytes"] == 0 and used["programs_per_sm"] >= 3, used
    products = re.findall(r"nvidia_mma<\{[^}]*warpsPerCTA = \[(\d+), (\d+)\]",
                          NETWORK_KERNELS.compiled(**launch).asm["ttgir"])
    assert products and set(products) == {("4", "1")}, products  # the warps split the rows, never a row's columns


@pytest.mark.parametrize("hidden", [64, 128], ids=["train-ref", "width 128"])
def test_aligned_rows_make_the_forward_kernel_read_vectors_pipelined_on_no_more_registers(hidden):
    """Rows of 80 entries, not 71: no observation entry read alone, the first layer's reads pipelined, and at
    least as many programs on an SM."""
    unaligned, aligned = (NETWORK_KERNELS.forward(hidden, stages, rows_aligned)
                          for stages, rows_aligned in ((1, False), (fused_forward.STAGES, True)))
    assert unaligned["loads_2_bytes"] > 0 and unaligned["async_copies"] == 0, unaligned
    assert aligned["loads_2_bytes"] < unaligned["loads_2_bytes"] / 8 and aligned["async_copies"] > 0, aligned
    assert aligned["registers"] < unaligned["registers"] and aligned["spill_bytes"] == 0, (aligned, unaligned)
    assert aligned["programs_per_sm"] >= unaligned["programs_per_sm"], (aligned, unaligned)


def test_aligned_rows_make_the_gradients_kernels_read_vectors():
    """The whole-trunk gradients' kernels at train-ref's shapes read no 2-byte entry from aligned rows."""
    for outputs in (42, 1):
        unaligned, aligned = (NETWORK_KERNELS.trunk_backward(outputs, False, rows_aligned)
                              for rows_aligned in (False, True))
        assert unaligned["loads_2_bytes"] > 0 and aligned["loads_2_bytes"] == 0, (outputs, aligned, unaligned)
        assert aligned["spill_bytes"] == 0 and aligned["programs_per_sm"] >= unaligned["programs_per_sm"], aligned


def test_a_whole_trunks_gradients_program_reads_its_first_layers_weight_before_its_blocks_of_rows():
    """Its first layer's products unrolled (``fused_backward.input_chunks``), each part of the weight is the same
    for every block of rows, read once before them: a block issues fewer instructions than in a loop, and holds
    no more registers."""
    for outputs in (42, 1):
        looped, unrolled = (NETWORK_KERNELS.trunk_backward(outputs, False, True, unrolled)
                            for unrolled in (False, True))
        assert unrolled["row_loop_instructions"] < looped["row_loop_instructions"] * 0.95, (outputs, unrolled, looped)
        assert unrolled["registers"] <= looped["registers"] and unrolled["spill_bytes"] == 0, (unrolled, looped)


def test_a_narrow_last_block_of_inputs_saves_the_whole_trunk_gradients_work_and_registers():
    """Train-ref's 80 inputs as 64 and 16 (``fused_backward.first_layer_columns`` and ``input_chunks``), not as
    blocks of 64 and 128 of which 48 entries a row are zeros: a block of rows issues fewer instructions in no more
    registers, and more of the critic's programs fit on an SM (ptxas, sm_90: two against one)."""
    for outputs in (42, 1):
        whole, narrow = (NETWORK_KERNELS.trunk_backward(outputs, False, True, narrow_tail=narrow_tail)
                         for narrow_tail in (False, True))
        assert narrow["row_loop_instructions"] < whole["row_loop_instructions"], (outputs, narrow, whole)
        assert narrow["registers"] <= whole["registers"] and narrow["spill_bytes"] == 0, (outputs, narrow, whole)
        if outputs == 1:  # the critic's
            assert narrow["programs_per_sm"] > whole["programs_per_sm"], (narrow, whole)


@pytest.mark.parametrize("kernel, most_per_row", [("categorical_terms", 30), ("categorical_terms_backward", 50)])
def test_the_kernels_of_discrete_actions_hold_a_row_a_thread_in_registers(kernel, most_per_row):
    """The update loss's kernels on train-ref's bfloat16 logits (two components of 21) in the fused path's rows
    (padded to 48 entries): no spills, at least 32 warps an SM to hide their memory's latency, 16-byte loads, and
    a row's sums in its thread, no butterfly shuffle: a warp issues at most ``most_per_row`` instructions a row,
    where a row over four lanes took 54 and 70 (and a component read from its first entry, a lane each, 640 and
    192 shuffles a program)."""
    from warpsim.train import categorical_terms

    used = NETWORK_KERNELS.categorical(kernel)
    assert used["spill_bytes"] == 0 and used["programs_per_sm"] >= 8, used
    assert used["loads_2_bytes"] == 0 and used["loads_16_bytes"] > 0 and used["butterfly_shuffles"] == 0, used
    assert used["instructions"] * 4 / categorical_terms.BLOCK_ROWS <= most_per_row, used


def test_the_gradient_of_discrete_actions_is_stored_16_bytes_at_a_time():
    """The loss's gradient at train-ref's logits in the fused path's rows padded to 48 entries: a tile of 8 entries a
    store, its padding and the tile both components share included (at warpsim 536d8d6, 56 stores of 2 bytes a
    row, which an H200 took 0.20-0.48 ms to write for 880,000 rows, against 0.04 ms for the forward kernel reading
    them)."""
    used = NETWORK_KERNELS.categorical("categorical_terms_backward")
    assert used["stores_2_bytes"] == 0 and used["stores_16_bytes"] == 6, used


@triton.jit
def _copy(source_ptr, copy_ptr):
    offsets = tl.arange(0, 64)
    tl.store(copy_ptr + offsets, tl.load(source_ptr + offsets))


@triton.jit
def _copy_as_operand(bits_ptr, copy_ptr):
    offsets = tl.arange(0, 64)
    tl.store(copy_ptr + offsets, _operand(tl.load(bits_ptr + offsets), tl.bfloat16))


@triton.jit
def _copy_converted(bits_ptr, copy_ptr):
    offsets = tl.arange(0, 64)
    tl.store(copy_ptr + offsets, _bfloat16(tl.load(bits_ptr + offsets)).to(tl.bfloat16))


def test_the_kernels_take_bfloat16_bits_as_operands_with_no_instruction():
    """The networks' kernels read bfloat16 bits (int16) and make them a product's operand (``_operand``) with no
    instruction: a copy of bits through it compiles to as many machine instructions as a copy of bfloat16, and
    to fewer than through float32, as the kernels converted them before (a third of the gradients' kernel's
    instructions)."""
    def instructions(kernel, source: str) -> int:
        return NETWORK_KERNELS.resources(kernel, {}, set(), 4, pointers={kernel.arg_names[0]: source,
                                                                          "copy_ptr": "*bf16"})["instructions"]

    copied = instructions(_copy, "*bf16")
    assert instructions(_copy_as_operand, "*i16") == copied < instructions(_copy_converted, "*i16")


@triton.jit
def _multiply_add(factor_ptr, term_ptr, result_ptr):
    offsets = tl.arange(0, 64)
    factor = tl.load(factor_ptr + offsets)
    tl.store(result_ptr + offsets, factor * factor + tl.load(term_ptr + offsets))


def test_the_kernels_compile_with_products_and_sums_fused_as_their_gpu_tests_ran():
    """``triton_launch.OPTIONS``, which every launch passes: a product and a sum compile to one instruction, as
    Triton's default made them until 3.9 (3.10 turns it off)."""
    def instructions(options: dict) -> int:
        return NETWORK_KERNELS.resources(_multiply_add, {}, {"factor_ptr", "term_ptr", "result_ptr"}, 1,
                                         options=options)["instructions"]

    assert instructions(triton_launch.OPTIONS) < instructions({"enable_fp_fusion": False})


@triton.jit
def _tanh_of(values_ptr, tanh_ptr, DOT: tl.constexpr):
    offsets = tl.arange(0, 128)
    tl.store(tanh_ptr + offsets, _tanh(tl.load(values_ptr + offsets), DOT))


def test_on_a_gpu_the_kernels_tanh_makes_no_range_checks():
    """``_tanh`` as the kernels compile it for a GPU (``DOT`` bfloat16) takes the power of two and the division that
    flush subnormals: at least five machine instructions an entry fewer than the forms Triton's interpreter runs,
    compiled alike (the range checks around each; the same values, as its docstring says)."""
    def instructions(dot) -> int:
        return NETWORK_KERNELS.resources(_tanh_of, {"DOT": dot}, {"values_ptr", "tanh_ptr"}, 4)["instructions"]

    assert instructions(tl.bfloat16) <= instructions(tl.float32) - 5


@triton.jit
def _exp_of(values_ptr, exp_ptr, FAST: tl.constexpr):
    offsets = tl.arange(0, 128)
    tl.store(exp_ptr + offsets, _exp(tl.load(values_ptr + offsets), FAST))


def test_on_a_gpu_the_kernels_of_discrete_actions_exponentials_make_no_range_checks():
    """``categorical_terms_kernel._exp`` as the log-softmaxes compile it for a GPU (``FAST``) takes the power of two
    that flushes subnormals: at least three machine instructions an entry fewer than Triton's exponential, which
    the interpreter runs (the range checks around each; the GPU tests check the values)."""
    def instructions(fast: bool) -> int:
        return NETWORK_KERNELS.resources(_exp_of, {"FAST": fast}, {"values_ptr", "exp_ptr"}, 4)["instructions"]

    assert instructions(True) <= instructions(False) - 3


@triton.jit
def _round_trip(values_ptr, rounded_ptr, DOT: tl.constexpr):
    offsets = tl.arange(0, 1024)
    tl.store(rounded_ptr + offsets, _round(tl.load(values_ptr + offsets), DOT))


def test_on_a_gpu_the_kernels_round_two_entries_a_conversion():
    """``_round`` as the kernels compile it for a GPU converts two entries an instruction (a round trip through
    bfloat16 compiled to one conversion an entry; the GPU tests check the values)."""
    ptx = NETWORK_KERNELS.compiled(_round_trip, {"DOT": tl.bfloat16}, {"values_ptr", "rounded_ptr"}, 4).asm["ptx"]
    assert "cvt.rn.bf16.f32" not in ptx and ptx.count("cvt.rn.bf16x2.f32") > 0
