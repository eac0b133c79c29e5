"""PPO's loss on a block of rows inside the gradients' kernel (``fused_trunk_backward`` with LOSS), or in a forward
kernel of its own before them (``ppo_loss_forward``): a categorical policy's clipped objective and entropy from the
actor's features, the value's error from the critic's, each with its gradient at the head's outputs, which the
gradients' kernel carries back through the trunk, and the sums of the minibatch's statistics. What
``fused_loss.ppo_loss_gradients`` computes on the CPU, as autograd differentiates ``loss.MinibatchLoss``: at a tie
of the clipped and the unclipped objective (or of the two values' errors) each takes half the gradient, and a bound
reached passes it on."""

import triton
import triton.language as tl

from warpsim.train.actor_critic_kernel import _bfloat16, _column, _matrix, _round, _trunk
from warpsim.train.categorical_terms_kernel import _exp
from warpsim.train.fused_loss import STATISTIC_SLOTS

STATISTICS = tl.constexpr(STATISTIC_SLOTS)
"""Slots of a program's part of the statistics (``fused_loss.STATISTIC_SLOTS``)."""


@triton.jit
def _tie_weight(mine, other, passed):
    """The share of a minimum's (``mine`` below ``other``) gradient that reaches ``mine``: 1, at a tie half, past
    ``other`` none, times ``passed`` (1.0 where its bound passes the gradient on)."""
    return tl.where(mine < other, 1.0, tl.where(mine == other, 0.5, 0.0)) * passed


@triton.jit
def row_statistics(deviation, clipped, approx_kl, policy, squared, entropy, rows):
    """A program's part of ``loss.STATS`` float32[STATISTICS] from its rows' terms, each float32[rows of a block]
    summed over its blocks: the largest ratio ``deviation``, and the others' sums over the minibatch's ``rows`` (the
    squared errors' halved: the value loss)."""
    slot = tl.arange(0, STATISTICS)
    sums = tl.where(slot == 1, tl.sum(clipped), 0.0) + tl.where(slot == 2, tl.sum(approx_kl), 0.0)
    sums += tl.where(slot == 3, tl.sum(policy), 0.0) + tl.where(slot == 4, 0.5 * tl.sum(squared), 0.0)
    sums += tl.where(slot == 5, tl.sum(entropy), 0.0)
    return tl.where(slot == 0, tl.max(deviation), sums / rows)


@triton.jit
def head_rows(output, COMPONENTS: tl.constexpr, LEVELS: tl.constexpr, BLOCK_LEVELS: tl.constexpr):
    """The policy head's outputs at columns ``output`` of the loss's tiles, where each component takes BLOCK_LEVELS
    columns (its LEVELS, then padding), and whether a column holds one."""
    component, level = output // BLOCK_LEVELS, output % BLOCK_LEVELS
    return component * LEVELS + level, (level < LEVELS) & (component < COMPONENTS)


@triton.jit
def policy_loss_gradient(features, head, bias_ptr, actions_ptr, old_log_probs_ptr, advantages_ptr, row, rows,
                         clip, entropy_coef, COMPONENTS: tl.constexpr, LEVELS: tl.constexpr,
                         BLOCK_COMPONENTS: tl.constexpr, BLOCK_LEVELS: tl.constexpr, DOT: tl.constexpr):
    """The policy head's outputs' gradient float32[rows, BLOCK_COMPONENTS x BLOCK_LEVELS] on a block of rows, a
    component's in BLOCK_LEVELS columns (``head_rows``), and the rows' terms of the statistics
    float32[rows] (``row_statistics``' but the squared errors; 0 past the last row): the head (its weight an operand
    [BLOCK_COMPONENTS x BLOCK_LEVELS, units], its outputs in its rows as ``head_rows`` lays them out; its bias
    bfloat16 bits [COMPONENTS x LEVELS]) on the actor's ``features`` (an operand), the taken actions int32[rows,
    COMPONENTS], their log-probabilities when sampled and their advantages (normalised) float32[rows]. The objective
    is clipped at ``clip``, the entropy weighs ``entropy_coef``; both are means over ``rows``."""
    head_row, held = head_rows(tl.arange(0, BLOCK_COMPONENTS * BLOCK_LEVELS), COMPONENTS, LEVELS, BLOCK_LEVELS)
    bias = _bfloat16(tl.load(bias_ptr + head_row, mask=held, other=0))
    logits = _round(tl.dot(features, tl.trans(head)) + bias[None, :], DOT)  # as the forward kernel writes them
    kept = row < rows
    fast = DOT == tl.bfloat16
    shape: tl.constexpr = (row.shape[0], BLOCK_COMPONENTS, BLOCK_LEVELS)
    level = tl.arange(0, BLOCK_LEVELS)[None, None, :]
    inside = (level < LEVELS) & (tl.arange(0, BLOCK_COMPONENTS)[None, :, None] < COMPONENTS)
    logits = tl.where(inside, tl.reshape(logits, shape), float("-inf"))
    shifted = logits - tl.max(logits, axis=2)[:, :, None]
    log_p = tl.where(inside, shifted - tl.log(tl.sum(_exp(shifted, fast), axis=2))[:, :, None], 0.0)
    p = tl.where(inside & kept[:, None, None], _exp(log_p, fast), 0.0)
    component = tl.arange(0, BLOCK_COMPONENTS)[None, :]
    action = tl.load(actions_ptr + row[:, None].to(tl.int64) * COMPONENTS + component,
                     mask=kept[:, None] & (component < COMPONENTS), other=-1)
    taken = tl.where(level == action[:, :, None], 1.0, 0.0)
    new_log_prob = tl.sum(tl.sum(taken * log_p, axis=2), axis=1)
    component_entropy = -tl.sum(p * log_p, axis=2)
    old_log_prob = tl.load(old_log_probs_ptr + row, mask=kept, other=0.0)
    advantage = tl.load(advantages_ptr + row, mask=kept, other=0.0)
    ratio = tl.exp(new_log_prob - old_log_prob)
    unclipped = advantage * ratio
    clipped = advantage * tl.minimum(tl.maximum(ratio, 1.0 - clip), 1.0 + clip)
    within = tl.where((ratio >= 1.0 - clip) & (ratio <= 1.0 + clip), 1.0, 0.0)
    shares = _tie_weight(unclipped, clipped, 1.0) + _tie_weight(clipped, unclipped, within)
    log_prob_gradient = tl.where(kept, -(shares * advantage) / rows * ratio, 0.0)
    entropy_gradient = -entropy_coef / rows
    gradient = (log_prob_gradient[:, None, None] * (taken - p)
                - entropy_gradient * p * (log_p + component_entropy[:, :, None]))
    deviation = tl.where(kept, tl.abs(ratio - 1.0), 0.0)
    return (tl.reshape(gradient, (row.shape[0], BLOCK_COMPONENTS * BLOCK_LEVELS)), deviation,
            tl.where(deviation > clip, 1.0, 0.0), tl.where(kept, (ratio - 1.0) - (new_log_prob - old_log_prob), 0.0),
            tl.where(kept, -tl.minimum(unclipped, clipped), 0.0), tl.sum(component_entropy, axis=1))


@triton.jit
def value_loss_gradient(features, weight_ptr, bias_ptr, old_values_ptr, returns_ptr, row, rows, value_clip,
                        value_coef, HIDDEN: tl.constexpr, BLOCK_HIDDEN: tl.constexpr, VALUE_CLIP: tl.constexpr):
    """The value's gradient float32[rows] on a block of rows and its rows' squared errors (0 past the last row): the
    value's column (float32 weight [1, H] and bias [1]) on the critic's ``features``, against the returns
    float32[rows]; with VALUE_CLIP the larger of that error and the clipped value's (the rollout's value
    float32[rows] moved by at most ``value_clip``). Half their mean weighs ``value_coef``."""
    kept = row < rows
    value = _column(features, weight_ptr, bias_ptr, HIDDEN, BLOCK_HIDDEN)
    returns = tl.load(returns_ptr + row, mask=kept, other=0.0)
    error = value - returns
    scale = value_coef * 0.5 / rows
    if VALUE_CLIP:
        old_value = tl.load(old_values_ptr + row, mask=kept, other=0.0)
        moved = value - old_value
        clipped_error = old_value + tl.minimum(tl.maximum(moved, -value_clip), value_clip) - returns
        within = tl.where((moved >= -value_clip) & (moved <= value_clip), 1.0, 0.0)
        squared, clipped_squared = error * error, clipped_error * clipped_error
        # the maximum's gradient: the minimum's, of the errors negated
        gradient = scale * (_tie_weight(-squared, -clipped_squared, 1.0) * 2.0 * error
                            + _tie_weight(-clipped_squared, -squared, within) * 2.0 * clipped_error)
        squared = tl.maximum(squared, clipped_squared)
    else:
        squared = error * error
        gradient = scale * 2.0 * error
    return tl.where(kept, gradient, 0.0), tl.where(kept, squared, 0.0)


@triton.jit
def ppo_loss_forward(
        observations_ptr, run_stride, actor_weight_ptr, actor_bias_ptr, actor_hidden_weights_ptr,
        actor_hidden_biases_ptr, critic_weight_ptr, critic_bias_ptr, critic_hidden_weights_ptr,
        critic_hidden_biases_ptr, policy_weight_ptr, policy_bias_ptr, value_weight_ptr, value_bias_ptr, actions_ptr,
        old_log_probs_ptr, advantages_ptr, old_values_ptr, returns_ptr, coefficients_ptr, picks_ptr, picks_stride,
        policy_gradient_ptr, value_gradient_ptr, statistics_ptr, observation_rows, rows, inputs,
        HIDDEN: tl.constexpr, LAYERS: tl.constexpr, OUTPUTS: tl.constexpr, GRADIENT_ENTRIES: tl.constexpr,
        BLOCK_ROWS: tl.constexpr, BLOCK_INPUTS: tl.constexpr, BLOCK_HIDDEN: tl.constexpr, DOT: tl.constexpr,
        COMPONENTS: tl.constexpr, LEVELS: tl.constexpr, BLOCK_COMPONENTS: tl.constexpr, BLOCK_LEVELS: tl.constexpr,
        VALUE_CLIP: tl.constexpr):
    """PPO's loss in the networks' forward pass: on each run's minibatch, the rows ``picks_ptr`` int64[R, B] (a
    run's ``picks_stride`` entries apart) of the rollout's ``observations_ptr`` (``observation_rows`` a run,
    ``run_stride`` entries apart), the networks as ``fused_actor_critic`` takes them (a trunk each) and the
    minibatch and coefficients as ``fused_trunk_backward`` takes them with LOSS, writes the policy head's outputs'
    gradient (bfloat16 bits [R, B, GRADIENT_ENTRIES], its OUTPUTS = COMPONENTS x LEVELS first, as the loss's kernels
    write it) and the value's float32[R, B], which the gradients' kernels then read, and program (i, r)'s part of
    run r's statistics float32[R, programs, STATISTICS] (``row_statistics``). Its rows are i * BLOCK_ROWS..: at the
    forward kernel's shape each warp holds whole rows, so that a component's log-softmax is a warp's reduction,
    where the gradients' kernels' narrower blocks spread a row's logits over the warps."""
    block, run = tl.program_id(0), tl.program_id(1)
    row = block * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    kept = row < rows
    per_row = run.to(tl.int64) * rows
    observations_ptr += run.to(tl.int64) * run_stride
    source = tl.where(kept, tl.load(picks_ptr + run.to(tl.int64) * picks_stride + row, mask=kept, other=0),
                      observation_rows)
    first, biases = run * HIDDEN * inputs, run * HIDDEN
    hidden, hidden_biases = run * (LAYERS - 1) * HIDDEN * HIDDEN, run * (LAYERS - 1) * HIDDEN
    clip, value_clip = tl.load(coefficients_ptr + run * 4), tl.load(coefficients_ptr + run * 4 + 1)
    value_coef, entropy_coef = tl.load(coefficients_ptr + run * 4 + 2), tl.load(coefficients_ptr + run * 4 + 3)
    actor = _trunk(observations_ptr, source, observation_rows, inputs, actor_weight_ptr + first,
                   actor_bias_ptr + biases, actor_hidden_weights_ptr + hidden, actor_hidden_biases_ptr + hidden_biases,
                   HIDDEN, LAYERS, BLOCK_ROWS, BLOCK_INPUTS, BLOCK_HIDDEN, DOT)
    head_row, held = head_rows(tl.arange(0, BLOCK_COMPONENTS * BLOCK_LEVELS), COMPONENTS, LEVELS, BLOCK_LEVELS)
    head = tl.trans(_matrix(policy_weight_ptr + run * OUTPUTS * HIDDEN, tl.arange(0, BLOCK_HIDDEN),
                            tl.where(held, head_row, OUTPUTS), HIDDEN, OUTPUTS, DOT))
    gradient, deviation, clipped, approx_kl, policy, entropy = policy_loss_gradient(
        actor, head, policy_bias_ptr + run * OUTPUTS, actions_ptr + per_row * COMPONENTS, old_log_probs_ptr + per_row,
        advantages_ptr + per_row, row, rows, clip, entropy_coef, COMPONENTS, LEVELS, BLOCK_COMPONENTS, BLOCK_LEVELS,
        DOT)
    bits = (_round(gradient, DOT).to(tl.uint32, bitcast=True) >> 16).to(tl.uint16).to(tl.int16, bitcast=True)
    tl.store(policy_gradient_ptr + (per_row + row)[:, None] * GRADIENT_ENTRIES + head_row[None, :], bits,
             mask=kept[:, None] & held[None, :])
    critic = _trunk(observations_ptr, source, observation_rows, inputs, critic_weight_ptr + first,
                    critic_bias_ptr + biases, critic_hidden_weights_ptr + hidden,
                    critic_hidden_biases_ptr + hidden_biases, HIDDEN, LAYERS, BLOCK_ROWS, BLOCK_INPUTS, BLOCK_HIDDEN,
                    DOT)
    value_gradient, squared = value_loss_gradient(critic, value_weight_ptr + run * HIDDEN, value_bias_ptr + run,
                                                  old_values_ptr + per_row, returns_ptr + per_row, row, rows,
                                                  value_clip, value_coef, HIDDEN, BLOCK_HIDDEN, VALUE_CLIP)
    tl.store(value_gradient_ptr + per_row + row, value_gradient, mask=kept)
    slot = tl.arange(0, STATISTICS)
    tl.store(statistics_ptr + (run * tl.num_programs(0) + block) * STATISTICS + slot,
             row_statistics(deviation, clipped, approx_kl, policy, squared, entropy, rows))
