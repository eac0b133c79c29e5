"""Masked-reset bookkeeping shared by every environment."""

import numpy as np
from numba import cuda


@cuda.jit
def count_resets(mask, episode):
    """Advances the episode counter (the RNG counter) of each environment reset.

    mask: bool[E]; episode: int32[E].
    """
    e = cuda.grid(1)
    if e < episode.shape[0] and mask[e]:
        episode[e] += np.int32(1)
