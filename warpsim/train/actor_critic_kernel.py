"""The Triton kernel of ``fused_forward.actor_critic`` and of ``fused_sampling.actor_critic_sample``: R runs'
actor-critic networks, one block of rows per program, activations kept in registers, and for the rollout a
categorical policy sampled in them (``_sample``) in place of its outputs written.

The trunks run one after the other, so that only one trunk's activations and one weight
matrix are live at a time: the critic reads the block's observations again, from the cache.
Products take bfloat16 operands on a GPU (``DOT``); Triton's interpreter, which gets bfloat16
products wrong, takes them in float32, where the products of bfloat16 values are as exact.
The interpreter runs it on a CPU with ``TRITON_INTERPRET=1`` set before Triton is imported
(tests/interpret_actor_critic.py).
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice

from warpsim.train.categorical_terms_kernel import inverse_cdf, log_softmax_of


@triton.jit
def _bfloat16(bits):
    """bfloat16 bits (int16) as the float32 they stand for."""
    return (bits.to(tl.int32) << 16).to(tl.float32, bitcast=True)


@triton.jit
def _operand(bits, DOT: tl.constexpr):
    """bfloat16 bits (int16) as a product's operand of type DOT: on a GPU the bits reinterpreted, which takes
    no instruction (converting them through float32 took about a third of the gradients' kernel's instructions); in
    the interpreter the float32 they stand for."""
    if DOT == tl.bfloat16:
        operand = bits.to(tl.bfloat16, bitcast=True)
    else:
        operand = _bfloat16(bits)
    return operand


@triton.jit
def _round(values, DOT: tl.constexpr):
    """float32 rounded to the nearest bfloat16 (ties to even), kept in float32; NaN stays NaN. On a GPU (``DOT``
    bfloat16) two entries a conversion, where the round trip through bfloat16 took one each, and an SM converts 16
    a clock, as it takes tanh's exponentials: cvt.rn.bf16x2.f32 d, a, b rounds as cvt.rn.bf16.f32 and puts a's
    bfloat16 in d's upper half, b's in its lower (as Triton's own conversions order them), so the pack's first
    entry ($2) goes in as b and comes back shifted up ($0), the second ($3, as a) masked ($1)."""
    if DOT == tl.bfloat16:
        rounded = tl.inline_asm_elementwise(
            "{ .reg .b32 pair; cvt.rn.bf16x2.f32 pair, $3, $2; shl.b32 $0, pair, 16; and.b32 $1, pair, 0xffff0000; }",
            "=r,=r,f,f", [values], dtype=tl.int32, is_pure=True, pack=2).to(tl.float32, bitcast=True)
    else:
        bits = values.to(tl.uint32, bitcast=True)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).to(tl.float32, bitcast=True)
        rounded = tl.where(values != values, values, rounded)
    return rounded


@triton.jit
def _as_operand(values, DOT: tl.constexpr):
    """float32 rounded to the nearest bfloat16 as a product's operand of type DOT: on a GPU converted (two entries a
    conversion), in the interpreter ``_round``."""
    if DOT == tl.bfloat16:
        operand = values.to(tl.bfloat16)
    else:
        operand = _round(values, DOT)
    return operand


@triton.jit
def _tanh(values, DOT: tl.constexpr):
    """tanh of float32 ``values``; a large one saturates (exp overflows to inf: 1 - 0). On a GPU (``DOT``
    bfloat16) by the power of two and the division that flush subnormals: the same values (a subnormal
    exponential adds nothing to 1, nor does a quotient under 2^-126 take anything from it; 2 x log2(e) is
    float32's log2(e) doubled, so x times it rounds as 2x times log2(e)), with none of the range checks that the
    others make around each (six machine instructions an entry against twelve, sm_90)."""
    if DOT == tl.bfloat16:
        tanh = 1.0 - libdevice.fast_dividef(2.0, libdevice.exp2(values * 2.8853900432586669921875) + 1.0)
    else:
        tanh = 1.0 - 2.0 / (tl.exp(2.0 * values) + 1.0)
    return tanh


@triton.jit
def _activated(summed, bias_ptr, unit, HIDDEN: tl.constexpr, DOT: tl.constexpr):
    """A layer's output as autocast gives it: the product's sum plus the bias, rounded, its tanh
    rounded; as a product's operand."""
    bias = _bfloat16(tl.load(bias_ptr + unit, mask=unit < HIDDEN, other=0))
    return _as_operand(_tanh(_round(summed + bias[None, :], DOT), DOT), DOT)


@triton.jit
def _matrix(weight_ptr, into, out, INTO: tl.constexpr, OUT: tl.constexpr, DOT: tl.constexpr):
    """weight bfloat16 bits [OUT, INTO] at (out, into), transposed: an operand [into, out]."""
    bits = tl.load(weight_ptr + out[None, :] * INTO + into[:, None], mask=(out[None, :] < OUT) & (into[:, None] < INTO),
                   other=0)
    return _operand(bits, DOT)


@triton.jit
def _first_layer_part(observations_ptr, row, rows, inputs, weight_ptr, unit, start, summed, HIDDEN: tl.constexpr,
                      BLOCK_INPUTS: tl.constexpr, DOT: tl.constexpr):
    """``summed`` plus the product of the block's observations' entries start.. start + BLOCK_INPUTS and the first
    layer's weight's."""
    column = start + tl.arange(0, BLOCK_INPUTS)
    bits = tl.load(observations_ptr + row[:, None].to(tl.int64) * inputs + column[None, :],
                   mask=(row[:, None] < rows) & (column[None, :] < inputs), other=0)
    weight = tl.load(weight_ptr + unit[None, :] * inputs + column[:, None],
                     mask=(unit[None, :] < HIDDEN) & (column[:, None] < inputs), other=0)
    return tl.dot(_operand(bits, DOT), _operand(weight, DOT), summed)


@triton.jit
def _trunk(observations_ptr, row, rows, inputs, weight_ptr, bias_ptr, hidden_weights_ptr, hidden_biases_ptr,
           HIDDEN: tl.constexpr, LAYERS: tl.constexpr, BLOCK_ROWS: tl.constexpr, BLOCK_INPUTS: tl.constexpr,
           BLOCK_HIDDEN: tl.constexpr, DOT: tl.constexpr, CHUNKS: tl.constexpr = 0, TAIL: tl.constexpr = 0):
    """One run's trunk on its block of rows: features [BLOCK_ROWS, BLOCK_HIDDEN] as an operand
    (padded units are tanh(0) = 0). The first layer takes BLOCK_INPUTS entries a product: in a loop, or, given
    their number of products (CHUNKS) and the entries of a narrower last one (TAIL, 0 for none; the observation's
    entries at most CHUNKS * BLOCK_INPUTS + TAIL), unrolled, so that a caller's loop over blocks of rows reads each
    part of the weight once, before it."""
    unit = tl.arange(0, BLOCK_HIDDEN)
    summed = tl.zeros((BLOCK_ROWS, BLOCK_HIDDEN), tl.float32)
    if CHUNKS > 0:
        for chunk in tl.static_range(CHUNKS):
            summed = _first_layer_part(observations_ptr, row, rows, inputs, weight_ptr, unit, chunk * BLOCK_INPUTS,
                                       summed, HIDDEN, BLOCK_INPUTS, DOT)
        if TAIL > 0:
            summed = _first_layer_part(observations_ptr, row, rows, inputs, weight_ptr, unit, CHUNKS * BLOCK_INPUTS,
                                       summed, HIDDEN, TAIL, DOT)
    else:
        for start in range(0, inputs, BLOCK_INPUTS):
            summed = _first_layer_part(observations_ptr, row, rows, inputs, weight_ptr, unit, start, summed, HIDDEN,
                                       BLOCK_INPUTS, DOT)
    features = _activated(summed, bias_ptr, unit, HIDDEN, DOT)
    for layer in tl.static_range(LAYERS - 1):
        weight = _matrix(hidden_weights_ptr + layer * HIDDEN * HIDDEN, unit, unit, HIDDEN, HIDDEN, DOT)
        features = _activated(tl.dot(features, weight), hidden_biases_ptr + layer * HIDDEN, unit, HIDDEN, DOT)
    return features


@triton.jit
def _column(features, weight_ptr, bias_ptr, HIDDEN: tl.constexpr, BLOCK_HIDDEN: tl.constexpr):
    """float32[rows]: features x weight float32[1, H]^T + bias float32[1], as ``StackedLinear``'s one
    column computes it (a product and a sum, in float32)."""
    into = tl.arange(0, BLOCK_HIDDEN)
    weight = tl.load(weight_ptr + into, mask=into < HIDDEN, other=0.0)
    return tl.sum(features.to(tl.float32) * weight[None, :], axis=1) + tl.load(bias_ptr)


@triton.jit
def _sample(features, weight_ptr, bias_ptr, draws_ptr, draws_stride, actions_ptr, log_prob_ptr, row, rows, stored,
            HIDDEN: tl.constexpr, COMPONENTS: tl.constexpr, LEVELS: tl.constexpr, BLOCK_HIDDEN: tl.constexpr,
            BLOCK_LEVELS: tl.constexpr, DOT: tl.constexpr):
    """A categorical policy head of COMPONENTS x LEVELS logits sampled: each component's logits as the head
    computes them (a product of BLOCK_LEVELS columns, at least 16; rounded to bfloat16), their log-softmax and
    the action drawn at its draw by the inverse cumulative distribution (draws float32[rows], ``draws_stride``
    entries apart by component), as ``categorical_terms.sample`` computes them; writes the actions
    int32[.., COMPONENTS] and their joint log-probability float32."""
    level = tl.arange(0, BLOCK_LEVELS)
    kept = (row[:, None] < rows) & (level[None, :] < LEVELS)
    log_prob = tl.zeros(row.shape, tl.float32)
    # a loop, not unrolled: fewer registers (ptxas, sm_90, at train-ref's 21 + 21 logits left to its choice: 149
    # against 164 unrolled; at width 128, 165 against 184, three programs an SM against two)
    for component in range(COMPONENTS):
        unit = component * LEVELS
        weight = _matrix(weight_ptr + unit * HIDDEN, tl.arange(0, BLOCK_HIDDEN), level, HIDDEN, LEVELS, DOT)
        bias = _bfloat16(tl.load(bias_ptr + unit + level, mask=level < LEVELS, other=0))
        log_p, p = log_softmax_of(_round(tl.dot(features, weight) + bias[None, :], DOT), level[None, :] < LEVELS,
                                  kept, DOT == tl.bfloat16)
        draw = tl.load(draws_ptr + component * draws_stride + row.to(tl.int64), mask=row < rows, other=0.5)
        action, component_log_prob = inverse_cdf(log_p, p, draw, LEVELS, BLOCK_LEVELS)
        log_prob += component_log_prob
        tl.store(actions_ptr + stored * COMPONENTS + component, action, mask=row < rows)
    tl.store(log_prob_ptr + stored, log_prob, mask=row < rows)


@triton.jit
def fused_actor_critic(
        observations_ptr, run_stride, actor_weight_ptr, actor_bias_ptr, actor_hidden_weights_ptr,
        actor_hidden_biases_ptr, critic_weight_ptr, critic_bias_ptr, critic_hidden_weights_ptr,
        critic_hidden_biases_ptr, policy_weight_ptr, policy_bias_ptr, value_weight_ptr, value_bias_ptr,
        policy_ptr, values_ptr, draws_ptr, draws_stride, draws_run_stride, actions_ptr, log_prob_ptr, rows, inputs,
        HIDDEN: tl.constexpr, LAYERS: tl.constexpr, OUTPUTS: tl.constexpr, POLICY_ENTRIES: tl.constexpr,
        SHARED: tl.constexpr, BLOCK_ROWS: tl.constexpr, BLOCK_INPUTS: tl.constexpr, BLOCK_HIDDEN: tl.constexpr,
        BLOCK_OUTPUTS: tl.constexpr, DOT: tl.constexpr, COMPONENTS: tl.constexpr, LEVELS: tl.constexpr,
        BLOCK_LEVELS: tl.constexpr):
    """observations int16[R, B, D] (bfloat16 bits, rows ``run_stride`` apart by run); the trunks'
    and a multi-column policy head's weights and biases as bfloat16 bits, a one-column head's as
    float32, laid out as ``actor_critic`` takes them; writes policy int16[R, B, POLICY_ENTRIES] (bfloat16 bits,
    the entries past the P outputs 0; float32 for one column) and values float32[R, B].
    With COMPONENTS (> 0) categorical components of LEVELS logits each, it samples the policy instead
    (``_sample``): from draws float32[B] a run's component, ``draws_stride`` entries apart by component and
    ``draws_run_stride`` by run, it writes actions int32[R, B, COMPONENTS] and their log-probability
    float32[R, B].
    Program (i, r) computes rows i * BLOCK_ROWS.. of run r."""
    run = tl.program_id(1)
    row = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    observations_ptr += run.to(tl.int64) * run_stride
    first, biases = run * HIDDEN * inputs, run * HIDDEN
    hidden, hidden_biases = run * (LAYERS - 1) * HIDDEN * HIDDEN, run * (LAYERS - 1) * HIDDEN
    actor = _trunk(observations_ptr, row, rows, inputs, actor_weight_ptr + first, actor_bias_ptr + biases,
                   actor_hidden_weights_ptr + hidden, actor_hidden_biases_ptr + hidden_biases, HIDDEN, LAYERS,
                   BLOCK_ROWS, BLOCK_INPUTS, BLOCK_HIDDEN, DOT)
    output = tl.arange(0, BLOCK_OUTPUTS)
    stored = run.to(tl.int64) * rows + row
    if COMPONENTS > 0:
        _sample(actor, policy_weight_ptr + run * OUTPUTS * HIDDEN, policy_bias_ptr + run * OUTPUTS,
                draws_ptr + run.to(tl.int64) * draws_run_stride, draws_stride, actions_ptr, log_prob_ptr,
                row, rows, stored, HIDDEN, COMPONENTS, LEVELS, BLOCK_HIDDEN, BLOCK_LEVELS, DOT)
    elif OUTPUTS == 1:
        column = _column(actor, policy_weight_ptr + run * HIDDEN, policy_bias_ptr + run, HIDDEN, BLOCK_HIDDEN)
        policy = tl.where(output[None, :] == 0, column[:, None], 0.0)  # stored as float32
    else:
        weight = _matrix(policy_weight_ptr + run * OUTPUTS * HIDDEN, tl.arange(0, BLOCK_HIDDEN), output, HIDDEN,
                         OUTPUTS, DOT)
        bias = _bfloat16(tl.load(policy_bias_ptr + run * OUTPUTS + output, mask=output < OUTPUTS, other=0))
        policy = _round(tl.dot(actor, weight) + bias[None, :], DOT)
        # rounded already: its high half is its bfloat16
        policy = (policy.to(tl.uint32, bitcast=True) >> 16).to(tl.uint16).to(tl.int16, bitcast=True)
    if COMPONENTS == 0:
        tl.store(policy_ptr + stored[:, None] * POLICY_ENTRIES + output[None, :], policy,
                 mask=(row[:, None] < rows) & (output[None, :] < POLICY_ENTRIES))
    if SHARED:
        critic = actor
    else:
        critic = _trunk(observations_ptr, row, rows, inputs, critic_weight_ptr + first, critic_bias_ptr + biases,
                        critic_hidden_weights_ptr + hidden, critic_hidden_biases_ptr + hidden_biases, HIDDEN,
                        LAYERS, BLOCK_ROWS, BLOCK_INPUTS, BLOCK_HIDDEN, DOT)
    value = _column(critic, value_weight_ptr + run * HIDDEN, value_bias_ptr + run, HIDDEN, BLOCK_HIDDEN)
    tl.store(values_ptr + stored, value, mask=row < rows)
