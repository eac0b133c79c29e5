"""The stacked actor-critic's forward pass for the rollout as one kernel (``actor_critic``).

Run as PyTorch runs it, a forward pass of R runs' networks is a batched matrix product per
layer, each writing its activations to memory for the next one to read: for 64-wide layers
about 1.3 KB per agent-step in bf16, against the 142 B of a 71-entry observation. The
Triton kernel here keeps them in registers: each program takes one run's block of rows,
runs the actor's trunk and head and then the critic's on them (the critic reads the block's
observations again, from the cache), and writes only the policy's outputs (in bfloat16, as
autocast gives them) and the value. Weights are read per block, from the cache after the first.

It computes what bf16 autocast computes: inputs, weights and biases rounded to bfloat16,
products summed in float32 (the products of bfloat16 values are exact on the tensor cores),
each layer's output rounded to bfloat16 before and after its tanh, and
a one-column head (the value's) in float32, as ``StackedLinear`` computes it. Only the order
of the sums differs, hence last bits. The CPU implementation is the eager computation itself,
so the fused path matches the eager one there and the kernel is checked against it (the
tests run it on the CPU through Triton's interpreter).

Its gradients are kernels too (``actor_critic_backward``, the backward pass of
``DifferentiableActorCritic``), so that the fused update can run the same networks
(``TrainConfig.gradient_kernels``): a kernel sums the gradients of a whole trunk, or of one of its
layers, over the minibatch, computing again from the observations what it needs of the
activations (actor_critic_backward_kernel.py). A minibatch step then reads the observations
again, instead of writing and reading every layer's activations and their gradients. On the CPU
the gradients are autograd's formulas under bf16 autocast, written out.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import torch

BLOCK_ROWS = 64
"""Rows of one program. The fastest of the shapes measured on an H200 at widths 64 and 128, with 4
warps (benchmarks/results/fused_forward/)."""
BLOCK_INPUTS = 16
"""Observation entries per product of the first layer: fewer keep the block in registers (ptxas: 127
registers at train-ref's widths on rows of 71 entries, 99 on aligned rows, against 255 and spills at 64)."""
MAX_HIDDEN = 128
"""The widest hidden layer the kernel holds; wider networks keep the eager forward (at 256 a block's
weights no longer fit: ptxas spills)."""
ROW_ALIGNMENT = 16
"""The kernels take the observations' rows, and the first layer's weight's, padded with zeros to a multiple of
this many entries (``aligned_rows``). Triton specializes a size divisible by 16: the kernels then read a row's
entries 8 at a time (16-byte loads, against one 2-byte load each), and the forward kernel pipelines the first
layer's reads (ptxas, sm_90, at train-ref's 71 inputs padded to 80: 99 registers against 127;
benchmarks/results/kernel_resources-networks.md)."""
STAGES = 2
"""Software-pipelining stages of the forward kernel's first layer (Triton's ``num_stages``): the next block of
inputs is read while the current one is multiplied. With aligned rows, 2 keeps as many programs on an SM as
unaligned rows without pipelining did at width 64, and one more at 128 (ptxas, sm_90). On an H200 at train-ref,
1, 2 and 3 stages ran alike (benchmarks/results/train-speed/session-786d1b8-nvidia-h200.log)."""


def _bfloat16(values: torch.Tensor) -> torch.Tensor:
    return values.to(torch.bfloat16)


def aligned_size(entries: int) -> int:
    """``entries`` rounded up to a multiple of ``ROW_ALIGNMENT``: the width of a row as the kernels read it."""
    return entries + -entries % ROW_ALIGNMENT


def aligned_rows(values: torch.Tensor) -> torch.Tensor:
    """``values`` [..., D] with its rows padded with zeros to a multiple of ``ROW_ALIGNMENT`` entries. A zero
    input times a zero weight adds nothing: the networks compute what they compute on the unpadded rows."""
    missing = aligned_size(values.shape[-1]) - values.shape[-1]
    return torch.nn.functional.pad(values, (0, missing)) if missing else values


def autocast_operands(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> list[torch.Tensor]:
    """``StackedLinear`` weights float[R, out, in] and biases float[R, out] (or stacked layers'), as
    ``actor_critic`` takes them, weight then bias: in bfloat16, as bf16 autocast multiplies them, but float32 for
    one output column, which ``StackedLinear`` computes as a float32 product and sum. The roundings are one
    foreach operation: compiled, one kernel for all of them, where a conversion each is a kernel each (twenty of
    a minibatch step's at train-ref)."""
    tensors = [tensor for pair in pairs for tensor in pair]
    in_float32 = [weight.shape[-2] == 1 for weight, _ in pairs for _ in range(2)]
    rounded = iter(torch._foreach_mul([tensor for tensor, kept in zip(tensors, in_float32) if not kept], 1.0))
    return [tensor.float() if kept else _bfloat16(next(rounded)) for tensor, kept in zip(tensors, in_float32)]


def _linear(inputs: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``StackedLinear`` under bf16 autocast: float[R, B, in] -> float[R, B, out]."""
    if weight.shape[1] == 1:
        return (inputs * weight).sum(-1, keepdim=True) + bias.unsqueeze(1)
    return torch.baddbmm(_bfloat16(bias).unsqueeze(1), _bfloat16(inputs), _bfloat16(weight).transpose(1, 2))


def _activations(observations: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, hidden_weights: torch.Tensor,
                 hidden_biases: torch.Tensor) -> list[torch.Tensor]:
    """A stack of tanh layers' input and each layer's output, under bf16 autocast: the first layer's weight
    float[R, H, D] and bias [R, H], the further layers' stacked ([R, L - 1, H, H] and [R, L - 1, H])."""
    layers = [observations, torch.tanh(_linear(observations, weight, bias))]
    for layer in range(hidden_weights.shape[1]):
        layers.append(torch.tanh(_linear(layers[-1], hidden_weights[:, layer], hidden_biases[:, layer])))
    return layers


# Both ops take their operands in whatever layout inductor gives them (flexible_layout): their launchers make
# contiguous what the kernels read, and a compiled step then hands one conversion of a network's weights to
# the forward pass and to the gradients, where requiring the eager strides made it convert them twice.
@torch.library.custom_op("warpsim::actor_critic", mutates_args=(), tags=(torch.Tag.flexible_layout,))
def actor_critic(observations: torch.Tensor, actor_weight: torch.Tensor, actor_bias: torch.Tensor,
                 actor_hidden_weights: torch.Tensor, actor_hidden_biases: torch.Tensor, critic_weight: torch.Tensor,
                 critic_bias: torch.Tensor, critic_hidden_weights: torch.Tensor, critic_hidden_biases: torch.Tensor,
                 policy_weight: torch.Tensor, policy_bias: torch.Tensor, value_weight: torch.Tensor,
                 value_bias: torch.Tensor, shared_trunk: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """R runs' actor-critic networks on their observations bfloat16[R, B, D], under bf16 autocast;
    returns (policy outputs bfloat16[R, B, P] (float32 for P = 1, as ``StackedLinear`` computes one
    column), values float32[R, B]).

    Each trunk is its first layer (weight [R, H, D], bias [R, H]) and its further layers stacked
    ([R, L - 1, H, H] and [R, L - 1, H]), all with tanh; with ``shared_trunk`` the critic's are
    ignored and the value reads the actor's trunk. The heads' weights are [R, P, H] and [R, 1, H],
    their biases [R, P] and [R, 1]. Each layer's weight and bias come as ``autocast_operands`` gives
    them: bfloat16, float32 for a one-column head.
    """
    actor = _activations(observations, actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases)[-1]
    critic = actor if shared_trunk else _activations(observations, critic_weight, critic_bias, critic_hidden_weights,
                                                     critic_hidden_biases)[-1]
    return _linear(actor, policy_weight, policy_bias), _linear(critic, value_weight, value_bias).squeeze(-1)


@actor_critic.register_fake
def _(observations, actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases, critic_weight,
      critic_bias, critic_hidden_weights, critic_hidden_biases, policy_weight, policy_bias, value_weight, value_bias,
      shared_trunk):
    runs, rows, _ = observations.shape
    return (observations.new_empty((runs, rows, policy_weight.shape[1]), dtype=policy_dtype(policy_weight)),
            observations.new_empty((runs, rows), dtype=torch.float32))


def policy_dtype(policy_weight: torch.Tensor) -> torch.dtype:
    """The policy outputs' dtype, as bf16 autocast gives it: bfloat16, but float32 from one column."""
    return torch.float32 if policy_weight.shape[1] == 1 else torch.bfloat16


def _power_of_two(size: int, least: int = 16) -> int:
    """The block holding ``size``: a power of two, at least ``least`` (Triton's smallest product)."""
    return max(least, 1 << max(0, size - 1).bit_length())


def _kernel_operands(observations: torch.Tensor, weights: list[torch.Tensor],
                     outputs: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The observations, and the twelve weights and biases as the kernels read them (bfloat16 ones as
    their bits, int16; contiguous); a TypeError for those that are not bfloat16 where the kernels read
    bfloat16 bits (all but the one-column heads)."""
    products = weights[:8] + ([] if outputs == 1 else weights[8:10])
    if any(tensor.dtype != torch.bfloat16 for tensor in [observations, *products]):
        raise TypeError("actor_critic takes bfloat16 observations, trunks and multi-column policy heads")
    weights = [tensor.contiguous() for tensor in weights]
    return observations, [tensor.view(torch.int16) if tensor.dtype == torch.bfloat16 else tensor for tensor in weights]


def launch(observations: torch.Tensor, actor_weight: torch.Tensor, actor_bias: torch.Tensor,
           actor_hidden_weights: torch.Tensor, actor_hidden_biases: torch.Tensor, critic_weight: torch.Tensor,
           critic_bias: torch.Tensor, critic_hidden_weights: torch.Tensor, critic_hidden_biases: torch.Tensor,
           policy_weight: torch.Tensor, policy_bias: torch.Tensor, value_weight: torch.Tensor,
           value_bias: torch.Tensor, shared_trunk: bool, block_rows: int = BLOCK_ROWS,
           warps: int = 4, stages: int = STAGES) -> tuple[torch.Tensor, torch.Tensor]:
    """``actor_critic`` by the Triton kernel (``actor_critic_kernel``, imported here: a CPU-only install
    may lack Triton), on the observations' device; on a CPU (``TRITON_INTERPRET=1``) through Triton's
    interpreter. ``block_rows`` (rows per program), ``warps`` (per program) and ``stages`` (``STAGES``)
    are the launch's shape, which benchmarks/fused_forward.py compares."""
    runs, rows, _ = observations.shape
    policy = torch.empty((runs, rows, policy_weight.shape[1]), dtype=policy_dtype(policy_weight),
                         device=observations.device)
    values = torch.empty((runs, rows), dtype=torch.float32, device=observations.device)
    run_kernel(observations, [actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases, critic_weight,
                              critic_bias, critic_hidden_weights, critic_hidden_biases, policy_weight, policy_bias,
                              value_weight, value_bias], shared_trunk, policy, values, None, block_rows, warps, stages)
    return policy, values


class Sampled(NamedTuple):
    """What ``run_kernel`` needs to sample a categorical policy in the kernel, in place of writing its outputs."""

    draws: torch.Tensor
    """Every run's uniforms, float32: run r's component k's [B] at ``run_stride`` x r + ``component_stride``
    x k entries from the start."""
    component_stride: int
    run_stride: int
    levels: list[int]
    """The components' levels, all equal."""
    actions: torch.Tensor
    """int32[R, B, A], written."""


def run_kernel(observations: torch.Tensor, weights: list[torch.Tensor], shared_trunk: bool, policy: torch.Tensor,
               values: torch.Tensor, sampled: Sampled | None, block_rows: int, warps: int, stages: int,
               max_registers: int | None = None) -> None:
    """``fused_actor_critic`` on ``actor_critic``'s operands (``weights``: its twelve weights and biases), writing
    ``policy`` (with ``sampled``, the actions' log-probability float32[R, B]) and ``values``.
    ``max_registers``: a thread's, where ptxas is to be held to them."""
    import triton.language as tl

    from warpsim.train.actor_critic_kernel import fused_actor_critic

    runs, rows, inputs = observations.shape
    hidden, outputs = weights[0].shape[1], weights[8].shape[1]
    observations, bits = _kernel_operands(observations, weights, outputs)
    if observations.stride(2) != 1 or observations.stride(1) != inputs:
        observations = observations.contiguous()
    draws = sampled or Sampled(values, 0, 0, [], values)
    fused_actor_critic[(-(-rows // block_rows), runs)](
        observations.view(torch.int16), observations.stride(0), *bits,
        policy if outputs == 1 or sampled is not None else policy.view(torch.int16), values, draws.draws,
        draws.component_stride, draws.run_stride, draws.actions, policy, rows, inputs, HIDDEN=hidden,
        LAYERS=weights[2].shape[1] + 1, OUTPUTS=outputs, SHARED=shared_trunk, BLOCK_ROWS=block_rows,
        BLOCK_INPUTS=min(BLOCK_INPUTS, _power_of_two(inputs)), BLOCK_HIDDEN=_power_of_two(hidden),
        BLOCK_OUTPUTS=_power_of_two(outputs), DOT=tl.float32 if observations.device.type == "cpu" else tl.bfloat16,
        COMPONENTS=len(draws.levels), LEVELS=draws.levels[0] if draws.levels else 0,
        BLOCK_LEVELS=_power_of_two(draws.levels[0] if draws.levels else 1), num_warps=warps, num_stages=stages,
        maxnreg=max_registers)


@actor_critic.register_kernel("cuda")
def _(*args):
    return launch(*args)


@torch.library.custom_op("warpsim::actor_critic_backward", mutates_args=(), tags=(torch.Tag.flexible_layout,))
def actor_critic_backward(policy_gradient: torch.Tensor, value_gradient: torch.Tensor, observations: torch.Tensor,
                          actor_weight: torch.Tensor, actor_bias: torch.Tensor, actor_hidden_weights: torch.Tensor,
                          actor_hidden_biases: torch.Tensor, critic_weight: torch.Tensor, critic_bias: torch.Tensor,
                          critic_hidden_weights: torch.Tensor, critic_hidden_biases: torch.Tensor,
                          policy_weight: torch.Tensor, policy_bias: torch.Tensor, value_weight: torch.Tensor,
                          value_bias: torch.Tensor, shared_trunk: bool) -> torch.Tensor:
    """The gradients of ``actor_critic``'s twelve weights and biases, given its outputs' gradients: policy's
    of its dtype [R, B, P], values' float32[R, B]. The other arguments are ``actor_critic``'s. Returns them
    side by side in float32[R, G], each run's flattened in the order of the operands (the critic trunk's
    zero with ``shared_trunk``); ``split_gradients`` gives each its operand's shape and dtype. One tensor, so
    that the launcher writes its sums once (an op's outputs share no memory, and twelve would be twelve
    copies) and the update reads them where they are.

    On the CPU, autograd's formulas under bf16 autocast, written out (an op's implementation runs
    below autograd): the backward kernel's reference."""
    actor = _activations(observations, actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases)
    critic = actor if shared_trunk else _activations(observations, critic_weight, critic_bias, critic_hidden_weights,
                                                     critic_hidden_biases)
    actor_features, policy_weight_gradient, policy_bias_gradient = _linear_backward(actor[-1], policy_weight,
                                                                                    policy_gradient)
    critic_features, value_weight_gradient, value_bias_gradient = _linear_backward(critic[-1], value_weight,
                                                                                   value_gradient.unsqueeze(-1))
    if shared_trunk:
        actor_gradients = _trunk_backward(actor, actor_hidden_weights, actor_features + critic_features)
        critic_gradients = [torch.zeros_like(weight) for weight in (critic_weight, critic_bias, critic_hidden_weights,
                                                                     critic_hidden_biases)]
    else:
        actor_gradients = _trunk_backward(actor, actor_hidden_weights, actor_features)
        critic_gradients = _trunk_backward(critic, critic_hidden_weights, critic_features)
    runs = observations.shape[0]
    return torch.cat([gradient.reshape(runs, gradient.numel() // runs).float() for gradient in (
        *actor_gradients, *critic_gradients, policy_weight_gradient, policy_bias_gradient, value_weight_gradient,
        value_bias_gradient)], 1)


def _offsets(weights: list[torch.Tensor], runs: int) -> list[int]:
    """Where each of ``weights`` starts in a run's row of gradients side by side, and where the last ends (a
    shared trunk's empty critic takes none)."""
    return [0, *itertools.accumulate(weight.numel() // runs for weight in weights)]


def split_gradients(gradients: torch.Tensor, weights: list[torch.Tensor]) -> list[torch.Tensor]:
    """``actor_critic_backward``'s gradients float32[R, G], one per operand of ``weights`` (its twelve weights
    and biases), in that operand's shape and dtype: a view for a float32 operand, a rounded copy for a bfloat16
    one."""
    offsets = _offsets(weights, gradients.shape[0])
    return [gradients[:, start:end].view(weight.shape).to(weight.dtype)
            for weight, start, end in zip(weights, offsets, offsets[1:])]


def _linear_backward(inputs: torch.Tensor, weight: torch.Tensor,
                     gradient: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``_linear``'s gradients (its inputs', in their dtype; its weight's; its bias's) from its output's."""
    if weight.shape[1] == 1:  # float32, a product and a sum
        return ((gradient * weight).to(inputs.dtype), (gradient * inputs).sum(1, keepdim=True),
                gradient.sum(1))
    return torch.bmm(gradient, weight), torch.bmm(gradient.transpose(1, 2), inputs), gradient.sum(1)


def _trunk_backward(layers: list[torch.Tensor], hidden_weights: torch.Tensor,
                    gradient: torch.Tensor) -> list[torch.Tensor]:
    """A trunk's gradients (first weight, first bias, stacked further weights and biases) from its
    ``_activations`` and its features' gradient."""
    weights: list[torch.Tensor] = []
    biases: list[torch.Tensor] = []
    for layer in range(len(layers) - 1, 0, -1):
        summed = torch.ops.aten.tanh_backward(gradient, layers[layer])
        weights.insert(0, torch.bmm(summed.transpose(1, 2), layers[layer - 1]))
        biases.insert(0, summed.sum(1))
        if layer > 1:
            gradient = torch.bmm(summed, hidden_weights[:, layer - 2])
    further = (torch.stack(weights[1:], 1) if len(weights) > 1 else hidden_weights.new_zeros(hidden_weights.shape),
               torch.stack(biases[1:], 1) if len(biases) > 1 else
               hidden_weights.new_zeros(hidden_weights.shape[:-1]))
    return [weights[0], biases[0], *further]


@actor_critic_backward.register_fake
def _(policy_gradient, value_gradient, observations, *weights_and_shared):
    runs = observations.shape[0]
    return observations.new_empty((runs, _offsets(list(weights_and_shared[:-1]), runs)[-1]), dtype=torch.float32)


class DifferentiableActorCritic(torch.autograd.Function):
    """``actor_critic`` with its gradients by ``actor_critic_backward``: ``apply`` takes ``actor_critic``'s
    arguments. An autograd Function, which ``torch.func.grad`` (the fused update's) differentiates."""

    @staticmethod
    def forward(observations, actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases, critic_weight,
                critic_bias, critic_hidden_weights, critic_hidden_biases, policy_weight, policy_bias, value_weight,
                value_bias, shared_trunk):
        return actor_critic(observations, actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases,
                            critic_weight, critic_bias, critic_hidden_weights, critic_hidden_biases, policy_weight,
                            policy_bias, value_weight, value_bias, shared_trunk)

    @staticmethod
    def setup_context(ctx, inputs: tuple, output) -> None:
        ctx.save_for_backward(*inputs[:-1])
        ctx.shared_trunk = inputs[-1]

    @staticmethod
    def backward(ctx, policy_gradient: torch.Tensor, value_gradient: torch.Tensor) -> tuple:
        observations, *weights = ctx.saved_tensors
        with torch.no_grad():  # once differentiable: torch.func.grad records the backward pass otherwise
            gradients = actor_critic_backward(policy_gradient, value_gradient, observations, *weights,
                                              ctx.shared_trunk)
        return None, *split_gradients(gradients, weights), None


PARTIAL_SUMS = 512
"""Programs of one launch of the gradients' kernels, over all runs: each writes its own sums of the gradients
it takes, which the launcher then adds up (tens of MB at train-ref, against 781 MB of a minibatch's
observations)."""
FIRST_LAYER_INPUTS = 128
"""Inputs of the first layer whose weight's gradient one program sums (train-ref's 71 in one): a larger
observation takes several programs, each computing the block's gradients again."""
BACKWARD_BLOCK_ROWS = 32
"""Rows of a block of the gradients' kernels: at 64 a whole trunk's program spills at width 64, and so does a
first layer's (ptxas, sm_90); at 32 neither does, nor a layer's at width 128."""
WHOLE_TRUNK_HIDDEN = 64
"""The widest trunk whose gradients one program sums all at once (``fused_trunk_backward``, 8 warps: 214
registers at train-ref's shapes, no spills; at 128 it spills), if it has at most two layers."""


def whole_trunks_fit(hidden: int, layers: int) -> bool:
    """Whether ``launch_backward`` sums a trunk's gradients in one launch by default: up to two layers of
    ``WHOLE_TRUNK_HIDDEN``."""
    return layers <= 2 and hidden <= WHOLE_TRUNK_HIDDEN


def backward_warps(hidden: int, whole_trunks: bool) -> int:
    """Warps of a program of the gradients' kernels: a whole trunk's 8; a layer's 4 up to width 64 and 8
    above (fewer spill)."""
    return 8 if whole_trunks or hidden > 64 else 4


def launch_backward(policy_gradient: torch.Tensor, value_gradient: torch.Tensor, observations: torch.Tensor,
                    actor_weight: torch.Tensor, actor_bias: torch.Tensor, actor_hidden_weights: torch.Tensor,
                    actor_hidden_biases: torch.Tensor, critic_weight: torch.Tensor, critic_bias: torch.Tensor,
                    critic_hidden_weights: torch.Tensor, critic_hidden_biases: torch.Tensor,
                    policy_weight: torch.Tensor, policy_bias: torch.Tensor, value_weight: torch.Tensor,
                    value_bias: torch.Tensor, shared_trunk: bool, block_rows: int = BACKWARD_BLOCK_ROWS,
                    warps: int | None = None, programs: int | None = None,
                    whole_trunks: bool | None = None, stages: int = 1) -> torch.Tensor:
    """``actor_critic_backward`` by the Triton kernels (``actor_critic_backward_kernel``) on the observations'
    device (a CPU through Triton's interpreter): with ``whole_trunks`` one launch per trunk
    (``fused_trunk_backward``), otherwise one per layer and head of each (``fused_actor_critic_backward``);
    by default whole trunks where they fit (``WHOLE_TRUNK_HIDDEN``, two layers at most). ``block_rows`` and
    ``warps`` (default: ``backward_warps``) shape a program, ``stages`` pipelines its loops (Triton's
    ``num_stages``); ``programs``: per run, how many partial sums each launch makes (default ``PARTIAL_SUMS``
    over the runs, at most one per block of rows; a program left without rows sums to zero)."""
    import triton.language as tl

    from warpsim.train.actor_critic_backward_kernel import fused_actor_critic_backward, fused_trunk_backward

    runs, rows, inputs = observations.shape
    hidden, layers = actor_weight.shape[1], actor_hidden_weights.shape[1] + 1
    weights = [actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases, critic_weight, critic_bias,
               critic_hidden_weights, critic_hidden_biases, policy_weight, policy_bias, value_weight, value_bias]
    observations, bits = _kernel_operands(observations.contiguous(), weights, policy_weight.shape[1])
    if policy_gradient.dtype != policy_dtype(policy_weight):
        raise TypeError(f"actor_critic_backward takes the policy's gradient in {policy_dtype(policy_weight)}")
    head_gradients = [gradient.contiguous() for gradient in (policy_gradient, value_gradient)]
    programs = programs or min(-(-rows // block_rows), max(1, PARTIAL_SUMS // runs))
    if whole_trunks is None:
        whole_trunks = whole_trunks_fit(hidden, layers)
    warps = warps or backward_warps(hidden, whole_trunks)
    # Every program's partial sums of all the gradients side by side, so that one sum adds them all up.
    offsets = _offsets(weights, runs)
    partial_sums = observations.new_empty((runs, programs, offsets[-1]), dtype=torch.float32)
    first_columns = min(_power_of_two(inputs), FIRST_LAYER_INPUTS)
    dot = tl.float32 if observations.device.type == "cpu" else tl.bfloat16

    def sums_at(index: int) -> torch.Tensor:
        """Where the partial sums of ``weights[index]``'s gradient start."""
        return partial_sums[:, :, offsets[index]:]

    def launch_trunk(trunk: int, head: int, with_value: bool) -> None:
        """The partial sums of every gradient of the trunk whose weights start at ``weights[trunk]`` and of
        its head, whose weight is ``weights[head]`` (and of the value's, ``with_value``)."""
        outputs = weights[head].shape[1]
        fused_trunk_backward[(programs, runs, -(-inputs // first_columns))](
            observations.view(torch.int16), rows * inputs, *bits[trunk:trunk + 4], bits[head],
            head_gradients[head == 10].view(torch.int16) if outputs > 1 else head_gradients[head == 10], bits[10],
            head_gradients[1], *(sums_at(index) for index in (trunk, trunk + 1, trunk + 2, trunk + 3, head, head + 1,
                                                              10, 11)),
            rows, inputs, programs, offsets[-1], HIDDEN=hidden, LAYERS=layers, OUTPUTS=outputs,
            WITH_VALUE=with_value, BLOCK_ROWS=block_rows, BLOCK_INPUTS=min(BLOCK_INPUTS, _power_of_two(inputs)),
            BLOCK_HIDDEN=_power_of_two(hidden), BLOCK_OUTPUTS=_power_of_two(outputs), BLOCK_IN=first_columns,
            DOT=dot, num_warps=warps, num_stages=stages)

    def launch_for(trunk: int, target: int, head: int, with_value: bool) -> None:
        """The partial sums of the gradients of layer ``target``'s weight and bias of the trunk whose
        weights start at ``weights[trunk]`` (0: the actor's, 4: the critic's), or for ``target == layers``
        of its head's, whose weight is ``weights[head]`` (8: the policy's, 10: the value's)."""
        out, into = weights[head].shape[1:] if target == layers else (hidden, inputs if target == 0 else hidden)
        summed = head if target == layers else trunk if target == 0 else trunk + 2
        further = target - 1 if 0 < target < layers else 0  # the stacked layer's place
        weight_start, bias_start = offsets[summed] + further * out * into, offsets[summed + 1] + further * out
        outputs, gradient = weights[head].shape[1], head_gradients[head == 10]
        columns = first_columns if target == 0 else _power_of_two(into)
        fused_actor_critic_backward[(programs, runs, -(-into // columns))](
            observations.view(torch.int16), rows * inputs, *bits[trunk:trunk + 4], bits[head],
            gradient.view(torch.int16) if gradient.dtype == torch.bfloat16 else gradient, bits[10],
            head_gradients[1], partial_sums[:, :, weight_start:], partial_sums[:, :, bias_start:], rows, inputs,
            programs, offsets[-1], out, into, HIDDEN=hidden, LAYERS=layers, OUTPUTS=outputs, TARGET=target,
            WITH_VALUE=with_value, BLOCK_ROWS=block_rows, BLOCK_INPUTS=min(BLOCK_INPUTS, _power_of_two(inputs)),
            BLOCK_HIDDEN=_power_of_two(hidden), BLOCK_OUTPUTS=_power_of_two(outputs), BLOCK_OUT=_power_of_two(out),
            BLOCK_IN=columns, DOT=dot, num_warps=warps, num_stages=stages)

    if whole_trunks:
        launch_trunk(0, 8, shared_trunk)
        if not shared_trunk:
            launch_trunk(4, 10, False)
    else:
        for target in range(layers + 1):
            launch_for(0, target, 8, shared_trunk)
        for target in [layers] if shared_trunk else range(layers + 1):
            launch_for(0 if shared_trunk else 4, target, 10, False)
    sums = partial_sums.sum(1)
    if shared_trunk and offsets[8] > offsets[4]:  # a critic trunk given but unused: no program summed it
        sums[:, offsets[4]:offsets[8]] = 0
    return sums


@actor_critic_backward.register_kernel("cuda")
def _(*args):
    return launch_backward(*args)
