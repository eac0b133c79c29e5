"""The Triton kernel of ``fused_forward.actor_critic``: R runs' actor-critic networks, one block
of rows per program, activations kept in registers.

Triton's interpreter runs it on a CPU, with ``TRITON_INTERPRET=1`` set before Triton is
imported (tests/interpret_actor_critic.py).
"""

import triton
import triton.language as tl


@triton.jit
def _round(values):
    """float32 rounded to the nearest bfloat16 (ties to even), kept in float32; NaN stays NaN."""
    bits = values.to(tl.uint32, bitcast=True)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return tl.where(values != values, values, rounded.to(tl.float32, bitcast=True))


@triton.jit
def _tanh(values):
    """tanh of float32 ``values``; a large one saturates (exp overflows to inf: 1 - 0)."""
    return 1.0 - 2.0 / (tl.exp(2.0 * values) + 1.0)


@triton.jit
def _layer(features, weight_ptr, bias_ptr, HIDDEN: tl.constexpr, BLOCK_HIDDEN: tl.constexpr):
    """tanh(features float32[rows, BLOCK_HIDDEN] x weight[H, H]^T + bias[H]), each rounded as bf16."""
    into = tl.arange(0, BLOCK_HIDDEN)
    out = tl.arange(0, BLOCK_HIDDEN)
    weight = tl.load(weight_ptr + out[None, :] * HIDDEN + into[:, None],
                     mask=(out[None, :] < HIDDEN) & (into[:, None] < HIDDEN), other=0.0)
    bias = tl.load(bias_ptr + out, mask=out < HIDDEN, other=0.0)
    summed = tl.dot(features, _round(weight)) + _round(bias)[None, :]
    return _round(_tanh(_round(summed)))


@triton.jit
def _head(features, weight_ptr, bias_ptr, HIDDEN: tl.constexpr, OUTPUTS: tl.constexpr,
          BLOCK_HIDDEN: tl.constexpr, BLOCK_OUTPUTS: tl.constexpr):
    """features float32[rows, BLOCK_HIDDEN] x weight[P, H]^T + bias[P], rounded as bf16."""
    into = tl.arange(0, BLOCK_HIDDEN)
    out = tl.arange(0, BLOCK_OUTPUTS)
    weight = tl.load(weight_ptr + out[None, :] * HIDDEN + into[:, None],
                     mask=(out[None, :] < OUTPUTS) & (into[:, None] < HIDDEN), other=0.0)
    bias = tl.load(bias_ptr + out, mask=out < OUTPUTS, other=0.0)
    return _round(tl.dot(features, _round(weight)) + _round(bias)[None, :])


@triton.jit
def _column(features, weight_ptr, bias_ptr, HIDDEN: tl.constexpr, BLOCK_HIDDEN: tl.constexpr):
    """float32[rows]: features x weight[1, H]^T + bias[1] in float32, as ``StackedLinear``'s one
    column (a product and a sum)."""
    into = tl.arange(0, BLOCK_HIDDEN)
    weight = tl.load(weight_ptr + into, mask=into < HIDDEN, other=0.0)
    return tl.sum(features * weight[None, :], axis=1) + tl.load(bias_ptr)


@triton.jit
def fused_actor_critic(
        observations_ptr, run_stride, actor_weight_ptr, actor_bias_ptr, actor_hidden_weights_ptr,
        actor_hidden_biases_ptr, critic_weight_ptr, critic_bias_ptr, critic_hidden_weights_ptr,
        critic_hidden_biases_ptr, policy_weight_ptr, policy_bias_ptr, value_weight_ptr, value_bias_ptr,
        policy_ptr, values_ptr, rows, inputs, HIDDEN: tl.constexpr, LAYERS: tl.constexpr,
        OUTPUTS: tl.constexpr, SHARED: tl.constexpr, BLOCK_ROWS: tl.constexpr, BLOCK_INPUTS: tl.constexpr,
        BLOCK_HIDDEN: tl.constexpr, BLOCK_OUTPUTS: tl.constexpr):
    """observations int16[R, B, D] (bfloat16 bits, rows ``run_stride`` apart by run); the
    weights as ``actor_critic`` takes them; writes policy int16[R, B, P] (bfloat16 bits; float32 for
    one column) and values float32[R, B].
    Program (i, r) computes rows i * BLOCK_ROWS.. of run r."""
    run = tl.program_id(1)
    row = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    unit = tl.arange(0, BLOCK_HIDDEN)
    actor = tl.zeros((BLOCK_ROWS, BLOCK_HIDDEN), tl.float32)
    critic = tl.zeros((BLOCK_ROWS, BLOCK_HIDDEN), tl.float32)
    observations_ptr += run.to(tl.int64) * run_stride
    for start in range(0, inputs, BLOCK_INPUTS):  # the first layers of both trunks, each block read once
        column = start + tl.arange(0, BLOCK_INPUTS)
        bits = tl.load(observations_ptr + row[:, None].to(tl.int64) * inputs + column[None, :],
                       mask=(row[:, None] < rows) & (column[None, :] < inputs), other=0)
        block = (bits.to(tl.int32) << 16).to(tl.float32, bitcast=True)
        at = run * HIDDEN * inputs + unit[None, :] * inputs + column[:, None]
        kept = (unit[None, :] < HIDDEN) & (column[:, None] < inputs)
        actor += tl.dot(block, _round(tl.load(actor_weight_ptr + at, mask=kept, other=0.0)))
        if not SHARED:
            critic += tl.dot(block, _round(tl.load(critic_weight_ptr + at, mask=kept, other=0.0)))
    biases = run * HIDDEN + unit
    actor = _round(_tanh(_round(actor + _round(tl.load(actor_bias_ptr + biases, mask=unit < HIDDEN,
                                                           other=0.0))[None, :])))
    if not SHARED:
        critic = _round(_tanh(_round(critic + _round(tl.load(critic_bias_ptr + biases, mask=unit < HIDDEN,
                                                                 other=0.0))[None, :])))
    for layer in tl.static_range(LAYERS - 1):
        at = (run * (LAYERS - 1) + layer)
        actor = _layer(actor, actor_hidden_weights_ptr + at * HIDDEN * HIDDEN, actor_hidden_biases_ptr
                       + at * HIDDEN, HIDDEN, BLOCK_HIDDEN)
        if not SHARED:
            critic = _layer(critic, critic_hidden_weights_ptr + at * HIDDEN * HIDDEN,
                            critic_hidden_biases_ptr + at * HIDDEN, HIDDEN, BLOCK_HIDDEN)
    if SHARED:
        critic = actor
    output = tl.arange(0, BLOCK_OUTPUTS)
    if OUTPUTS == 1:
        column = _column(actor, policy_weight_ptr + run * HIDDEN, policy_bias_ptr + run, HIDDEN, BLOCK_HIDDEN)
        policy = tl.where(output[None, :] == 0, column[:, None], 0.0)  # stored as float32
    else:
        policy = _head(actor, policy_weight_ptr + run * OUTPUTS * HIDDEN, policy_bias_ptr + run * OUTPUTS,
                       HIDDEN, OUTPUTS, BLOCK_HIDDEN, BLOCK_OUTPUTS)
        # rounded already: its high half is its bfloat16
        policy = (policy.to(tl.uint32, bitcast=True) >> 16).to(tl.uint16).to(tl.int16, bitcast=True)
    value = _column(critic, value_weight_ptr + run * HIDDEN, value_bias_ptr + run, HIDDEN, BLOCK_HIDDEN)
    stored = run.to(tl.int64) * rows + row
    tl.store(policy_ptr + stored[:, None] * OUTPUTS + output[None, :], policy,
             mask=(row[:, None] < rows) & (output[None, :] < OUTPUTS))
    tl.store(values_ptr + stored, value, mask=row < rows)
