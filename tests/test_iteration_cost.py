"""The cost model's counters (warpsim.bench.kernel_counts and region_counts, for benchmarks/iteration_cost.py):
kernels and bytes of eager operations and of compiled regions."""

from pathlib import Path

import torch
from helpers import load_script

from warpsim.bench import kernel_counts, region_counts

iteration_cost = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "iteration_cost.py")


def test_each_launching_operation_counts_a_kernel_and_the_bytes_it_reads_and_writes():
    x = torch.ones(10)
    counter = kernel_counts.Counter()
    with counter:
        y = x.view(2, 5).transpose(0, 1)  # views: no kernel
        z = y * 2.0 + 1.0  # two kernels of 40 bytes in and 40 out each
    assert counter.tally.kernels == 2 and counter.tally.bytes == 2 * (40 + 40)
    assert dict(counter.tally.by_op) == {"mul": 1, "add": 1} and torch.equal(z, torch.full((5, 2), 3.0))


def test_a_foreach_operation_is_one_kernel_for_its_list_or_one_per_tensor_where_a_list_broadcasts():
    """torch's multi-tensor pass takes a list whose lists match in shapes (a scalar, or tensors alike); a
    per-run rate [R, 1] against a parameter [R, 4] broadcasts, a kernel a tensor; a norm is three."""
    tensors = [torch.ones(4), torch.ones(2, 3), torch.ones(())]
    parameters, rates = [torch.ones(2, 4), torch.ones(2, 3)], [torch.ones(2, 1), torch.ones(2, 1)]
    counter = kernel_counts.Counter()
    with counter:
        torch._foreach_add_(tensors, 1.0)
    assert counter.tally.kernels == 1 and counter.tally.bytes == 2 * (4 + 6 + 1) * 4
    assert [t.flatten()[0].item() for t in tensors] == [2.0, 2.0, 2.0]
    with counter:
        torch._foreach_mul(tensors[:2], tensors[:2])
        torch._foreach_mul(parameters, rates)
        torch._foreach_norm(tensors)
    assert counter.tally.kernels == 1 + 1 + 2 + kernel_counts.FOREACH_NORM_LAUNCHES


def test_a_draw_into_a_buffer_is_one_kernel_that_writes_it_and_reads_nothing():
    """``rand`` with ``out`` (the runs' draws into one buffer): a resize of its own size (no kernel) and a fill,
    whose 10 float32 are written, not read; an in-place product reads and writes them."""
    buffer = torch.empty(2, 10)
    counter = kernel_counts.Counter()
    with counter:
        torch.rand(10, generator=torch.Generator().manual_seed(0), out=buffer[1])
    assert (counter.tally.kernels, counter.tally.bytes) == (1, 10 * 4)
    with counter:
        buffer[1].mul_(2.0)
    assert (counter.tally.kernels, counter.tally.bytes) == (2, 10 * 4 + 2 * 10 * 4)


def test_a_product_with_an_operand_whose_rows_are_not_16_byte_aligned_is_counted_apart():
    """bfloat16 rows of 72 entries are 144 bytes, of 71 are not a multiple of 16, and neither is a matrix that
    starts one entry into its storage; a transposed view, a broadcast bias and a vector are read as they are."""
    aligned, unaligned = torch.ones(1, 4, 72, dtype=torch.bfloat16), torch.ones(1, 4, 71, dtype=torch.bfloat16)
    assert kernel_counts.aligned_matrix(aligned) and kernel_counts.aligned_matrix(aligned.transpose(1, 2))
    assert kernel_counts.aligned_matrix(aligned[..., 8:]) and not kernel_counts.aligned_matrix(aligned[..., 1:65])
    assert not kernel_counts.aligned_matrix(unaligned) and not kernel_counts.aligned_matrix(unaligned.mT)
    assert not kernel_counts.aligned_matrix(torch.ones(4, 16, 16)[:, ::2, ::2])
    assert kernel_counts.aligned_matrix(torch.ones(1, 71).expand(4, 71))
    assert kernel_counts.aligned_matrix(unaligned[0, :1])
    columns, wide, narrow = (torch.ones(1, *shape, dtype=torch.bfloat16) for shape in ((8, 4), (72, 8), (71, 8)))
    counter = kernel_counts.Counter()
    with counter:
        torch.bmm(aligned, wide)
        torch.bmm(unaligned, narrow)
        torch.bmm(columns, aligned[..., :71])
        torch.add(unaligned, 1.0)
    assert counter.tally.kernels == 4 and counter.tally.unaligned_products == 2
    assert counter.tally.unaligned_bytes == 2 * (4 * 71 + 71 * 8 + 4 * 8) * 2  # each moves 884 bfloat16 entries


def test_an_expanded_input_is_read_once_and_kernels_called_as_they_are_set_apart():
    row, weights = torch.ones(1, 8), torch.ones(8, 4)
    counter = kernel_counts.Counter()
    with counter:
        torch.mm(row.expand(16, 8), weights)
    assert counter.tally.kernels == 1
    assert counter.tally.bytes == counter.tally.extern_bytes == 8 * 4 + 8 * 4 * 4 + 16 * 4 * 4


def test_a_batched_product_with_a_broadcast_bias_counts_the_copy_of_the_bias_into_its_output():
    """aten copies the addend (a bias, broadcast) into the output, and cuBLAS reads it back: a kernel more, a launch
    within the operation as a compiled region calls it, and the output's bytes twice more."""
    inputs, weight, output = torch.ones(2, 16, 8), torch.ones(2, 8, 4), 4 * 2 * 16 * 4
    for addend in (torch.ones(2, 1, 4), torch.ones(2, 4).unsqueeze(1).expand(2, 16, 4)):
        counter = kernel_counts.Counter()
        with counter:
            torch.baddbmm(addend, inputs, weight)
        assert (counter.tally.kernels, counter.tally.launched_within) == (2, 1)
        assert counter.tally.bytes == counter.tally.extern_bytes == 4 * (2 * 4 + 2 * 16 * 8 + 2 * 8 * 4) + 3 * output


def test_bytes_at_the_real_size_are_the_part_per_unit_and_a_share_of_the_fixed_part():
    small, large = {"bytes": 100.0 + 2 * 10, "units": 2}, {"bytes": 100.0 + 4 * 10, "units": 4}
    assert iteration_cost.at_size(small, large, "bytes", "units", 1000) == 10 + 100 / 1000


def test_the_rollouts_own_kernel_moves_its_operands_and_is_one_launch_of_a_compiled_region():
    """``fused_forward.actor_critic``: its observations, weights and outputs, no activations; inductor's
    wrapper code calls it as it is."""
    from warpsim.train import fused_forward
    runs, rows, inputs, hidden = 1, 8, 6, 16
    arguments = (torch.ones(runs, rows, inputs, dtype=torch.bfloat16), torch.ones(runs, hidden, inputs),
                 torch.ones(runs, hidden), torch.ones(runs, 0, hidden, hidden), torch.ones(runs, 0, hidden),
                 torch.ones(runs, hidden, inputs), torch.ones(runs, hidden), torch.ones(runs, 0, hidden, hidden),
                 torch.ones(runs, 0, hidden), torch.ones(runs, 3, hidden), torch.ones(runs, 3), torch.ones(runs, 1, hidden),
                 torch.ones(runs, 1), False)
    counter = kernel_counts.Counter()
    with counter:
        fused_forward.actor_critic(*arguments)
    operands = sum(t.numel() * t.element_size() for t in arguments if isinstance(t, torch.Tensor))
    assert counter.tally.kernels == 1 and dict(counter.tally.by_op) == {"actor_critic": 1}
    # a bfloat16 policy of 3 in rows of 8 entries (fused_forward.policy_row_entries), a float32 value
    assert counter.tally.bytes == counter.tally.extern_bytes == operands + rows * 8 * 2 + rows * 4
    # two one-layer trunks of 6 x 16, then 3 logits and the value from 16 features, for each of the 8 rows
    assert counter.tally.network_multiply_adds == rows * (2 * inputs * hidden + (3 + 1) * hidden)
    assert counter.tally.gradient_multiply_adds == 0, "the forward kernel's, at its own rate"
    wrapper = "    buf1 = torch.ops.warpsim.actor_critic.default(arg0_1, arg1_1)\n    extern_kernels.bmm(a, b, out=c)\n"
    assert region_counts.LAUNCH.findall(wrapper) == ["torch.ops.warpsim.actor_critic.default", "extern_kernels.bmm"]


def test_a_compiled_region_is_counted_as_inductor_writes_it_for_a_gpu():
    """Triton kernels, written on the CPU: a matrix product called as it is and one kernel of the ReLU and the
    addition fused, which reads the product once and writes the result (8 x 16 float32 each); inductor would
    have fused the product's bias-free tail into C++ loops on a CPU."""
    import pytest
    pytest.importorskip("triton")

    def product_relu_plus_one(a, b):
        return torch.mm(a, b).relu() + 1

    code, generated_bytes = region_counts.gpu_code(product_relu_plus_one, (torch.ones(8, 4), torch.ones(4, 16)))
    assert "@triton.jit" in code and "cpp_fused" not in code
    launches = region_counts.LAUNCH.findall(code)
    assert launches[0] == "extern_kernels.mm" and len(launches) == 2 and launches[1].startswith("triton_")
    assert generated_bytes == 2 * 8 * 16 * 4


def test_a_counted_region_runs_its_eager_function_and_adds_what_inductor_writes_for_a_gpu(monkeypatch):
    """Counted, a compiled region computes its result eagerly (nothing is compiled for the CPU), and adds to
    the counter the kernels and bytes of its code for a GPU, analysed at its first call only; uncounted
    (``eager_regions``), it runs eagerly too."""
    import pytest
    pytest.importorskip("triton")
    from warpsim.train import compiled

    region = compiled.Compiled(lambda a, b: torch.mm(a, b).relu() + 1, "a test region")
    monkeypatch.setattr(region, "compiled", lambda *args: pytest.fail("compiled for the device at hand"))
    analysed = []

    def analyse(wrapper, args):
        analysed.append(wrapper)
        return kernel_counts.Tally(kernels=2, bytes=7)

    monkeypatch.setattr(region_counts, "analyse", analyse)
    a, b = torch.ones(8, 4), -torch.ones(4, 16)
    original = compiled.Compiled.__call__
    counter = kernel_counts.Counter()
    with region_counts.CountedRegions(counter), counter:
        results = [region(a, b), region(a, b)]
    with region_counts.eager_regions():
        results.append(region(a, -b))
    assert analysed == [region] and (counter.tally.kernels, counter.tally.bytes) == (4, 14)
    assert [float(result.sum()) for result in results] == [8 * 16, 8 * 16, 8 * 16 * 5]
    assert compiled.Compiled.__call__ is original, "the compiled path again once out of both"


def test_a_gather_reads_of_its_source_only_the_rows_it_gathers():
    """A minibatch of 3 rows of a 100-row rollout: the 3 rows (and the indices) read, the output written."""
    rollout, picks = torch.ones(100, 8), torch.tensor([5, 7, 9])
    counter = kernel_counts.Counter()
    with counter:
        minibatch = rollout[picks]
    row_bytes = 8 * 4
    assert counter.tally.bytes == 3 * row_bytes + 3 * 8 + 3 * row_bytes and minibatch.shape == (3, 8)


def test_the_gradients_op_is_counted_as_its_launcher_runs_on_a_gpu():
    """``fused_backward.actor_critic_backward``: one Triton launch per trunk (a whole trunk's gradients, at
    this width), each reading the observations; then one sum of the partial sums, all the gradients
    side by side. Its partial sums are as many as at a real size (``PARTIAL_SUMS``), whatever the rows."""
    import pytest
    pytest.importorskip("triton")
    from warpsim.train import fused_backward
    runs, rows, inputs, hidden, outputs = 1, 8, 6, 16, 3

    def bf16(*shape: int) -> torch.Tensor:
        return torch.ones(shape, dtype=torch.bfloat16)

    arguments = (bf16(runs, rows, inputs), bf16(runs, hidden, inputs), bf16(runs, hidden),
                 bf16(runs, 0, hidden, hidden), bf16(runs, 0, hidden), bf16(runs, hidden, inputs), bf16(runs, hidden),
                 bf16(runs, 0, hidden, hidden),
                 bf16(runs, 0, hidden), bf16(runs, outputs, hidden), bf16(runs, outputs), torch.ones(runs, 1, hidden),
                 torch.ones(runs, 1), False)
    gradients = bf16(runs, rows, outputs), torch.ones(runs, rows)
    counter = kernel_counts.Counter()
    with counter:
        fused_backward.actor_critic_backward(*gradients, *arguments)
    launches = 2  # two trunks
    assert dict(counter.tally.by_op) == {"actor_critic_backward_kernel": launches, "sum": 1}
    assert counter.tally.kernels == launches + 1 and counter.tally.launched_within == launches
    parameters = sum(t[0].numel() for t in arguments[1:13])
    partial_sums = fused_backward.PARTIAL_SUMS * parameters * 4
    observations = rows * inputs * 2
    assert counter.tally.bytes == counter.tally.extern_bytes
    assert counter.tally.bytes > launches * observations + 2 * partial_sums
    # per row: both trunks again, the features' and the heads' gradients, and each first layer's weight's
    forward = 2 * inputs * hidden + (outputs + 1) * hidden
    assert counter.tally.network_multiply_adds == rows * (forward + (outputs + 1) * hidden + 2 * inputs * hidden)
    assert counter.tally.gradient_multiply_adds == counter.tally.network_multiply_adds, "at the gradients' rate"


def test_the_networks_multiply_adds_count_further_layers_and_a_shared_trunk_once():
    """Two layers of 16 on 6 inputs, one trunk under both heads: its layers once forward, and in the gradients
    again, with each further layer's weight's gradient and the gradient below it."""
    rows, inputs, hidden, outputs = 5, 6, 16, 3
    observations, weight, hidden_weights = torch.ones(2, rows, inputs), torch.ones(2, hidden, inputs), \
        torch.ones(2, 1, hidden, hidden)
    policy_weight, empty = torch.ones(2, outputs, hidden), torch.ones(0)
    arguments = (observations, weight, empty, hidden_weights, empty, empty, empty, empty, empty, policy_weight,
                 empty, empty, empty, True)
    trunk = inputs * hidden + hidden * hidden
    forward = trunk + (outputs + 1) * hidden
    assert kernel_counts.network_multiply_adds("actor_critic", arguments) == 2 * rows * forward
    gradients = forward + (outputs + 1) * hidden + trunk + hidden * hidden
    assert kernel_counts.network_multiply_adds("actor_critic_backward", (empty, empty, *arguments)) == \
        2 * rows * gradients


LOSS_SHAPES = dict(runs=1, rows=8, inputs=6, hidden=16, levels=3)
"""The loss op's counts: a minibatch of 8 rows, 6 inputs, a layer of 16, two components of 3."""


def loss_op_counts() -> tuple[list, tuple]:
    """``fused_loss.ppo_loss_gradients`` counted (``LOSS_SHAPES``) on a rollout 3 times the minibatch, the same with
    the value clipped, and on one 5 times it; and the networks."""
    from warpsim.train import fused_loss
    runs, rows, inputs, hidden, levels = (LOSS_SHAPES[key] for key in ("runs", "rows", "inputs", "hidden", "levels"))

    def bf16(*shape: int) -> torch.Tensor:
        return torch.ones(shape, dtype=torch.bfloat16)

    networks = (bf16(runs, hidden, inputs), bf16(runs, hidden), bf16(runs, 0, hidden, hidden), bf16(runs, 0, hidden),
                bf16(runs, hidden, inputs), bf16(runs, hidden), bf16(runs, 0, hidden, hidden), bf16(runs, 0, hidden),
                bf16(runs, 2 * levels, hidden), bf16(runs, 2 * levels), torch.ones(runs, 1, hidden),
                torch.ones(runs, 1))
    columns = torch.ones(runs, rows)
    minibatch = (torch.randperm(3 * rows)[None, :rows], torch.zeros(runs, rows, 2, dtype=torch.int32), columns,
                 columns, columns, columns, torch.ones(runs, 4), levels)
    counts = []
    for rollout, value_clip in ((3, False), (3, True), (5, False)):
        observations = bf16(runs, rollout * rows, inputs)
        counter = kernel_counts.Counter()
        with counter:
            fused_loss.ppo_loss_gradients(observations, *minibatch, value_clip, *networks)
        counts.append(counter.tally)
    return counts, networks


def test_the_loss_op_is_counted_as_its_launcher_runs_on_a_gpu():
    """``fused_loss.ppo_loss_gradients``: one Triton launch per trunk, each reading the minibatch's rows of the
    rollout's observations (however long the rollout) and, in place of the head's outputs' gradient, the minibatch's
    columns its head's loss takes (the actor's the actions, their log-probabilities and advantages; the critic's the
    returns, and the rollout's values when clipped); then the sums of the statistics and of the gradients. Its
    multiply-adds: the gradients' kernels' and the heads' again, for the minibatch's rows."""
    import pytest
    pytest.importorskip("triton")
    from warpsim.train import fused_backward, fused_loss
    (unclipped, clipped, longer), networks = loss_op_counts()
    runs, rows, inputs, hidden, levels = (LOSS_SHAPES[key] for key in ("runs", "rows", "inputs", "hidden", "levels"))
    assert longer.bytes == unclipped.bytes, "of the rollout's observations, the minibatch's rows alone"
    launches = 2  # two trunks
    assert dict(unclipped.by_op) == {"actor_critic_backward_kernel": launches, "amax": 1, "sum": 2, "cat": 1}
    assert unclipped.kernels == launches + 4 and unclipped.launched_within == launches + 3
    assert clipped.bytes - unclipped.bytes == rows * 4, "the rollout's values read once more"
    arguments = (torch.ones(runs, rows, inputs, dtype=torch.bfloat16), *networks, False)
    backward = kernel_counts.network_multiply_adds("actor_critic_backward", (None, None, *arguments))
    assert unclipped.network_multiply_adds == backward + rows * (2 * levels + 1) * hidden
    assert unclipped.gradient_multiply_adds == unclipped.network_multiply_adds, "at the gradients' rate"
    parameters = sum(t[0].numel() for t in networks)
    statistics = fused_backward.PARTIAL_SUMS * fused_loss.STATISTIC_SLOTS * 4
    assert unclipped.bytes > launches * rows * inputs * 2 + 2 * fused_backward.PARTIAL_SUMS * parameters * 4 \
        + statistics


def test_the_loss_op_launched_in_forward_counts_its_forward_kernel_and_the_gradients_it_writes(monkeypatch):
    """Launched ``in_forward`` (``fused_loss.IN_FORWARD``): the forward kernel, then the gradients' kernels, each on
    the minibatch's rows (however long the rollout), the forward reading the rollout's values where clipped; its
    multiply-adds the gradients' kernels' and the forward pass's, that at the forward kernel's rate."""
    import pytest
    pytest.importorskip("triton")
    from warpsim.train import fused_loss
    in_kernels = loss_op_counts()[0][0]
    monkeypatch.setattr(fused_loss, "IN_FORWARD", True)
    (unclipped, clipped, longer), networks = loss_op_counts()
    runs, rows, inputs = (LOSS_SHAPES[key] for key in ("runs", "rows", "inputs"))
    assert longer.bytes == unclipped.bytes and clipped.bytes - unclipped.bytes == rows * 4
    assert dict(unclipped.by_op) == {"ppo_loss_forward_kernel": 1, "actor_critic_backward_kernel": 2, "amax": 1,
                                     "sum": 2, "cat": 1}
    assert unclipped.kernels == in_kernels.kernels + 1
    arguments = (torch.ones(runs, rows, inputs, dtype=torch.bfloat16), *networks, False)
    forward = kernel_counts.network_multiply_adds("actor_critic", arguments)
    backward = kernel_counts.network_multiply_adds("actor_critic_backward", (None, None, *arguments))
    assert unclipped.network_multiply_adds == backward + forward
    assert unclipped.gradient_multiply_adds == backward
