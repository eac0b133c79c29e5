"""The K nearest agents in the game, in NumPy: the neighbour search of partial observations.

Selection is O(N) per agent (a partition) instead of a full sort: each candidate gets
one unique int64 key, the bits of its squared distance in the high word and its id in
the low word. The bits of a non-negative float32 order like its value, so the keys
order by distance and then by lower id, exactly the tie rule of partial observations
(docs/tag_rules.md section 1), and no partition ever has to break a tie.
"""

from __future__ import annotations

import numpy as np

KEYS_PER_CHUNK = 1 << 16
"""Most pairwise keys (environments x N x N) built at once: 512 KiB, so a chunk's
passes stay in the CPU cache (measured up to 2x faster than one pass over E=256, N=110)."""

_INFINITY = np.float32(np.inf)
_INFINITY_BITS = int(_INFINITY.view(np.int32))
_ID_BITS = 32
_ID_MASK = (1 << _ID_BITS) - 1


def nearest_in_game(loc_x: np.ndarray, loc_y: np.ndarray, in_game: np.ndarray,
                    num_observed: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``num_observed`` (K) nearest other agents in the game, nearest first, lower id on a tie.

    loc_x, loc_y: float32[C, N]; in_game: bool[C, N]. Returns ``(ids, found)``:
    int64[C, N, K] agent ids and bool[C, N, K]. A slot is not found where fewer than
    K others are in the game, and no slot of an agent out of the game is; a slot not
    found holds the observer's own id, so features relative to it come out 0.
    """
    num_envs, n = loc_x.shape
    # An agent out of the game sits at x = inf: its squared distance to anyone is inf.
    candidate_x = np.where(in_game, loc_x, _INFINITY)
    ids = np.empty((num_envs, n, num_observed), np.int64)
    found = np.empty((num_envs, n, num_observed), bool)
    size = max(1, KEYS_PER_CHUNK // (n * n))
    for start in range(0, num_envs, size):
        chunk = slice(start, start + size)
        keys = _smallest_keys(candidate_x[chunk], loc_x[chunk], loc_y[chunk], num_observed)
        np.bitwise_and(keys, _ID_MASK, out=ids[chunk])
        np.less(keys >> _ID_BITS, _INFINITY_BITS, out=found[chunk])
    found &= in_game[:, :, None]
    np.copyto(ids, np.arange(n)[:, None], where=~found)
    return ids, found


def _smallest_keys(candidate_x, loc_x, loc_y, num_observed) -> np.ndarray:
    """int64[C, N, K]: the K smallest keys of each observer, ascending."""
    num_envs, n = loc_x.shape
    distance_squared = candidate_x[:, None, :] - loc_x[:, :, None]
    dy = loc_y[:, None, :] - loc_y[:, :, None]
    np.multiply(distance_squared, distance_squared, out=distance_squared)
    np.multiply(dy, dy, out=dy)
    distance_squared += dy
    distance_squared.reshape(num_envs, n * n)[:, ::n + 1] = _INFINITY  # nobody observes itself
    keys = np.left_shift(distance_squared.view(np.int32), _ID_BITS, dtype=np.int64)
    keys |= np.arange(n)
    keys.partition(num_observed - 1, axis=2)
    keys = keys[:, :, :num_observed]
    keys.sort(axis=2)
    return keys
