"""Categorical actions' arithmetic as one kernel: on the fused path the update's loss both ways
(``DifferentiableCategoricalTerms``: the joint log-probability of the taken actions and the joint entropy of
a row's components, and their gradient at the logits); and the rollout's sampling (``sample``: the actions
drawn by their inverse cumulative distributions and their log-probability) in torch, which the rollout's
kernel computes in its registers (``fused_sampling.actor_critic_sample``).

Compiled from autograd, the loss's took about a quarter of an optimizer step on an H200 at train-ref
(warpsim 786d1b8): about a dozen kernels, one of them 0.5 ms for 880,000 rows, over float32 log-softmaxes,
their gradients and the zeros those are scattered into, written and read back, where the logits are 84
bytes a row. Here a row's log-softmax lives in registers: the loss's forward kernel reads the logits and the
actions and writes two floats a row, its backward reads them again with the two gradients and writes the
logits' gradient.

The arithmetic is float32, as ``ppo.split_heads`` and ``ppo.sample`` compute it, whatever the logits'
dtype; the gradient is rounded once, to the logits' dtype. On a CPU the ops are these formulas in torch
(the kernels' reference, which Triton's interpreter checks them against: tests/test_categorical_terms.py);
on a GPU, components of unequal sizes take the same torch formulas.
"""

from __future__ import annotations

import importlib.util

import torch

from warpsim.train import ppo, triton_launch

BLOCK_ROWS = 128
"""Rows of one program of four warps: a row a thread."""


@torch.library.custom_op("warpsim::categorical_terms", mutates_args=())
def categorical_terms(logits: torch.Tensor, actions: torch.Tensor,
                      levels: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(log_prob float32[...], entropy float32[...]): of ``actions`` int[..., A] under independent categorical
    components whose logits lie side by side in ``logits`` float[..., sum(levels)], and their joint entropy."""
    return _terms(logits, actions, levels)


def _terms(logits: torch.Tensor, actions: torch.Tensor, levels: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    log_probs = ppo.split_heads(logits, tuple(levels))
    return ppo.log_prob(log_probs, actions), ppo.entropy(log_probs)


@categorical_terms.register_fake
def _(logits, actions, levels):
    rows = logits.shape[:-1]
    return logits.new_empty(rows, dtype=torch.float32), logits.new_empty(rows, dtype=torch.float32)


@torch.library.custom_op("warpsim::categorical_terms_backward", mutates_args=())
def categorical_terms_backward(log_prob_gradient: torch.Tensor, entropy_gradient: torch.Tensor,
                               logits: torch.Tensor, actions: torch.Tensor, levels: list[int]) -> torch.Tensor:
    """The gradient at ``logits`` [..., C] (in their dtype) of ``categorical_terms``, given its outputs'
    float32[...]: [..., W], rows as wide as the logits' (``gradient_width``), the entries past C 0, so that the
    backward kernel stores whole 16-byte tiles of padded rows; ``DifferentiableCategoricalTerms`` takes the first C.

    Per component, with p its softmax and H its entropy: g_log_prob (onehot(action) - p) - g_entropy p (log p + H)."""
    return _terms_gradient(log_prob_gradient, entropy_gradient, logits, actions, levels)


def _terms_gradient(log_prob_gradient: torch.Tensor, entropy_gradient: torch.Tensor, logits: torch.Tensor,
                    actions: torch.Tensor, levels: list[int]) -> torch.Tensor:
    gradients = []
    for log_p, action in zip(ppo.split_heads(logits, tuple(levels)), actions.unbind(-1)):
        p = log_p.exp()
        entropy = -(p * log_p).sum(-1, keepdim=True)
        taken = torch.nn.functional.one_hot(action.long(), log_p.shape[-1]).to(p.dtype)
        gradients.append(log_prob_gradient[..., None] * (taken - p)
                         - entropy_gradient[..., None] * p * (log_p + entropy))
    gradient = torch.cat(gradients, -1).to(logits.dtype)
    return torch.nn.functional.pad(gradient, (0, gradient_width(logits) - logits.shape[-1]))


def padded_rows(logits: torch.Tensor) -> bool:
    """Whether ``logits`` [..., C] are a slice of rows padded to a multiple of 16 bytes, evenly apart (the fused
    path's networks write them so: ``StackedLinear.aligned``, ``fused_forward.policy_row_entries``): from their
    shape and strides alone, as a fake tensor has them."""
    *leading, entries = logits.shape
    if not leading or logits.stride(-1) != 1 or logits.stride(-2) <= entries:
        return False
    even = all(logits.stride(dim) == logits.stride(dim + 1) * logits.shape[dim + 1] for dim in range(len(leading) - 1))
    return even and logits.stride(-2) * logits.element_size() % 16 == 0


def gradient_width(logits: torch.Tensor) -> int:
    """The entries of a row of ``categorical_terms_backward``'s gradient at ``logits`` [..., C]: as many as a row of
    the logits takes where those are padded (``padded_rows``), C otherwise."""
    return logits.stride(-2) if padded_rows(logits) else logits.shape[-1]


@categorical_terms_backward.register_fake
def _(log_prob_gradient, entropy_gradient, logits, actions, levels):
    return logits.new_empty((*logits.shape[:-1], gradient_width(logits)))


class DifferentiableCategoricalTerms(torch.autograd.Function):
    """``categorical_terms`` with its gradient by ``categorical_terms_backward``; ``apply`` takes
    ``categorical_terms``' arguments. An autograd Function, which ``torch.func.grad`` (the fused update's)
    differentiates."""

    @staticmethod
    def forward(logits, actions, levels):
        return categorical_terms(logits, actions, levels)

    @staticmethod
    def setup_context(ctx, inputs: tuple, output) -> None:
        logits, actions, levels = inputs
        ctx.save_for_backward(logits, actions)
        ctx.levels = levels

    @staticmethod
    def backward(ctx, log_prob_gradient: torch.Tensor, entropy_gradient: torch.Tensor) -> tuple:
        logits, actions = ctx.saved_tensors
        with torch.no_grad():  # once differentiable: torch.func.grad records the backward pass otherwise
            gradient = categorical_terms_backward(log_prob_gradient, entropy_gradient, logits, actions, ctx.levels)
        return gradient[..., :logits.shape[-1]], None, None


def sample(logits: torch.Tensor, uniforms: list[torch.Tensor], levels: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(actions int32[B, A], log_prob float32[B]): one action per component of ``logits`` float[B, sum(levels)]
    by its inverse cumulative distribution at ``uniforms`` (float32[B] per component, ``ppo.uniforms``), as
    ``ppo.sample`` draws them, and their joint log-probability: what the rollout's kernel computes in registers
    (``fused_sampling.actor_critic_sample``), in torch."""
    log_probs = ppo.split_heads(logits, tuple(levels))
    actions = ppo.sample(log_probs, tuple(uniforms))
    return actions, ppo.log_prob(log_probs, actions)


def rows_of(logits: torch.Tensor) -> torch.Tensor:
    """``logits`` [..., C] as [rows, C] with unit stride along a row, as the kernels read them: a view where one
    is, as of a slice of wider rows (the fused path's networks write them so: ``StackedLinear.aligned``), a copy
    otherwise."""
    flat = logits.reshape(-1, logits.shape[-1])
    return flat if flat.stride(-1) == 1 else flat.contiguous()


def read_layout(flat: torch.Tensor) -> dict[str, int]:
    """How the kernels read ``rows_of``' rows: a component's columns in tiles of ALIGN from its first entry rounded
    down to a multiple of ALIGN, of the first ROW_ENTRIES entries of a row. Where the rows are padded to 16-byte
    multiples and the padding lies in the tensor's storage (the fused path's logits: ``StackedLinear.aligned``), a
    tile is 16 bytes of entries, which a thread loads at once, and ROW_ENTRIES the padded row; otherwise a tile is
    an entry, of the row's own."""
    rows, entries = flat.shape
    stride, size = flat.stride(0), flat.element_size()
    padded = (stride * size % 16 == 0 and flat.data_ptr() % 16 == 0 and 16 % size == 0
              and flat.storage_offset() + rows * stride <= flat.untyped_storage().nbytes() // size)
    return {"ALIGN": 16 // size if padded else 1, "ROW_ENTRIES": stride if padded else entries}


def launch(logits: torch.Tensor, actions: torch.Tensor, levels: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """``categorical_terms`` by the Triton kernel (``categorical_terms_kernel``, imported here: a CPU-only
    install may lack Triton) for components of equal sizes, on the logits' device; on a CPU
    (``TRITON_INTERPRET=1``) through Triton's interpreter."""
    from warpsim.train.categorical_terms_kernel import categorical_terms as kernel

    flat, actions = rows_of(logits), actions.contiguous()
    log_prob = logits.new_empty(logits.shape[:-1], dtype=torch.float32)
    entropy = torch.empty_like(log_prob)
    rows = log_prob.numel()
    if rows:
        kernel[(-(-rows // BLOCK_ROWS),)](flat, flat.stride(0), actions, log_prob, entropy, rows,
                                          COMPONENTS=len(levels), LEVELS=levels[0], BLOCK_ROWS=BLOCK_ROWS,
                                          FAST=flat.device.type != "cpu", **read_layout(flat),
                                          **triton_launch.OPTIONS)
    return log_prob, entropy


def launch_backward(log_prob_gradient: torch.Tensor, entropy_gradient: torch.Tensor, logits: torch.Tensor,
                    actions: torch.Tensor, levels: list[int]) -> torch.Tensor:
    """``categorical_terms_backward`` by the Triton kernel, as ``launch``."""
    from warpsim.train.categorical_terms_kernel import categorical_terms_backward as kernel

    flat, actions = rows_of(logits), actions.contiguous()
    layout, width = read_layout(flat), gradient_width(logits)
    # rows read whole tiles at a time are as wide as the gradient's, whose padding the kernel then stores; otherwise
    # it stores the entries alone
    padding = width > logits.shape[-1] and layout["ALIGN"] == 1
    gradient = (logits.new_zeros if padding else logits.new_empty)((*logits.shape[:-1], width))
    rows = log_prob_gradient.numel()
    if rows:
        kernel[(-(-rows // BLOCK_ROWS),)](log_prob_gradient.contiguous(), entropy_gradient.contiguous(), flat,
                                          flat.stride(0), actions, gradient, width, rows,
                                          COMPONENTS=len(levels), LEVELS=levels[0], BLOCK_ROWS=BLOCK_ROWS,
                                          FAST=flat.device.type != "cpu", **layout, **triton_launch.OPTIONS)
    return gradient


def kernels_take(levels: list[int]) -> bool:
    """Whether the kernels take these components: of equal sizes, with Triton installed (a CUDA build of torch
    without it still trains, by the torch formulas)."""
    return len(set(levels)) == 1 and importlib.util.find_spec("triton") is not None


@categorical_terms.register_kernel("cuda")
def _(logits, actions, levels):
    return (launch if kernels_take(levels) else _terms)(logits, actions, levels)


@categorical_terms_backward.register_kernel("cuda")
def _(log_prob_gradient, entropy_gradient, logits, actions, levels):
    return (launch_backward if kernels_take(levels) else _terms_gradient)(log_prob_gradient, entropy_gradient, logits,
                                                                          actions, levels)
