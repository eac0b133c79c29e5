"""GAE's one sequential part as one kernel (``discounted_scan``): A[t] = delta[t] + decay[t] * A[t+1]
over the steps of a rollout, back to front.

Written as a loop of tensor operations it is two kernels a step, and compiled it is one
kernel whose code grows with the rollout (a 100-step rollout's compiles for tens of seconds).
The Triton kernel here walks the steps in a loop, each program over a block of the batch's
columns, so it compiles once for every rollout length. It multiplies and adds as two roundings,
as the loop does (no fused multiply-add), so it computes the loop's values bit for bit; on a
CPU the loop itself runs, and Triton's interpreter checks the kernel against it
(tests/test_discounted_scan.py).
"""

from __future__ import annotations

import importlib.util

import torch

BLOCK_COLUMNS = 1024
"""Columns of the batch per program: each thread keeps a few running sums."""


@torch.library.custom_op("warpsim::discounted_scan", mutates_args=())
def discounted_scan(delta: torch.Tensor, decay: torch.Tensor) -> torch.Tensor:
    """float32[T, ...] advantages: A[T-1] = delta[T-1] and A[t] = delta[t] + decay[t] * A[t+1], for
    delta and decay float32[T, ...] of one shape."""
    return _loop(delta, decay)


def _loop(delta: torch.Tensor, decay: torch.Tensor) -> torch.Tensor:
    running = torch.zeros_like(delta[0])
    steps = []
    for step_decay, step_delta in zip(decay.unbind(0)[::-1], delta.unbind(0)[::-1]):
        running = step_decay * running + step_delta
        steps.append(running)
    return torch.stack(steps[::-1])


@discounted_scan.register_fake
def _(delta, decay):
    return torch.empty_like(delta, memory_format=torch.contiguous_format)


def launch(delta: torch.Tensor, decay: torch.Tensor) -> torch.Tensor:
    """``discounted_scan`` by the Triton kernel (``discounted_scan_kernel``, imported here: a CPU-only
    install may lack Triton), on delta's device; on a CPU (``TRITON_INTERPRET=1``) through Triton's
    interpreter."""
    from warpsim.train.discounted_scan_kernel import discounted_scan as kernel

    delta, decay = delta.contiguous(), decay.contiguous()
    advantages = torch.empty_like(delta)
    steps, columns = delta.shape[0], delta[0].numel()
    if steps and columns:
        kernel[(-(-columns // BLOCK_COLUMNS),)](delta, decay, advantages, steps, columns, BLOCK=BLOCK_COLUMNS,
                                                enable_fp_fusion=False)
    return advantages


@discounted_scan.register_kernel("cuda")
def _(delta, decay):
    # Without Triton (a CUDA build of torch without it) the eager trainer still runs: the loop's values are the same.
    return launch(delta, decay) if importlib.util.find_spec("triton") else _loop(delta, decay)
