"""The Triton kernels of ``categorical_terms`` (both ways): a row a thread, one component at a time, its
log-softmax in float32 registers, read in tiles of ALIGN columns; and a component's log-softmax over a block of
columns, with an action drawn by its inverse cumulative distribution, for the rollout's kernel
(``log_softmax_of``, ``inverse_cdf``: actor_critic_kernel.py). Triton's interpreter runs them on a CPU with
``TRITON_INTERPRET=1`` set before Triton is imported (tests/interpret_categorical_terms.py)."""

import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _exp(values, FAST: tl.constexpr):
    """exp of float32 ``values``. ``FAST`` (on a GPU): by the power of two that flushes subnormals, where Triton's
    exp checks each power against -126 and halves and squares those below (three machine instructions more an
    entry, sm_90); the same values but for those under 2^-126, 0 here: in a softmax, probabilities that add
    nothing to 1."""
    if FAST:
        return libdevice.exp2(values * 1.44269502162933349609375)
    return tl.exp(values)


@triton.jit
def log_softmax_of(logits, inside, kept, FAST: tl.constexpr):
    """A component's log-softmax float32[rows, columns] from its logits float32[rows, columns], in the columns
    ``inside`` it, and its probabilities (both 0 where not ``kept``: outside it, past the last row); exponentials
    as ``_exp`` takes them (``FAST``)."""
    logits = tl.where(inside, logits, float("-inf"))  # rows past the last stay finite
    shifted = logits - tl.max(logits, axis=1)[:, None]
    log_p = shifted - tl.log(tl.sum(_exp(shifted, FAST), axis=1))[:, None]
    return tl.where(kept, log_p, 0.0), tl.where(kept, _exp(log_p, FAST), 0.0)


@triton.jit
def inverse_cdf(log_p, p, draw, LEVELS: tl.constexpr, BLOCK_LEVELS: tl.constexpr):
    """A component's action int32[rows] drawn at its uniform draw float32[rows], as ``ppo.sample``: the number of
    levels, the last left out, whose cumulative probability (of ``p``, float32[rows, BLOCK_LEVELS]) is at most
    the draw; and its log-probability float32[rows], from the log-softmax ``log_p``."""
    level = tl.arange(0, BLOCK_LEVELS)[None, :]
    below = (level < LEVELS - 1) & (tl.cumsum(p, axis=1) <= draw[:, None])
    action = tl.sum(below.to(tl.int32), axis=1)
    return action, tl.sum(tl.where(level == action[:, None], log_p, 0.0), axis=1)


@triton.jit
def _tile(logits_ptr, logits_stride, row, rows, first, component, LEVELS: tl.constexpr, ALIGN: tl.constexpr,
          ROW_ENTRIES: tl.constexpr):
    """Columns ``first``.. ``first + ALIGN`` of a block of rows (``logits_stride`` entries apart, of which
    ROW_ENTRIES may be read) as float32[rows, ALIGN], -inf outside the component and 0 past the last row; each
    column's level [ALIGN] and whether it is the component's."""
    column = first + tl.arange(0, ALIGN)
    level = column - component * LEVELS
    inside = (level >= 0) & (level < LEVELS)
    logits = tl.load(logits_ptr + row[:, None].to(tl.int64) * logits_stride + column[None, :],
                     mask=(row[:, None] < rows) & (column[None, :] < ROW_ENTRIES), other=0.0).to(tl.float32)
    return tl.where(inside[None, :], logits, float("-inf")), level, inside


@triton.jit
def _normalizer(logits_ptr, logits_stride, row, rows, component, LEVELS: tl.constexpr, ALIGN: tl.constexpr,
                ROW_ENTRIES: tl.constexpr, FAST: tl.constexpr):
    """A component's largest logit float32[rows] and the log of its exponentials' sum with the largest taken out: a
    pass over its tiles for the largest, one for the sum (a thread holds a row: its sums cross no lanes, and the
    tiles' second reads come from the cache)."""
    largest = tl.full(row.shape, float("-inf"), tl.float32)
    for first in tl.static_range(component * LEVELS // ALIGN * ALIGN, (component + 1) * LEVELS, ALIGN):
        logits, _, _ = _tile(logits_ptr, logits_stride, row, rows, first, component, LEVELS, ALIGN, ROW_ENTRIES)
        largest = tl.maximum(largest, tl.max(logits, axis=1))
    total = tl.zeros(row.shape, tl.float32)
    for first in tl.static_range(component * LEVELS // ALIGN * ALIGN, (component + 1) * LEVELS, ALIGN):
        logits, _, _ = _tile(logits_ptr, logits_stride, row, rows, first, component, LEVELS, ALIGN, ROW_ENTRIES)
        total += tl.sum(_exp(logits - largest[:, None], FAST), axis=1)
    return largest, tl.log(total)


@triton.jit
def _log_softmax(logits_ptr, logits_stride, row, rows, first, component, largest, log_total, LEVELS: tl.constexpr,
                 ALIGN: tl.constexpr, ROW_ENTRIES: tl.constexpr, FAST: tl.constexpr):
    """A tile of a component's log-softmax float32[rows, ALIGN] and its probabilities (both 0 outside the
    component), and its columns' levels [ALIGN]; from ``_normalizer``'s two, subtracted one after the other as
    the formulas do (their sum would round the log to the largest logit's last place)."""
    logits, level, inside = _tile(logits_ptr, logits_stride, row, rows, first, component, LEVELS, ALIGN, ROW_ENTRIES)
    log_p = tl.where(inside[None, :], logits - largest[:, None] - log_total[:, None], 0.0)
    return log_p, tl.where(inside[None, :], _exp(log_p, FAST), 0.0), level


@triton.jit
def categorical_terms(logits_ptr, logits_stride, actions_ptr, log_prob_ptr, entropy_ptr, rows,
                      COMPONENTS: tl.constexpr, LEVELS: tl.constexpr, ALIGN: tl.constexpr, ROW_ENTRIES: tl.constexpr,
                      BLOCK_ROWS: tl.constexpr, FAST: tl.constexpr):
    """logits float[rows, COMPONENTS * LEVELS] (any float dtype; its rows ``logits_stride`` entries apart, of which
    ROW_ENTRIES may be read), actions int32[rows, COMPONENTS] -> log_prob and entropy float32[rows]; program i
    takes rows i * BLOCK_ROWS.., a component's columns in tiles of ALIGN from its first rounded down to a multiple
    of ALIGN (on rows padded to 16 bytes, a tile is 16 bytes: one load); FAST, on a GPU: ``_exp``."""
    row = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    log_prob = tl.zeros((BLOCK_ROWS,), tl.float32)
    entropy = tl.zeros((BLOCK_ROWS,), tl.float32)
    for component in tl.static_range(COMPONENTS):
        action = tl.load(actions_ptr + row.to(tl.int64) * COMPONENTS + component, mask=row < rows, other=0)
        largest, log_total = _normalizer(logits_ptr, logits_stride, row, rows, component, LEVELS, ALIGN,
                                         ROW_ENTRIES, FAST)
        for first in tl.static_range(component * LEVELS // ALIGN * ALIGN, (component + 1) * LEVELS, ALIGN):
            log_p, p, level = _log_softmax(logits_ptr, logits_stride, row, rows, first, component, largest,
                                           log_total, LEVELS, ALIGN, ROW_ENTRIES, FAST)
            log_prob += tl.sum(tl.where(level[None, :] == action[:, None], log_p, 0.0), axis=1)
            entropy -= tl.sum(p * log_p, axis=1)
    tl.store(log_prob_ptr + row, log_prob, mask=row < rows)
    tl.store(entropy_ptr + row, entropy, mask=row < rows)


@triton.jit
def categorical_terms_backward(log_prob_gradient_ptr, entropy_gradient_ptr, logits_ptr, logits_stride, actions_ptr,
                               gradient_ptr, gradient_stride, rows, COMPONENTS: tl.constexpr, LEVELS: tl.constexpr,
                               ALIGN: tl.constexpr, ROW_ENTRIES: tl.constexpr, BLOCK_ROWS: tl.constexpr,
                               FAST: tl.constexpr):
    """The gradient at the logits, in their dtype at ``gradient_ptr`` (rows ``gradient_stride`` entries apart), from
    the gradients float32[rows] of ``categorical_terms``' log_prob and entropy: a component's entropy in a pass
    over its tiles, then its gradient in another. Rows padded (ALIGN > 1: ``gradient_width``'s) take whole tiles,
    16 bytes a store, their padding 0 (a tile two components share is stored once both have added their part:
    outside its component a tile's gradient is 0); other rows an entry a store."""
    row = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    log_prob_gradient = tl.load(log_prob_gradient_ptr + row, mask=row < rows, other=0.0)[:, None]
    entropy_gradient = tl.load(entropy_gradient_ptr + row, mask=row < rows, other=0.0)[:, None]
    shared = tl.zeros((BLOCK_ROWS, ALIGN), tl.float32)
    for component in tl.static_range(COMPONENTS):
        action = tl.load(actions_ptr + row.to(tl.int64) * COMPONENTS + component, mask=row < rows, other=0)
        largest, log_total = _normalizer(logits_ptr, logits_stride, row, rows, component, LEVELS, ALIGN,
                                         ROW_ENTRIES, FAST)
        entropy = tl.zeros((BLOCK_ROWS,), tl.float32)
        for first in tl.static_range(component * LEVELS // ALIGN * ALIGN, (component + 1) * LEVELS, ALIGN):
            log_p, p, _ = _log_softmax(logits_ptr, logits_stride, row, rows, first, component, largest,
                                       log_total, LEVELS, ALIGN, ROW_ENTRIES, FAST)
            entropy -= tl.sum(p * log_p, axis=1)
        for first in tl.static_range(component * LEVELS // ALIGN * ALIGN, (component + 1) * LEVELS, ALIGN):
            log_p, p, level = _log_softmax(logits_ptr, logits_stride, row, rows, first, component, largest,
                                           log_total, LEVELS, ALIGN, ROW_ENTRIES, FAST)
            taken = tl.where(level[None, :] == action[:, None], 1.0, 0.0)
            gradient = log_prob_gradient * (taken - p) - entropy_gradient * p * (log_p + entropy[:, None])
            column = first + tl.arange(0, ALIGN)
            at = gradient_ptr + row[:, None].to(tl.int64) * gradient_stride + column[None, :]
            if ALIGN == 1:
                tl.store(at, gradient.to(gradient_ptr.dtype.element_ty),
                         mask=(row[:, None] < rows) & (level[None, :] >= 0) & (level[None, :] < LEVELS))
            else:
                if first < component * LEVELS:  # the previous component's part in it
                    gradient += shared
                if first + ALIGN > (component + 1) * LEVELS and component + 1 < COMPONENTS:
                    shared = gradient
                else:
                    tl.store(at, gradient.to(gradient_ptr.dtype.element_ty), mask=row[:, None] < rows)
