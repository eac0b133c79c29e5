"""Index arithmetic of warpsim.kernels.indexing: 32-bit unsigned division, the same as //."""

import numpy as np
import pytest
from helpers import KERNEL_TARGETS, require_target
from numba import cuda

from warpsim.kernels.indexing import agent_of_thread, quotient


@cuda.jit
def divide(a, b, out):
    """a, b int64[M]; out int32[M]."""
    k = cuda.grid(1)
    if k < a.shape[0]:
        out[k] = quotient(a[k], b[k])


@cuda.jit
def split(num_agents, env_out, agent_out):
    """num_agents int32; env_out, agent_out int32[M]."""
    k = cuda.grid(1)
    if k < env_out.shape[0]:
        e, i = agent_of_thread(num_agents)
        env_out[k] = e
        agent_out[k] = i


@pytest.mark.parametrize("target", KERNEL_TARGETS)
def test_quotient_is_floor_division_for_dividends_up_to_two_to_the_32(target):
    require_target(target)
    a = np.array([0, 7, 109, 110, 2**31 - 1, 2**31, 2**31 + 5, 2**32 - 1, 2**32 - 1], np.int64)
    b = np.array([3, 7, 110, 110, 1000, 3, 2**31, 3, 2**32 - 1], np.int64)
    out = np.full(a.shape, -1, np.int32)
    divide[1, 32](a, b, out)
    assert out.tolist() == (a // b).astype(np.int32).tolist()


@pytest.mark.parametrize("target", KERNEL_TARGETS)
def test_agent_of_thread_splits_the_flattened_index(target):
    require_target(target)
    env_out, agent_out = (np.full(3 * 110 + 5, -1, np.int32) for _ in range(2))
    split[3, 128](np.int32(110), env_out, agent_out)
    index = np.arange(env_out.size)
    assert env_out.tolist() == (index // 110).tolist() and agent_out.tolist() == (index % 110).tolist()
