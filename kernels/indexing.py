"""Thread-to-work mapping and the integer division of index arithmetic (device code).

Numba computes integers in 64 bits, and a 64-bit division is a long subroutine on a GPU
(PTX ``div.s64``). Indices are non-negative and below 2**32, so :func:`quotient` divides
them as uint32 (one ``div.u32``). Block-strided loops are written as ``while`` loops:
a ``range(start, stop, step)`` with a run-time step divides to count its trips.
"""

import numpy as np
from numba import cuda


@cuda.jit(device=True)
def quotient(a, b):
    """a // b (int32) for 0 <= a < 2**32, 0 < b < 2**32 and a quotient below 2**31, in uint32 arithmetic."""
    return np.int32(np.uint32(a) // np.uint32(b))


@cuda.jit(device=True)
def agent_of_thread(num_agents):
    """(environment, agent) of this thread over the flattened index e * N + i, both int32.

    Threads past the last environment get an environment index >= E: check it.
    """
    index = cuda.grid(1)
    e = quotient(index, num_agents)
    return e, np.int32(index - e * num_agents)
