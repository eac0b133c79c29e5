"""Test setup: without a GPU, Numba's CUDA simulator runs the kernels on the CPU.

The simulator must be chosen before numba is first imported, so it happens here.
Tests marked ``gpu`` are skipped unless a real CUDA GPU is present; tests marked ``slow`` (ten
seconds or more on two cores) start first, the longest first.
"""

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    # Without a GPU, inductor compiles its C++ in each test process itself (set before inductor's config is first
    # imported): the suite's processes already take every core, and a pool of compiling processes in each, torch
    # imported again in every one, only added its start (the slow compile tests: 2 min 32 s on two cores, 2 min
    # 2 s without). A GPU's machine keeps its pool for the Triton kernels of the GPU tests.
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

from warpsim.device import gpu_available  # noqa: E402  (after the simulator choice)


def expected_seconds(item) -> float:
    """How long a test takes on two cores, as its ``slow`` marker says (``slow(seconds=N)``; ten seconds
    without N), and 0 for a test not marked ``slow``."""
    marker = item.get_closest_marker("slow")
    return 0 if marker is None else marker.kwargs.get("seconds", 10)


def pytest_collection_modifyitems(config, items):
    # The longest tests first: the processes then share out the short ones while those run, and
    # none is left alone with a long test at the end.
    items.sort(key=expected_seconds, reverse=True)
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none found; kernels run on the simulator)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
