"""The Triton kernel of ``discounted_scan.discounted_scan``; Triton's interpreter runs it on a CPU with
``TRITON_INTERPRET=1`` set before Triton is imported (tests/interpret_discounted_scan.py)."""

import triton
import triton.language as tl


@triton.jit
def discounted_scan(delta_ptr, decay_ptr, advantages_ptr, steps, columns, BLOCK: tl.constexpr):
    """delta, decay float32[T, C] -> advantages float32[T, C], back to front over T; program i
    takes columns i * BLOCK.."""
    column = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    kept = column < columns
    running = tl.zeros((BLOCK,), tl.float32)
    for back in range(steps):
        at = (steps - 1 - back).to(tl.int64) * columns + column
        running = tl.load(decay_ptr + at, mask=kept, other=0.0) * running + tl.load(delta_ptr + at, mask=kept,
                                                                                     other=0.0)
        tl.store(advantages_ptr + at, running, mask=kept)
