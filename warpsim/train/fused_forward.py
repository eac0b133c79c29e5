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

Its gradients are kernels too (``fused_backward``).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from warpsim.train import triton_launch

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
layer's reads (ptxas, sm_90, at train-ref's 71 inputs padded to 80: 96 registers against 128;
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


def activations(observations: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, hidden_weights: torch.Tensor,
                 hidden_biases: torch.Tensor) -> list[torch.Tensor]:
    """A stack of tanh layers' input and each layer's output, under bf16 autocast: the first layer's weight
    float[R, H, D] and bias [R, H], the further layers' stacked ([R, L - 1, H, H] and [R, L - 1, H])."""
    layers = [observations, torch.tanh(_linear(observations, weight, bias))]
    for layer in range(hidden_weights.shape[1]):
        layers.append(torch.tanh(_linear(layers[-1], hidden_weights[:, layer], hidden_biases[:, layer])))
    return layers


# This op and the gradients' (fused_backward) take their operands in whatever layout inductor gives them
# (flexible_layout): their launchers make contiguous what the kernels read, and a compiled step then hands one
# conversion of a network's weights to the forward pass and to the gradients, where requiring the eager strides
# made it convert them twice.
@torch.library.custom_op("warpsim::actor_critic", mutates_args=(), tags=(torch.Tag.flexible_layout,))
def actor_critic(observations: torch.Tensor, actor_weight: torch.Tensor, actor_bias: torch.Tensor,
                 actor_hidden_weights: torch.Tensor, actor_hidden_biases: torch.Tensor, critic_weight: torch.Tensor,
                 critic_bias: torch.Tensor, critic_hidden_weights: torch.Tensor, critic_hidden_biases: torch.Tensor,
                 policy_weight: torch.Tensor, policy_bias: torch.Tensor, value_weight: torch.Tensor,
                 value_bias: torch.Tensor, shared_trunk: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """R runs' actor-critic networks on their observations bfloat16[R, B, D], under bf16 autocast;
    returns (policy outputs bfloat16[R, B, E]: the P outputs, then zeros to ``policy_row_entries``
    (float32[R, B, 1] for P = 1, as ``StackedLinear`` computes one column), values float32[R, B]).

    Each trunk is its first layer (weight [R, H, D], bias [R, H]) and its further layers stacked
    ([R, L - 1, H, H] and [R, L - 1, H]), all with tanh; with ``shared_trunk`` the critic's are
    ignored and the value reads the actor's trunk. The heads' weights are [R, P, H] and [R, 1, H],
    their biases [R, P] and [R, 1]. Each layer's weight and bias come as ``autocast_operands`` gives
    them: bfloat16, float32 for a one-column head.
    """
    actor = activations(observations, actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases)[-1]
    critic = actor if shared_trunk else activations(observations, critic_weight, critic_bias, critic_hidden_weights,
                                                     critic_hidden_biases)[-1]
    policy = _linear(actor, policy_weight, policy_bias)
    return (torch.nn.functional.pad(policy, (0, policy_row_entries(policy.shape[-1]) - policy.shape[-1])),
            _linear(critic, value_weight, value_bias).squeeze(-1))


@actor_critic.register_fake
def _(observations, actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases, critic_weight,
      critic_bias, critic_hidden_weights, critic_hidden_biases, policy_weight, policy_bias, value_weight, value_bias,
      shared_trunk):
    runs, rows, _ = observations.shape
    return (observations.new_empty((runs, rows, policy_row_entries(policy_weight.shape[1])),
                                   dtype=policy_dtype(policy_weight)),
            observations.new_empty((runs, rows), dtype=torch.float32))


def policy_dtype(policy_weight: torch.Tensor) -> torch.dtype:
    """The policy outputs' dtype, as bf16 autocast gives it: bfloat16, but float32 from one column."""
    return torch.float32 if policy_weight.shape[1] == 1 else torch.bfloat16


def policy_row_entries(outputs: int) -> int:
    """The entries of a row of ``actor_critic``'s policy of ``outputs``: bfloat16 rows padded with zeros to 16
    bytes, whose first ``outputs`` the loss's kernels of discrete actions read and write a tile at a time
    (``categorical_terms.padded_rows``); one float32 column as it is."""
    return outputs if outputs == 1 else outputs + -outputs % 8


def power_of_two(size: int, least: int = 16) -> int:
    """The block holding ``size``: a power of two, at least ``least`` (Triton's smallest product)."""
    return max(least, 1 << max(0, size - 1).bit_length())


def kernel_operands(observations: torch.Tensor, weights: list[torch.Tensor],
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
    policy = observations.new_empty((runs, rows, policy_row_entries(policy_weight.shape[1])),
                                    dtype=policy_dtype(policy_weight))
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
    observations, bits = kernel_operands(observations, weights, outputs)
    if observations.stride(2) != 1 or observations.stride(1) != inputs:
        observations = observations.contiguous()
    draws = sampled or Sampled(values, 0, 0, [], values)
    fused_actor_critic[(-(-rows // block_rows), runs)](
        observations.view(torch.int16), observations.stride(0), *bits,
        policy if outputs == 1 or sampled is not None else policy.view(torch.int16), values, draws.draws,
        draws.component_stride, draws.run_stride, draws.actions, policy, rows, inputs, HIDDEN=hidden,
        LAYERS=weights[2].shape[1] + 1, OUTPUTS=outputs, POLICY_ENTRIES=policy_row_entries(outputs),
        SHARED=shared_trunk, BLOCK_ROWS=block_rows,
        BLOCK_INPUTS=min(BLOCK_INPUTS, power_of_two(inputs)), BLOCK_HIDDEN=power_of_two(hidden),
        BLOCK_OUTPUTS=power_of_two(outputs), DOT=tl.float32 if observations.device.type == "cpu" else tl.bfloat16,
        COMPONENTS=len(draws.levels), LEVELS=draws.levels[0] if draws.levels else 0,
        BLOCK_LEVELS=power_of_two(draws.levels[0] if draws.levels else 1), num_warps=warps, num_stages=stages,
        maxnreg=max_registers, **triton_launch.OPTIONS)


@actor_critic.register_kernel("cuda")
def _(*args):
    return launch(*args)
