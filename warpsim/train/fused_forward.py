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

It serves playing only (no gradient): the update keeps the compiled eager networks, which need
their activations for the gradients.
"""

from __future__ import annotations

import torch

BLOCK_ROWS = 64
"""Rows of one program. The fastest of the shapes measured on an H200 at widths 64 and 128, with 4
warps (benchmarks/results/fused_forward/)."""
BLOCK_INPUTS = 16
"""Observation entries per product of the first layer: fewer keep the block in registers (ptxas: 126
registers at train-ref's widths, against 255 and spills at 64), and 71 inputs pad to 80."""
MAX_HIDDEN = 128
"""The widest hidden layer the kernel holds; wider networks keep the eager forward (at 256 a block's
weights no longer fit: ptxas spills)."""


def _bfloat16(values: torch.Tensor) -> torch.Tensor:
    return values.to(torch.bfloat16)


def autocast_operands(weight: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A ``StackedLinear``'s weight float[R, out, in] and bias float[R, out] (or stacked layers') as
    ``actor_critic`` takes them: in bfloat16, as bf16 autocast multiplies them, but float32 for one
    output column, which ``StackedLinear`` computes as a float32 product and sum."""
    if weight.shape[-2] == 1:
        return weight.float(), bias.float()
    return _bfloat16(weight), _bfloat16(bias)


def _linear(inputs: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``StackedLinear`` under bf16 autocast: float[R, B, in] -> float[R, B, out]."""
    if weight.shape[1] == 1:
        return (inputs * weight).sum(-1, keepdim=True) + bias.unsqueeze(1)
    return torch.baddbmm(_bfloat16(bias).unsqueeze(1), _bfloat16(inputs), _bfloat16(weight).transpose(1, 2))


def _trunk(inputs: torch.Tensor, first: tuple[torch.Tensor, torch.Tensor], hidden_weights: torch.Tensor,
           hidden_biases: torch.Tensor) -> torch.Tensor:
    features = torch.tanh(_linear(inputs, *first))
    for layer in range(hidden_weights.shape[1]):
        features = torch.tanh(_linear(features, hidden_weights[:, layer], hidden_biases[:, layer]))
    return features


@torch.library.custom_op("warpsim::actor_critic", mutates_args=())
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
    actor = _trunk(observations, (actor_weight, actor_bias), actor_hidden_weights, actor_hidden_biases)
    critic = actor if shared_trunk else _trunk(observations, (critic_weight, critic_bias), critic_hidden_weights,
                                               critic_hidden_biases)
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


def launch(observations: torch.Tensor, actor_weight: torch.Tensor, actor_bias: torch.Tensor,
           actor_hidden_weights: torch.Tensor, actor_hidden_biases: torch.Tensor, critic_weight: torch.Tensor,
           critic_bias: torch.Tensor, critic_hidden_weights: torch.Tensor, critic_hidden_biases: torch.Tensor,
           policy_weight: torch.Tensor, policy_bias: torch.Tensor, value_weight: torch.Tensor,
           value_bias: torch.Tensor, shared_trunk: bool, block_rows: int = BLOCK_ROWS,
           warps: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    """``actor_critic`` by the Triton kernel (``actor_critic_kernel``, imported here: a CPU-only install
    may lack Triton), on the observations' device; on a CPU (``TRITON_INTERPRET=1``) through Triton's
    interpreter. ``block_rows`` (rows per program) and ``warps`` (per program) are the launch's shape,
    which benchmarks/fused_forward.py compares."""
    import triton.language as tl

    from warpsim.train.actor_critic_kernel import fused_actor_critic

    runs, rows, inputs = observations.shape
    hidden, outputs = actor_weight.shape[1], policy_weight.shape[1]
    products = [actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases, critic_weight, critic_bias,
                critic_hidden_weights, critic_hidden_biases] + ([] if outputs == 1 else [policy_weight, policy_bias])
    if any(tensor.dtype != torch.bfloat16 for tensor in [observations, *products]):
        raise TypeError("actor_critic takes bfloat16 observations, trunks and multi-column policy heads")
    if observations.stride(2) != 1 or observations.stride(1) != inputs:
        observations = observations.contiguous()
    weights = [tensor.contiguous() for tensor in (
        actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases, critic_weight, critic_bias,
        critic_hidden_weights, critic_hidden_biases, policy_weight, policy_bias, value_weight, value_bias)]
    bits = [tensor.view(torch.int16) if tensor.dtype == torch.bfloat16 else tensor for tensor in weights]
    policy = torch.empty((runs, rows, outputs), dtype=policy_dtype(policy_weight), device=observations.device)
    values = torch.empty((runs, rows), dtype=torch.float32, device=observations.device)
    fused_actor_critic[(-(-rows // block_rows), runs)](
        observations.view(torch.int16), observations.stride(0), *bits,
        policy if outputs == 1 else policy.view(torch.int16), values, rows, inputs,
        HIDDEN=hidden, LAYERS=actor_hidden_weights.shape[1] + 1, OUTPUTS=outputs, SHARED=shared_trunk,
        BLOCK_ROWS=block_rows, BLOCK_INPUTS=min(BLOCK_INPUTS, _power_of_two(inputs)),
        BLOCK_HIDDEN=_power_of_two(hidden), BLOCK_OUTPUTS=_power_of_two(outputs),
        DOT=tl.float32 if observations.device.type == "cpu" else tl.bfloat16, num_warps=warps, num_stages=1)
    return policy, values


@actor_critic.register_kernel("cuda")
def _(*args):
    return launch(*args)
