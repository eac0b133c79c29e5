"""The clamping rule of continuous actions, in NumPy and as a CUDA device function alike.

A value below its component's low bound, NaN and -inf give the low bound; a value above the
high bound and inf give the high bound. (``min(max(v, low), high)`` would not do: CUDA's
``max`` returns the number when one operand is NaN, NumPy's returns NaN.)
"""

import numpy as np
from numba import cuda


def clamp(values: np.ndarray, low, high) -> np.ndarray:
    """float32 ``values`` within [low, high], by the rule above."""
    low, high = np.float32(low), np.float32(high)
    return np.where(values >= low, np.minimum(values, high), low).astype(np.float32)


@cuda.jit(device=True)
def clamp_device(value, low, high):
    """One float32 ``value`` within [low, high], by the rule above; twin of ``clamp``."""
    if not value >= low:
        return low
    if value > high:
        return high
    return value
