"""Each run's 2-norm of each of a list of gradients (``gradient_norms``), the clipping's first step, as one
operation.

Written as a norm per gradient, the update's clipping was a reduction kernel per gradient, two for the
larger ones: 28 of an optimizer step's kernels at train-ref. On a GPU the op is torch's multi-tensor norm
over every run's part of every gradient and one stack of the norms, four kernels for a list of up to about
a hundred parts; on a CPU it is the norms one at a time, the eager arithmetic, bit for bit.
"""

from __future__ import annotations

import torch


@torch.library.custom_op("warpsim::gradient_norms", mutates_args=())
def gradient_norms(gradients: list[torch.Tensor]) -> torch.Tensor:
    """float[R, n]: run r's 2-norm of the n ``gradients`` float[R, ...] (each run's part a row)."""
    return torch.stack([gradient.flatten(1).norm(dim=1) for gradient in gradients], dim=1)


@gradient_norms.register_fake
def _(gradients):
    return gradients[0].new_empty((gradients[0].shape[0], len(gradients)))


def launch(gradients: list[torch.Tensor]) -> torch.Tensor:
    """``gradient_norms`` as a GPU runs it: torch's multi-tensor norm of every run's part of every gradient (a
    fill of its partial sums, one pass over the list, one that finishes the sums) and a stack of the norms."""
    runs = gradients[0].shape[0]
    norms = torch._foreach_norm([gradient[run] for run in range(runs) for gradient in gradients])
    return torch.stack(norms).view(runs, len(gradients))


@gradient_norms.register_kernel("cuda")
def _(gradients):
    return launch(gradients)
