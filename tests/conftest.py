"""Test setup: without a GPU, Numba's CUDA simulator runs the kernels on the CPU.

The simulator must be chosen before numba is first imported, so it happens here.
Tests marked ``gpu`` are skipped unless a real CUDA GPU is present.
"""

import os

import pytest
import torch

if "NUMBA_ENABLE_CUDASIM" not in os.environ and not torch.cuda.is_available():
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

from warpsim.device import gpu_available  # noqa: E402  (after the simulator choice)


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none found; kernels run on the simulator)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
