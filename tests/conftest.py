"""Test setup: without a GPU, Numba's CUDA simulator runs the kernels on the CPU.

The simulator must be chosen before numba is first imported, so it happens here.
Tests marked ``gpu`` are skipped unless a real CUDA GPU is present; tests marked ``slow`` (ten
seconds or more on two cores) start first, the longest first.
"""

import os

# Inductor compiles in each test process itself: the suite's processes already take every core, and a pool of
# compiling processes in each (torch imported again in every one) only added its start (the slow compile tests:
# 2 min 32 s on two cores, 2 min 2 s without).
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

import pytest  # noqa: E402  (after the compile setting)
import torch  # noqa: E402

if "NUMBA_ENABLE_CUDASIM" not in os.environ and not torch.cuda.is_available():
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

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
