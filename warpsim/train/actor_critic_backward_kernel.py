"""The Triton kernels of ``fused_forward.actor_critic``'s gradients: a whole trunk's and its head's
per launch (``fused_trunk_backward``, trunks of one or two layers up to width 64), or one layer's
or one head's (``fused_actor_critic_backward``, any trunk).

A program takes one run's blocks of rows, ``programs`` apart, and sums the gradients over them in
float32 registers; it writes those partial sums, and the launcher adds the programs' sums in a
fixed order (the same gradients on every call). What the gradients need of the activations is
computed again from the observations, with the forward kernel's own code, rather than kept from
the forward pass: a few more products on the tensor cores against two bytes a unit of every
layer and sample written and read again. The roundings are autograd's under bf16 autocast: every
gradient that autograd keeps in bfloat16 (at a layer's output and at its sum) is rounded here
too, and products take bfloat16 operands (``DOT``; float32 in Triton's interpreter, as in the
forward kernel)."""

import triton
import triton.language as tl

from warpsim.train.actor_critic_kernel import _activated, _as_operand, _operand, _round, _trunk
from warpsim.train.ppo_loss_kernel import (
    STATISTICS,
    head_rows,
    policy_loss_gradient,
    row_statistics,
    value_loss_gradient,
)


@triton.jit
def _rows_of(weight_ptr, out, into, INTO: tl.constexpr, OUT: tl.constexpr, DOT: tl.constexpr):
    """weight bfloat16 bits [OUT, INTO] at (out, into): an operand [out, into]."""
    bits = tl.load(weight_ptr + out[:, None] * INTO + into[None, :], mask=(out[:, None] < OUT) & (into[None, :] < INTO),
                   other=0)
    return _operand(bits, DOT)


@triton.jit
def _inputs(observations_ptr, row, rows, inputs, first_column, BLOCK_IN: tl.constexpr, DOT: tl.constexpr):
    """The block's observation entries first_column.. first_column + BLOCK_IN: an operand [rows, BLOCK_IN]."""
    column = first_column + tl.arange(0, BLOCK_IN)
    bits = tl.load(observations_ptr + row[:, None].to(tl.int64) * inputs + column[None, :],
                   mask=(row[:, None] < rows) & (column[None, :] < inputs), other=0)
    return _operand(bits, DOT)


@triton.jit
def _column_gradient(gradient, weight_ptr, unit, HIDDEN: tl.constexpr, DOT: tl.constexpr):
    """The gradient at a trunk's features float32[rows, units] from a one-column head's (float32 weight
    [1, H]) gradient float32[rows], rounded to the features' bfloat16."""
    weight = tl.load(weight_ptr + unit, mask=unit < HIDDEN, other=0.0)
    return _round(gradient[:, None] * weight[None, :], DOT)


@triton.jit
def _head_weight(head_weight_ptr, head_row, unit, HIDDEN: tl.constexpr, OUTPUTS: tl.constexpr, DOT: tl.constexpr):
    """A multi-column head's weight (bfloat16 bits [OUTPUTS, H]) as an operand [BLOCK_OUTPUTS, units], its outputs
    ``head_row`` in its rows (OUTPUTS for none); a one-column head's, which ``_column_gradient`` reads, its pointer."""
    if OUTPUTS == 1:
        weight = head_weight_ptr
    else:
        weight = _rows_of(head_weight_ptr, head_row, unit, HIDDEN, OUTPUTS, DOT)
    return weight


@triton.jit
def _head_gradient(gradient_ptr, row, rows, OUTPUTS: tl.constexpr, GRADIENT_ENTRIES: tl.constexpr,
                   BLOCK_OUTPUTS: tl.constexpr, DOT: tl.constexpr):
    """A head's outputs' gradient on a block of rows, as the loss wrote it: bfloat16 bits [rows, OUTPUTS] in rows of
    GRADIENT_ENTRIES, as an operand [rows, BLOCK_OUTPUTS]; float32[rows] for one column."""
    if OUTPUTS == 1:
        gradient = tl.load(gradient_ptr + row, mask=row < rows, other=0.0)
    else:
        output = tl.arange(0, BLOCK_OUTPUTS)
        bits = tl.load(gradient_ptr + row[:, None].to(tl.int64) * GRADIENT_ENTRIES + output[None, :],
                       mask=(row[:, None] < rows) & (output[None, :] < OUTPUTS), other=0)
        gradient = _operand(bits, DOT)
    return gradient


@triton.jit
def _value_gradient(value_gradient_ptr, row, rows, WITH_VALUE: tl.constexpr):
    """The value's column's gradient float32[rows] where the trunk feeds it (``WITH_VALUE``), read; zeros otherwise,
    which nothing reads."""
    if WITH_VALUE:
        gradient = tl.load(value_gradient_ptr + row, mask=row < rows, other=0.0)
    else:
        gradient = tl.zeros(row.shape, tl.float32)
    return gradient


@triton.jit
def _tanh_gradient(gradient, features, DOT: tl.constexpr):
    """The gradient at a tanh layer's sum from that at its output float32 and the output (an operand):
    times 1 - tanh^2, rounded, as an operand."""
    features = features.to(tl.float32)
    return _as_operand(gradient * (1.0 - features * features), DOT)


@triton.jit
def _sum_column():
    """bool[1, 16]: the column of a bias's sums [N, 16] (``_row_sums``) that holds them, the first."""
    return tl.arange(0, 16)[None, :] == 0


@triton.jit
def _row_sums(operand, sums, BLOCK_ROWS: tl.constexpr, DOT: tl.constexpr):
    """``sums`` float32[N, 16] plus, in its column 0, ``operand``'s [rows, N] sums over its rows: a product with a
    column of ones on the tensor cores, where a sum over rows spread across the warps took shuffles and barriers
    (a fifth of a block's instructions in the actor's whole-trunk program)."""
    ones = tl.broadcast_to(tl.where(_sum_column(), 1.0, 0.0), (BLOCK_ROWS, 16)).to(DOT)
    return tl.dot(tl.trans(operand), ones, sums)


@triton.jit
def _head_sums(features, gradient, weight_sum, bias_sum, OUTPUTS: tl.constexpr, BLOCK_OUTPUTS: tl.constexpr,
               BLOCK_ROWS: tl.constexpr, DOT: tl.constexpr):
    """A head's weight and bias gradients [BLOCK_OUTPUTS, units] and (``_row_sums``') [BLOCK_OUTPUTS, 16],
    summed further over a block of rows: its outputs' gradient (as ``_head_gradient`` gives it) against the
    trunk's features (an operand)."""
    if OUTPUTS == 1:
        first = tl.arange(0, BLOCK_OUTPUTS) == 0
        column = tl.sum(gradient[:, None] * features.to(tl.float32), axis=0)
        weight_sum += tl.where(first[:, None], column[None, :], 0.0)
        bias_sum += tl.where(first[:, None] & _sum_column(), tl.sum(gradient), 0.0)
    else:
        weight_sum = tl.dot(tl.trans(gradient), features, weight_sum)
        bias_sum = _row_sums(gradient, bias_sum, BLOCK_ROWS, DOT)
    return weight_sum, bias_sum


@triton.jit
def _features_gradient(gradient, head, value_gradient, value_weight_ptr, unit, HIDDEN: tl.constexpr,
                       OUTPUTS: tl.constexpr, WITH_VALUE: tl.constexpr, DOT: tl.constexpr):
    """The gradient at a trunk's features float32[rows, units], rounded to their bfloat16: from its head's outputs'
    (as ``_head_gradient`` gives it) through the head's weight (as ``_head_weight`` gives it), plus,
    ``WITH_VALUE``, from the value's column's float32[rows]."""
    if OUTPUTS == 1:
        features_gradient = _column_gradient(gradient, head, unit, HIDDEN, DOT)
    else:
        features_gradient = _round(tl.dot(gradient, head), DOT)
    if WITH_VALUE:
        features_gradient = _round(features_gradient + _column_gradient(value_gradient, value_weight_ptr, unit, HIDDEN,
                                                                        DOT), DOT)
    return features_gradient


@triton.jit
def _store_sums(weight_sums_ptr, bias_sums_ptr, partial, weight_sum, bias_sum, first_column, target_out, target_in,
                out, BLOCK_IN: tl.constexpr):
    """A program's sums of a weight's gradient [target_out, target_in] (its inputs ``first_column``.. in
    ``weight_sum``, its outputs ``out`` [BLOCK_OUT] in its rows: at or past ``target_out`` none) and of its bias's
    (``_row_sums``' [BLOCK_OUT, 16]): every block of inputs sums the same bias, the first stores it."""
    into = first_column + tl.arange(0, BLOCK_IN)
    tl.store(weight_sums_ptr + partial + out[:, None] * target_in + into[None, :], weight_sum,
             mask=(out[:, None] < target_out) & (into[None, :] < target_in))
    tl.store(bias_sums_ptr + partial + out[:, None] + tl.arange(0, 16)[None, :], bias_sum,
             mask=(out[:, None] < tl.where(first_column == 0, target_out, 0)) & _sum_column())


@triton.jit
def _of_run(run, observations_ptr, run_stride, weight_ptr, bias_ptr, hidden_weights_ptr, hidden_biases_ptr,
            head_weight_ptr, head_gradient_ptr, value_weight_ptr, value_gradient_ptr, rows, inputs,
            HIDDEN: tl.constexpr, LAYERS: tl.constexpr, OUTPUTS: tl.constexpr, GRADIENT_ENTRIES: tl.constexpr):
    """The gradients' kernels' pointers moved to run ``run``'s observations, weights and gradients."""
    return (observations_ptr + run.to(tl.int64) * run_stride, weight_ptr + run * HIDDEN * inputs,
            bias_ptr + run * HIDDEN, hidden_weights_ptr + run * (LAYERS - 1) * HIDDEN * HIDDEN,
            hidden_biases_ptr + run * (LAYERS - 1) * HIDDEN, head_weight_ptr + run * OUTPUTS * HIDDEN,
            head_gradient_ptr + run.to(tl.int64) * rows * GRADIENT_ENTRIES, value_weight_ptr + run * HIDDEN,
            value_gradient_ptr + run.to(tl.int64) * rows)


@triton.jit
def fused_actor_critic_backward(
        observations_ptr, run_stride, weight_ptr, bias_ptr, hidden_weights_ptr, hidden_biases_ptr, head_weight_ptr,
        head_gradient_ptr, value_weight_ptr, value_gradient_ptr, weight_sums_ptr, bias_sums_ptr, rows, inputs,
        programs, sums_stride, target_out, target_in, HIDDEN: tl.constexpr, LAYERS: tl.constexpr, OUTPUTS: tl.constexpr,
        GRADIENT_ENTRIES: tl.constexpr, TARGET: tl.constexpr, WITH_VALUE: tl.constexpr, BLOCK_ROWS: tl.constexpr,
        BLOCK_INPUTS: tl.constexpr, BLOCK_HIDDEN: tl.constexpr, BLOCK_OUTPUTS: tl.constexpr, BLOCK_OUT: tl.constexpr,
        BLOCK_IN: tl.constexpr, DOT: tl.constexpr, INPUT_CHUNKS: tl.constexpr, INPUT_TAIL: tl.constexpr,
        TAIL_IN: tl.constexpr):
    """One trunk's (its first layer's weight [R, H, D] and bias [R, H], its further layers' [R, L - 1, H, H]
    and [R, L - 1, H], as bfloat16 bits) gradient of layer ``TARGET`` (0 .. L - 1), or of its head's weight
    [R, OUTPUTS, H] and bias for ``TARGET == LAYERS``, given the head's outputs' gradient: bfloat16 bits
    [R, B, OUTPUTS] in rows of GRADIENT_ENTRIES, or float32 [R, B] for one column (whose weight is float32 too).
    With ``WITH_VALUE`` the features feed the value's column as well (a shared trunk): its weight float32 [R, 1, H]
    and gradient float32 [R, B] add to the features' gradient. Observations as the forward kernel takes them. Program
    (p, r) writes its sums of run r's blocks p, p + programs, ..: the weight's [target_out, target_in] and
    the bias's [target_out], each at its pointer plus ``(r * programs + p) * sums_stride``. The first
    layer's weight is summed ``BLOCK_IN`` inputs at a time, program (p, r, c) taking inputs c * BLOCK_IN..:
    the block of rows stays in registers whatever the observation's size; with ``TAIL_IN`` > 0 the one program
    (p, r, 0) sums its inputs BLOCK_IN.. BLOCK_IN + TAIL_IN as well (``fused_backward.first_layer_columns``).
    The first layer's products of ``BLOCK_INPUTS`` entries are INPUT_CHUNKS unrolled and one of INPUT_TAIL after
    them, or a loop for 0 chunks (``_trunk``'s CHUNKS and TAIL)."""
    program, run, first_column = tl.program_id(0), tl.program_id(1), tl.program_id(2) * BLOCK_IN
    (observations_ptr, weight_ptr, bias_ptr, hidden_weights_ptr, hidden_biases_ptr, head_weight_ptr, head_gradient_ptr,
     value_weight_ptr, value_gradient_ptr) = _of_run(
        run, observations_ptr, run_stride, weight_ptr, bias_ptr, hidden_weights_ptr, hidden_biases_ptr,
        head_weight_ptr, head_gradient_ptr, value_weight_ptr, value_gradient_ptr, rows, inputs, HIDDEN, LAYERS,
        OUTPUTS, GRADIENT_ENTRIES)
    unit = tl.arange(0, BLOCK_HIDDEN)
    weight_sum = tl.zeros((BLOCK_OUT, BLOCK_IN), tl.float32)
    bias_sum = tl.zeros((BLOCK_OUT, 16), tl.float32)
    if TAIL_IN > 0:
        tail_sum = tl.zeros((BLOCK_OUT, TAIL_IN), tl.float32)
    for block in range(program, tl.cdiv(rows, BLOCK_ROWS), programs):
        row = block * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
        if TARGET == LAYERS:
            features = _trunk(observations_ptr, row, rows, inputs, weight_ptr, bias_ptr, hidden_weights_ptr,
                              hidden_biases_ptr, HIDDEN, LAYERS, BLOCK_ROWS, BLOCK_INPUTS, BLOCK_HIDDEN, DOT,
                              INPUT_CHUNKS, INPUT_TAIL)
            gradient = _head_gradient(head_gradient_ptr, row, rows, OUTPUTS, GRADIENT_ENTRIES, BLOCK_OUT, DOT)
            weight_sum, bias_sum = _head_sums(features, gradient, weight_sum, bias_sum, OUTPUTS, BLOCK_OUT, BLOCK_ROWS,
                                              DOT)
        else:
            # The gradient at the trunk's features, then back through the layers above the target.
            head_gradient = _head_gradient(head_gradient_ptr, row, rows, OUTPUTS, GRADIENT_ENTRIES, BLOCK_OUTPUTS,
                                           DOT)
            head = _head_weight(head_weight_ptr, tl.arange(0, BLOCK_OUTPUTS), unit, HIDDEN, OUTPUTS, DOT)
            gradient = _features_gradient(head_gradient, head, _value_gradient(value_gradient_ptr, row, rows,
                                                                               WITH_VALUE),
                                          value_weight_ptr, unit, HIDDEN, OUTPUTS, WITH_VALUE, DOT)
            for layer in tl.static_range(LAYERS - 1, TARGET, -1):
                features = _trunk(observations_ptr, row, rows, inputs, weight_ptr, bias_ptr, hidden_weights_ptr,
                                  hidden_biases_ptr, HIDDEN, layer + 1, BLOCK_ROWS, BLOCK_INPUTS, BLOCK_HIDDEN, DOT,
                                  INPUT_CHUNKS, INPUT_TAIL)
                weight = _rows_of(hidden_weights_ptr + (layer - 1) * HIDDEN * HIDDEN, unit, unit, HIDDEN, HIDDEN, DOT)
                gradient = _round(tl.dot(_tanh_gradient(gradient, features, DOT), weight), DOT)
            features = _trunk(observations_ptr, row, rows, inputs, weight_ptr, bias_ptr, hidden_weights_ptr,
                              hidden_biases_ptr, HIDDEN, TARGET + 1, BLOCK_ROWS, BLOCK_INPUTS, BLOCK_HIDDEN, DOT,
                              INPUT_CHUNKS, INPUT_TAIL)
            summed = _tanh_gradient(gradient, features, DOT)
            if TARGET == 0:
                below = _inputs(observations_ptr, row, rows, inputs, first_column, BLOCK_IN, DOT)
                if TAIL_IN > 0:
                    tail_sum = tl.dot(tl.trans(summed), _inputs(observations_ptr, row, rows, inputs, BLOCK_IN,
                                                                TAIL_IN, DOT), tail_sum)
            else:
                below = _trunk(observations_ptr, row, rows, inputs, weight_ptr, bias_ptr, hidden_weights_ptr,
                               hidden_biases_ptr, HIDDEN, TARGET, BLOCK_ROWS, BLOCK_INPUTS, BLOCK_HIDDEN, DOT,
                               INPUT_CHUNKS, INPUT_TAIL)
            weight_sum = tl.dot(tl.trans(summed), below, weight_sum)
            bias_sum = _row_sums(summed, bias_sum, BLOCK_ROWS, DOT)
    partial = (run * programs + program).to(tl.int64) * sums_stride
    _store_sums(weight_sums_ptr, bias_sums_ptr, partial, weight_sum, bias_sum, first_column, target_out, target_in,
                tl.arange(0, BLOCK_OUT), BLOCK_IN)
    if TAIL_IN > 0:
        _store_sums(weight_sums_ptr, bias_sums_ptr, partial, tail_sum, bias_sum, BLOCK_IN, target_out, target_in,
                    tl.arange(0, BLOCK_OUT), TAIL_IN)


@triton.jit
def fused_trunk_backward(
        observations_ptr, run_stride, weight_ptr, bias_ptr, hidden_weights_ptr, hidden_biases_ptr, head_weight_ptr,
        head_gradient_ptr, value_weight_ptr, value_gradient_ptr, first_weight_sums_ptr, first_bias_sums_ptr,
        hidden_weight_sums_ptr, hidden_bias_sums_ptr, head_weight_sums_ptr, head_bias_sums_ptr,
        value_weight_sums_ptr, value_bias_sums_ptr, head_bias_ptr, actions_ptr, old_log_probs_ptr, advantages_ptr,
        old_values_ptr, returns_ptr, coefficients_ptr, statistics_ptr, picks_ptr, picks_stride, observation_rows, rows,
        inputs,
        programs, sums_stride,
        HIDDEN: tl.constexpr, LAYERS: tl.constexpr, OUTPUTS: tl.constexpr, GRADIENT_ENTRIES: tl.constexpr,
        WITH_VALUE: tl.constexpr, BLOCK_ROWS: tl.constexpr, BLOCK_INPUTS: tl.constexpr, BLOCK_HIDDEN: tl.constexpr,
        BLOCK_OUTPUTS: tl.constexpr, BLOCK_IN: tl.constexpr, DOT: tl.constexpr, INPUT_CHUNKS: tl.constexpr,
        INPUT_TAIL: tl.constexpr, TAIL_IN: tl.constexpr, LOSS: tl.constexpr = False, COMPONENTS: tl.constexpr = 0,
        LEVELS: tl.constexpr = 0, BLOCK_LEVELS: tl.constexpr = 1, VALUE_CLIP: tl.constexpr = False,
        PICKED: tl.constexpr = False):
    """``fused_actor_critic_backward`` for every layer of a trunk of one or two layers and its head at once:
    the block's activations computed once, every gradient summed in registers. With ``WITH_VALUE`` the
    value's column's gradients are summed too (a shared trunk). Arguments as there, the partial sums of
    each weight and bias at its own pointer; programs (p, r, c) with c > 0 store only the first layer's
    weight's inputs c * BLOCK_IN..

    With LOSS (a trunk of its own under its head), the head's outputs' gradient is PPO's, computed here
    (ppo_loss_kernel.py) rather than read: the head's bias (``head_bias_ptr``, as its weight) and, per run, the
    minibatch's rows of the taken actions int32[R, B, COMPONENTS], their log-probabilities when sampled and their
    advantages (normalised) float32[R, B] for a policy head of COMPONENTS x LEVELS logits, a component's in
    BLOCK_LEVELS columns of the head's BLOCK_OUTPUTS (``fused_backward.loss_columns``); the rollout's values
    and the returns float32[R, B] for the value's column (clipped with VALUE_CLIP); the run's coefficients
    float32[R, 4] (clip, value_clip, value_coef, entropy_coef). Program (p, r, 0) stores its part of the
    statistics at ``statistics_ptr`` float32[R, programs, STATISTICS] (``ppo_loss_kernel.row_statistics``: the
    policy's slots, or the value's). With PICKED (which LOSS needs) the minibatch's observations are the rollout's
    rows at ``picks_ptr`` int64[R, B] (a run's ``picks_stride`` entries apart) of its ``observation_rows`` (a run's
    ``run_stride`` entries apart), read where they lie, where otherwise they are the rows ``rows`` themselves."""
    program, run, first_column = tl.program_id(0), tl.program_id(1), tl.program_id(2) * BLOCK_IN
    (observations_ptr, weight_ptr, bias_ptr, hidden_weights_ptr, hidden_biases_ptr, head_weight_ptr, head_gradient_ptr,
     value_weight_ptr, value_gradient_ptr) = _of_run(
        run, observations_ptr, run_stride, weight_ptr, bias_ptr, hidden_weights_ptr, hidden_biases_ptr,
        head_weight_ptr, head_gradient_ptr, value_weight_ptr, value_gradient_ptr, rows, inputs, HIDDEN, LAYERS,
        OUTPUTS, GRADIENT_ENTRIES)
    unit = tl.arange(0, BLOCK_HIDDEN)
    first_sum = tl.zeros((BLOCK_HIDDEN, BLOCK_IN), tl.float32)
    first_bias_sum = tl.zeros((BLOCK_HIDDEN, 16), tl.float32)
    if TAIL_IN > 0:
        tail_sum = tl.zeros((BLOCK_HIDDEN, TAIL_IN), tl.float32)
    hidden_sum = tl.zeros((BLOCK_HIDDEN, BLOCK_HIDDEN), tl.float32)
    hidden_bias_sum = tl.zeros((BLOCK_HIDDEN, 16), tl.float32)
    head_sum = tl.zeros((BLOCK_OUTPUTS, BLOCK_HIDDEN), tl.float32)
    head_bias_sum = tl.zeros((BLOCK_OUTPUTS, 16), tl.float32)
    value_sum = tl.zeros((16, BLOCK_HIDDEN), tl.float32)
    value_bias_sum = tl.zeros((16, 16), tl.float32)
    # each row's terms of the statistics over the blocks (ppo_loss_kernel.row_statistics'), summed, or the largest
    deviations, clipped_terms, kl_terms = (tl.zeros((BLOCK_ROWS,), tl.float32),) * 3
    policy_terms, squared_terms, entropy_terms = (tl.zeros((BLOCK_ROWS,), tl.float32),) * 3
    if PICKED:
        picks_ptr += run.to(tl.int64) * picks_stride
    if LOSS:
        per_row = run.to(tl.int64) * rows
        head_bias_ptr += run * OUTPUTS
        actions_ptr += per_row * COMPONENTS
        old_log_probs_ptr += per_row
        advantages_ptr += per_row
        old_values_ptr += per_row
        returns_ptr += per_row
        clip, value_clip = tl.load(coefficients_ptr + run * 4), tl.load(coefficients_ptr + run * 4 + 1)
        value_coef, entropy_coef = tl.load(coefficients_ptr + run * 4 + 2), tl.load(coefficients_ptr + run * 4 + 3)
    head_row = tl.arange(0, BLOCK_OUTPUTS)
    if LOSS and OUTPUTS > 1:  # a component's outputs in BLOCK_LEVELS columns
        head_row, held = head_rows(head_row, COMPONENTS, LEVELS, BLOCK_LEVELS)
        head_row = tl.where(held, head_row, OUTPUTS)
    if LAYERS == 2:
        hidden = _rows_of(hidden_weights_ptr, unit, unit, HIDDEN, HIDDEN, DOT)
    for block in range(program, tl.cdiv(rows, BLOCK_ROWS), programs):
        row = block * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
        if PICKED:  # the rollout's rows picked, those past the last row none (as the observations' rows past theirs)
            source = tl.where(row < rows, tl.load(picks_ptr + row, mask=row < rows, other=0), observation_rows)
            source_rows = observation_rows
        else:
            source, source_rows = row, rows
        first = _trunk(observations_ptr, source, source_rows, inputs, weight_ptr, bias_ptr, hidden_weights_ptr,
                       hidden_biases_ptr, HIDDEN, 1, BLOCK_ROWS, BLOCK_INPUTS, BLOCK_HIDDEN, DOT, INPUT_CHUNKS,
                       INPUT_TAIL)
        if LAYERS == 2:
            top = _activated(tl.dot(first, tl.trans(hidden)), hidden_biases_ptr, unit, HIDDEN, DOT)
        else:
            top = first
        head = _head_weight(head_weight_ptr, head_row, unit, HIDDEN, OUTPUTS, DOT)
        if LOSS:
            if OUTPUTS == 1:
                head_gradient, squared = value_loss_gradient(
                    top, head_weight_ptr, head_bias_ptr, old_values_ptr, returns_ptr, row, rows, value_clip,
                    value_coef, HIDDEN, BLOCK_HIDDEN, VALUE_CLIP)
                squared_terms += squared
            else:
                head_gradient, deviation, clipped, approx_kl, policy, entropy = policy_loss_gradient(
                    top, head, head_bias_ptr, actions_ptr, old_log_probs_ptr, advantages_ptr, row, rows,
                    clip, entropy_coef, COMPONENTS, LEVELS, BLOCK_OUTPUTS // BLOCK_LEVELS, BLOCK_LEVELS, DOT)
                head_gradient = _as_operand(head_gradient, DOT)
                policy_terms += policy
                entropy_terms += entropy
                kl_terms += approx_kl
                clipped_terms += clipped
                deviations = tl.maximum(deviations, deviation)
        else:
            head_gradient = _head_gradient(head_gradient_ptr, row, rows, OUTPUTS, GRADIENT_ENTRIES, BLOCK_OUTPUTS,
                                           DOT)
        head_sum, head_bias_sum = _head_sums(top, head_gradient, head_sum, head_bias_sum, OUTPUTS, BLOCK_OUTPUTS,
                                             BLOCK_ROWS, DOT)
        value_gradient = _value_gradient(value_gradient_ptr, row, rows, WITH_VALUE)
        if WITH_VALUE:
            value_sum, value_bias_sum = _head_sums(top, value_gradient, value_sum, value_bias_sum, 1, 16, BLOCK_ROWS,
                                                   DOT)
        gradient = _features_gradient(head_gradient, head, value_gradient, value_weight_ptr, unit, HIDDEN, OUTPUTS,
                                      WITH_VALUE, DOT)
        if LAYERS == 2:
            summed = _tanh_gradient(gradient, top, DOT)
            hidden_sum = tl.dot(tl.trans(summed), first, hidden_sum)
            hidden_bias_sum = _row_sums(summed, hidden_bias_sum, BLOCK_ROWS, DOT)
            gradient = _round(tl.dot(summed, hidden), DOT)
        summed = _tanh_gradient(gradient, first, DOT)
        first_sum = tl.dot(tl.trans(summed), _inputs(observations_ptr, source, source_rows, inputs, first_column,
                                                     BLOCK_IN, DOT), first_sum)
        if TAIL_IN > 0:
            tail_sum = tl.dot(tl.trans(summed), _inputs(observations_ptr, source, source_rows, inputs, BLOCK_IN,
                                                        TAIL_IN, DOT), tail_sum)
        first_bias_sum = _row_sums(summed, first_bias_sum, BLOCK_ROWS, DOT)
    partial = (run * programs + program).to(tl.int64) * sums_stride
    _store_sums(first_weight_sums_ptr, first_bias_sums_ptr, partial, first_sum, first_bias_sum, first_column,
                HIDDEN, inputs, unit, BLOCK_IN)
    if TAIL_IN > 0:
        _store_sums(first_weight_sums_ptr, first_bias_sums_ptr, partial, tail_sum, first_bias_sum, BLOCK_IN, HIDDEN,
                    inputs, unit, TAIL_IN)
    # the other sums are the same in every block of inputs: the first's programs store them
    others = tl.where(first_column == 0, 1, 0)
    if LAYERS == 2:
        _store_sums(hidden_weight_sums_ptr, hidden_bias_sums_ptr, partial, hidden_sum, hidden_bias_sum, 0,
                    HIDDEN * others, HIDDEN, unit, BLOCK_HIDDEN)
    _store_sums(head_weight_sums_ptr, head_bias_sums_ptr, partial, head_sum, head_bias_sum, 0, OUTPUTS * others,
                HIDDEN, head_row, BLOCK_HIDDEN)
    if WITH_VALUE:
        _store_sums(value_weight_sums_ptr, value_bias_sums_ptr, partial, value_sum, value_bias_sum, 0, others,
                    HIDDEN, tl.arange(0, 16), BLOCK_HIDDEN)
    if LOSS:
        slot = tl.arange(0, STATISTICS)
        if OUTPUTS == 1:
            mine = slot == 4
        else:
            mine = slot != 4
        statistics = row_statistics(deviations, clipped_terms, kl_terms, policy_terms, squared_terms, entropy_terms,
                                    rows)
        tl.store(statistics_ptr + (run * programs + program) * STATISTICS + slot, statistics,
                 mask=mine & (slot < STATISTICS * others))
