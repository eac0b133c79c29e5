"""GAE's scan as one kernel (``discounted_scan``): its Triton kernel computes what the loop computes,
bit for bit, through Triton's interpreter on the CPU and on a GPU."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from warpsim.train import discounted_scan

INTERPRETER = Path(__file__).with_name("interpret_discounted_scan.py")
SHAPES = [[5, 3, 7], [1, 4], [100, 2, 1030], [3, 0]]
"""A few columns; one step; a last block of 6 columns (past 1024) over a train tier's 100 steps; no columns."""


def test_the_loop_is_the_recurrence():
    delta, decay = torch.tensor([[1.0], [2.0], [3.0]]), torch.tensor([[0.5], [0.0], [0.25]])
    assert discounted_scan.discounted_scan(delta, decay).flatten().tolist() == [1.0 + 0.5 * 2.0, 2.0, 3.0]


def test_the_kernel_computes_as_the_loop_in_tritons_interpreter():
    pytest.importorskip("triton")
    result = subprocess.run([sys.executable, str(INTERPRETER), json.dumps(SHAPES)], capture_output=True, text=True,
                            env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout) == [True] * len(SHAPES)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_the_kernel_computes_as_the_loop_on_a_gpu(shape):
    """Bit for bit: no fused multiply-add, where the loop rounds the product and the sum apart."""
    sys.path.insert(0, str(INTERPRETER.parent))
    from interpret_discounted_scan import operands
    delta, decay = operands(shape, 0)
    on_gpu = discounted_scan.discounted_scan(delta.cuda(), decay.cuda())
    assert torch.equal(on_gpu.cpu(), discounted_scan.discounted_scan(delta, decay))
