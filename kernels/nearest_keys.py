"""A K-nearest list held in registers: K packed (squared distance, id) keys (device code).

A key is the bits of a float32 squared distance in the high word and the agent's id in
the low word (uint64). The bits of a non-negative float32 order like its value, so keys
order by distance and then by lower id: the tie rule of partial observations (docs/tag_rules.md
section 1) is one integer compare, as in the NumPy reference (envs/tag_continuous/nearest.py).

The list is a ``cuda.local.array(K, np.uint64)`` with K known when the kernel compiles,
ascending, ``EMPTY_KEY`` where nothing is held yet. Every loop over it here has K short
steps and indexes it only by the loop counter, so the compiler unrolls the loops and keeps
the K keys in registers (no local memory; benchmarks/kernel_resources.py shows it). A
caller's own loop that reads ``keys[slot]`` keeps the list in registers only while the
compiler unrolls it (a short body); :func:`pop_nearest` reads it slot by slot at any K.
"""

import numba
import numpy as np
from numba import cuda
from numba.cuda import libdevice

from warpsim.kernels.rounding import squared_distance, sub

EMPTY_KEY = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
"""Greater than every key: its distance bits are those of no float32 a search keeps."""
INFINITY = np.float32(np.inf)
ID_MASK = np.uint64(0xFFFF_FFFF)
ID_BITS = np.uint64(32)

if numba.config.ENABLE_CUDASIM:

    @cuda.jit(device=True)
    def distance_bits(d2):
        """The bits of the non-negative float32 ``d2`` as uint64 (ordered as the values)."""
        return np.uint64(np.float32(d2).view(np.uint32))

else:

    @cuda.jit(device=True)
    def distance_bits(d2):
        """The bits of the non-negative float32 ``d2`` as uint64 (ordered as the values)."""
        return np.uint64(np.uint32(libdevice.float_as_int(d2)))


@cuda.jit(device=True)
def key_of(d2, j):
    """The key of agent (or entity) ``j`` at squared distance ``d2`` (float32 >= 0; j int32 >= 0)."""
    return (distance_bits(d2) << ID_BITS) | np.uint64(j)


@cuda.jit(device=True)
def clear_keys(keys):
    """keys uint64[K]: holds nothing."""
    for slot in range(keys.shape[0]):
        keys[slot] = EMPTY_KEY


@cuda.jit(device=True)
def offer_key(keys, d2, j):
    """Keeps agent ``j`` at squared distance ``d2`` if it is among the K best so far.

    keys uint64[K] ascending; d2 float32 >= 0; j int32 >= 0. An unrolled compare-and-select
    network: each slot keeps the smaller of its key and the one carried down, and passes
    the larger on, so the list stays sorted and the K+1-th falls off the end.
    """
    key = key_of(d2, j)
    if key < keys[keys.shape[0] - 1]:
        for slot in range(keys.shape[0]):
            held = keys[slot]
            keys[slot] = min(held, key)
            key = max(held, key)


@cuda.jit(device=True)
def pop_nearest(keys):
    """Takes the first key off the list (uint64[K]) and returns it; the rest move up one slot.

    Reading slot after slot this way indexes the list only by constants, where ``keys[slot]``
    in a loop too long for the compiler to unroll would put the whole list in local memory.
    """
    nearest = keys[0]
    for slot in range(keys.shape[0] - 1):
        keys[slot] = keys[slot + 1]
    keys[keys.shape[0] - 1] = EMPTY_KEY
    return nearest


@cuda.jit(device=True)
def key_id(key):
    """The agent id (int32) of a key."""
    return np.int32(key & ID_MASK)


@cuda.jit(device=True)
def count_keys(keys):
    """How many keys of the list hold an agent (int32)."""
    found = np.int32(0)
    for slot in range(keys.shape[0]):
        if keys[slot] != EMPTY_KEY:
            found += np.int32(1)
    return found


@cuda.jit(device=True)
def kth_closer_than(keys, bound):
    """Whether the list is full and its K-th squared distance is strictly below ``bound`` (float32 > 0)."""
    return (keys[keys.shape[0] - 1] >> ID_BITS) < distance_bits(bound)


@cuda.jit(device=True)
def nearest_after(floor, qx, qy, xs_e, ys_e, skip):
    """The key (``nearest_keys.key_of``) of the entity of xs_e, ys_e (float32[M]) nearest to (qx, qy) among those
    whose key is at least ``floor``, leaving out index ``skip``; EMPTY_KEY when none is left. Called with each
    key found plus one, it yields the entities nearest first, the lower index first at a tie. As the grid
    searches (warpsim.kernels.neighbours), it finds only entities at a squared distance below inf: none at NaN."""
    best = EMPTY_KEY
    for j in range(xs_e.shape[0]):
        if j != skip:
            d2 = squared_distance(sub(xs_e[j], qx), sub(ys_e[j], qy))
            if d2 < INFINITY:
                key = key_of(d2, j)
                if floor <= key < best:
                    best = key
    return best
