"""Environments a chunk at a time, for the NumPy references.

A pairwise quantity (agents x agents, agents x landmarks) of every environment at once takes
E x N x M values: gigabytes at a thousand agents, enough to have the process killed. References
compute it a chunk of environments at a time instead. Environments never read each other's
state, so the chunks give the same bits as one pass.
"""

from collections.abc import Iterator

import numpy as np

PAIRWISE_CHUNK = 1 << 22
"""Most pairwise entries (environments x rows x columns) a reference holds at once."""


def env_chunks(envs: np.ndarray, rows: int, columns: int) -> Iterator[np.ndarray]:
    """``envs`` (int64[R]) in consecutive chunks of at least one environment, each chunk x ``rows`` x
    ``columns`` within PAIRWISE_CHUNK."""
    size = max(1, PAIRWISE_CHUNK // max(1, rows * columns))
    for start in range(0, len(envs), size):
        yield envs[start:start + size]


def pairwise_entries(num_envs: int, rows: int, columns: int) -> int:
    """The most pairwise entries one chunk of ``env_chunks`` holds, of ``num_envs`` environments."""
    return min(num_envs * rows * columns, max(rows * columns, PAIRWISE_CHUNK))
