"""Counting what a training iteration launches on the device at hand, with no GPU needed: kernels, the bytes
they read and write, and the multiply-adds of warpsim's networks' kernels (``Counter``). The fused path's compiled
regions are counted from the code inductor writes for them (warpsim.bench.region_counts).
benchmarks/iteration_cost.py's cost model is made of these counts.

Counted eagerly: every aten operation that launches a kernel on a GPU (views, allocations and metadata launch none;
a foreach operation one for its list, or one per tensor where a list broadcasts: ``foreach_launches``), and the
bytes it reads and writes: its tensors' sizes, an expanded input counted once; the environments' own step is left
out.

A gathering operation (``GATHERS``) reads of its source only the rows it gathers: a minibatch step
reads its minibatch of the rollout, not the whole rollout.

Bytes do not show what a matrix product costs when a matrix's rows are not 16-byte aligned: cuBLAS then runs
kernels that load an element at a time (on an H200 at warpsim c4ea203, train-ref's first layers on rows of 71
bfloat16 inputs took 0.56 ms of an optimizer step in such kernels, where their bytes at the copy bandwidth take
about 0.16 ms). The products with such an operand are counted apart (``unaligned_products``).
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

from warpsim.train import fused_backward, fused_loss

FREE = {"view", "_unsafe_view", "reshape", "transpose", "t", "permute", "expand", "select", "slice", "unsqueeze",
        "squeeze", "split", "split_with_sizes", "unbind", "chunk", "narrow", "as_strided", "detach", "alias",
        "lift_fresh", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "resize_",
        "_local_scalar_dense", "is_nonzero", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "unfold",
        "view_as_real", "_reshape_alias", "diagonal", "movedim", "flatten", "unflatten", "expand_as", "view_as",
        "tensor_split"}
"""Operations that launch no kernel: views, allocations and reads of metadata."""
EXTERN_KERNELS = {"mm", "bmm", "addmm", "baddbmm", "matmul", "linear", "actor_critic", "actor_critic_sample",
                  "actor_critic_backward", "categorical_terms", "categorical_terms_backward"}
"""Operations a compiled region calls as they are, inductor fusing nothing into them: the matrix products
and warpsim's own kernels (the networks', ``fused_forward.actor_critic``, the rollout's ``actor_critic_sample``
and the gradients, and the loss's ``categorical_terms`` both ways). Each moves its operands, its inputs and its
outputs; but see ``OWN_LAUNCHERS``."""
NETWORK_KERNELS = {"actor_critic", "actor_critic_sample", "actor_critic_backward", "ppo_loss_gradients"}
"""warpsim's networks' kernels, whose multiply-adds are counted (``network_multiply_adds``)."""
OWN_LAUNCHERS = {"actor_critic_backward", "ppo_loss_gradients", "gradient_norms"}
"""warpsim's operations that launch several kernels on a GPU (``fused_backward.launch_backward``,
``fused_loss.launch``, ``gradient_norms.launch``): counted as that launcher runs them, its Triton kernel's launches
recorded (``RecordedKernel``) and its torch operations counted, rather than as one kernel of its operands."""
FOREACH_NORM_LAUNCHES = 3
"""Kernels of torch's multi-tensor norm on a GPU: a fill of its partial sums, a pass over the list and one
that finishes the sums."""
BIAS_COPIES = {"baddbmm"}
"""Batched products with an addend (a bias) that aten first copies into their output (broadcast), for cuBLAS to read
back and add (its beta): a kernel more, which writes the output once, and the product reads it once more. On an
H200 at warpsim 536d8d6 six of them took 0.25 ms of the fused update's 2.77 ms an optimizer step (``direct_copy``)."""
GATHERS = {"index", "index_select", "gather", "take", "embedding"}
"""Operations that read of their first input only the rows they gather (a minibatch of the rollout)."""
PRODUCTS = {"mm", "bmm", "addmm", "baddbmm"}
"""The matrix products, whose operands' alignment is checked (``aligned_matrix``)."""
FILLS = {"uniform_", "normal_", "random_", "exponential_", "bernoulli_", "fill_", "zero_"}
"""In-place operations that write their first input without reading it (a random draw into a buffer: ``rand``
with ``out``)."""



def touched_bytes(tensor: torch.Tensor) -> int:
    """Bytes an operation reads or writes of ``tensor``: each element once, an expanded one once."""
    if tensor.device.type == "meta":
        return 0
    elements = tensor.numel()
    if any(stride == 0 for stride, size in zip(tensor.stride(), tensor.shape) if size > 1):
        elements = min(elements, tensor.untyped_storage().nbytes() // tensor.element_size())
    return elements * tensor.element_size()


def aligned_matrix(tensor: torch.Tensor) -> bool:
    """Whether a product's operand float[..., M, N] is what cuBLAS's vectorised kernels read: a unit stride along
    one of its last two dimensions, and its start and every row along the other 16-byte aligned (a vector, a
    broadcast bias, and a scalar are)."""
    if tensor.dim() < 2 or 1 in tensor.shape[-2:]:
        return True
    rows, columns = tensor.stride()[-2:]
    if columns == 1:
        leading = rows
    elif rows == 1:
        leading = columns
    else:
        return False
    return all(count * tensor.element_size() % 16 == 0 for count in (leading, tensor.storage_offset()))


def tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [tensor for item in value for tensor in tensors(item)]
    if isinstance(value, dict):
        return [tensor for item in value.values() for tensor in tensors(item)]
    return []


def network_multiply_adds(name: str, args: tuple) -> int:
    """The multiply-adds of warpsim's networks' kernels on these arguments: ``actor_critic``'s forward pass
    (each trunk's layers, then both heads; ``actor_critic_sample``'s the same), or ``actor_critic_backward``'s
    gradients as its whole-trunk launches compute them (the trunks again, the features' gradients and each
    head's, each layer's weight's and the gradients below each further layer), and ``ppo_loss_gradients``' those
    and the heads again, whose outputs the loss takes (launched ``in_forward``, ``fused_loss.IN_FORWARD``: the trunks
    once more, in the forward kernel that computes the loss). Every row of the observations as the kernels take them,
    their padding included."""
    trunks, heads, below = _per_row(name, args)
    per_row = trunks + heads
    if name in ("actor_critic_backward", "ppo_loss_gradients"):
        per_row += heads + below
    if name == "ppo_loss_gradients":
        per_row += trunks + heads if fused_loss.IN_FORWARD else heads
    return _rows(name, args) * per_row


def _operands(name: str, args: tuple) -> tuple:
    """``actor_critic``'s operands within a networks' operation's arguments (a shared trunk's flag last)."""
    return args[2:] if name == "actor_critic_backward" else (args[0], *args[10:], False) \
        if name == "ppo_loss_gradients" else args


def _rows(name: str, args: tuple) -> int:
    """The rows a networks' operation computes, over its runs: for ``ppo_loss_gradients`` the minibatch's of the
    rollout's observations."""
    runs, rows, _ = _operands(name, args)[0].shape
    return runs * (args[1].shape[1] if name == "ppo_loss_gradients" else rows)


def _per_row(name: str, args: tuple) -> tuple[int, int, int]:
    """A row's multiply-adds of the trunks' layers, of the policy head and the value's column, and of the gradients of
    the trunks' weights and of what lies below their further layers."""
    observations, weight, hidden_weights, policy_weight, shared = (_operands(name, args)[index]
                                                                   for index in (0, 1, 3, 9, 13))
    hidden, further, trunks = weight.shape[1], hidden_weights.shape[1], 1 if shared else 2
    trunk = trunks * (observations.shape[-1] * hidden + further * hidden * hidden)
    return trunk, (policy_weight.shape[1] + 1) * hidden, trunk + trunks * further * hidden * hidden


def loss_forward_multiply_adds(name: str, args: tuple) -> int:
    """Of ``network_multiply_adds``, those of ``ppo_loss_gradients``' forward kernel, launched ``in_forward``
    (``fused_loss.IN_FORWARD``; none otherwise): the trunks and the heads once."""
    if name != "ppo_loss_gradients" or not fused_loss.IN_FORWARD:
        return 0
    trunks, heads, _ = _per_row(name, args)
    return _rows(name, args) * (trunks + heads)


@dataclass
class Tally:
    kernels: int = 0
    bytes: int = 0
    extern_bytes: int = 0
    network_multiply_adds: int = 0
    """Of warpsim's networks' kernels (``network_multiply_adds``)."""
    gradient_multiply_adds: int = 0
    """Of those, the gradients' kernels'."""
    launched_within: int = 0
    """Kernels that operations called as they are launch beyond one each (``OWN_LAUNCHERS``, ``BIAS_COPIES``)."""
    unaligned_products: int = 0
    """Matrix products of which an operand is not ``aligned_matrix``."""
    unaligned_bytes: int = 0
    """The bytes those read and write."""
    by_op: collections.Counter = field(default_factory=collections.Counter)

    def add(self, other: Tally) -> None:
        self.kernels += other.kernels
        self.bytes += other.bytes
        self.extern_bytes += other.extern_bytes
        self.network_multiply_adds += other.network_multiply_adds
        self.gradient_multiply_adds += other.gradient_multiply_adds
        self.launched_within += other.launched_within
        self.unaligned_products += other.unaligned_products
        self.unaligned_bytes += other.unaligned_bytes
        self.by_op.update(other.by_op)


class RecordedKernel:
    """Stands for one of the gradients' Triton kernels (``actor_critic_backward_kernel``) while their
    launcher runs on the CPU: each launch counts one kernel, whose programs of each block of inputs read
    the observations, the head's gradients and the trunk's and head's weights once, and which writes its
    partial sums: of one layer's weight and bias (``fused_actor_critic_backward``) or of the whole
    trunk's and its head's (``fused_trunk_backward``); with the loss computed in it (LOSS), the columns its head's
    loss reads in place of the head's gradient, and it writes its part of the statistics too; on rows picked
    (PICKED, which LOSS needs), the minibatch's rows of the rollout's observations and its indices of them."""

    def __init__(self, kernel, tally: Tally):
        self.arg_names, self.tally = kernel.arg_names, tally

    def __getitem__(self, grid: tuple[int, int, int]):
        def launch(*args, **constants) -> None:
            named = dict(zip(self.arg_names, args))
            trunk_and_head = ["weight_ptr", "bias_ptr", "hidden_weights_ptr", "hidden_biases_ptr", "head_weight_ptr"]
            value = ["value_weight_ptr", "value_gradient_ptr"] if constants["WITH_VALUE"] else []
            programs, runs, input_blocks = grid
            observations = named["observations_ptr"]
            observation_bytes = touched_bytes(observations)
            if constants.get("LOSS"):  # the head's loss: from the minibatch's columns that it reads
                loss = (["old_values_ptr"] if constants["VALUE_CLIP"] else []) + ["returns_ptr"] \
                    if constants["OUTPUTS"] == 1 else ["actions_ptr", "old_log_probs_ptr", "advantages_ptr"]
                read = [*trunk_and_head, "head_bias_ptr", *loss]
            else:
                read = [*trunk_and_head, "head_gradient_ptr", *value]
            if constants.get("PICKED"):  # the minibatch's rows of the rollout's observations, where they lie
                read.append("picks_ptr")
                observation_bytes = named["picks_ptr"].numel() * observations.shape[-1] * observations.element_size()
            if "target_out" in named:  # one layer's weight and bias
                summed = named["target_out"] * named["target_in"] + named["target_out"]
            else:  # the trunk's, its head's (its bias: OUTPUTS) and, with the value, the value's column's
                summed = sum(named[name].numel() for name in trunk_and_head) // runs + constants["OUTPUTS"]
                summed += named["value_weight_ptr"].numel() // runs + 1 if value else 0
            self.tally.kernels += 1
            summed += fused_loss.STATISTIC_SLOTS if constants.get("LOSS") else 0
            self.tally.bytes += input_blocks * (observation_bytes + sum(touched_bytes(named[name]) for name in read)) \
                + runs * programs * summed * 4
            self.tally.by_op["actor_critic_backward_kernel"] += 1
        return launch


class RecordedLossForward:
    """Stands for ``ppo_loss_kernel.ppo_loss_forward`` while ``fused_loss.launch`` runs on the CPU ``in_forward``: each
    launch counts one kernel, which reads the minibatch's rows of the rollout's observations, its indices of them,
    the networks' weights once and the columns the loss reads, and writes the heads' outputs' gradients and its
    programs' parts of the statistics."""

    def __init__(self, kernel, tally: Tally):
        self.arg_names, self.tally = kernel.arg_names, tally

    def __getitem__(self, grid: tuple[int, int]):
        def launch(*args, **constants) -> None:
            named = dict(zip(self.arg_names, args))
            observations, picks = named["observations_ptr"], named["picks_ptr"]
            columns = ["actions_ptr", "old_log_probs_ptr", "advantages_ptr", "returns_ptr", "coefficients_ptr"]
            columns += ["old_values_ptr"] if constants["VALUE_CLIP"] else []
            read = [name for name in self.arg_names if name.endswith(("weight_ptr", "weights_ptr", "bias_ptr",
                                                                      "biases_ptr"))] + columns + ["picks_ptr"]
            written = ["policy_gradient_ptr", "value_gradient_ptr", "statistics_ptr"]
            self.tally.kernels += 1
            self.tally.bytes += picks.numel() * observations.shape[-1] * observations.element_size() \
                + sum(touched_bytes(named[name]) for name in read + written)
            self.tally.by_op["ppo_loss_forward_kernel"] += 1
        return launch


class Counter(TorchDispatchMode):
    """Counts kernels and bytes of the aten operations run inside it (``tally``)."""

    def __init__(self):
        super().__init__()
        self.tally = Tally()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if name in NETWORK_KERNELS:
            computed = network_multiply_adds(name, args)
            self.tally.network_multiply_adds += computed
            if name in ("actor_critic_backward", "ppo_loss_gradients"):
                self.tally.gradient_multiply_adds += computed - loss_forward_multiply_adds(name, args)
        if name in OWN_LAUNCHERS:
            launched = launcher_tally(name, args)
            self.tally.add(launched)
            self.tally.extern_bytes += launched.bytes
            self.tally.launched_within += launched.kernels - 1
        elif name not in FREE:
            inputs = tensors(args) + tensors(kwargs)
            read = [touched_bytes(t) for t in inputs]
            if name in GATHERS and inputs:  # the rows gathered, not the whole source
                read[0] = min(read[0], sum(touched_bytes(t) for t in tensors(result)))
            if name in FILLS:
                read[0] = 0
            # An in-place operation that returns nothing (a foreach one) writes its first argument.
            written = tensors(result) or (tensors(args[0]) if name.endswith("_") else [])
            moved = sum(read) + sum(touched_bytes(t) for t in written)
            if name in BIAS_COPIES:
                moved += 2 * touched_bytes(result)
                self.tally.kernels += 1
                self.tally.launched_within += 1
            self.tally.kernels += foreach_launches(name, args) if name.startswith("_foreach_") else 1
            self.tally.bytes += moved
            self.tally.by_op[name] += 1
            if name in EXTERN_KERNELS:
                self.tally.extern_bytes += moved
            if name in PRODUCTS and not all(aligned_matrix(t) for t in [*inputs, *written]):
                self.tally.unaligned_products += 1
                self.tally.unaligned_bytes += moved
        return result


def foreach_launches(name: str, args: tuple) -> int:
    """The kernels of an eager foreach operation on a GPU: one for its whole list, torch's multi-tensor pass,
    where every list it takes has the first one's shapes (``FOREACH_NORM_LAUNCHES`` for a norm); one per tensor
    where one broadcasts, as Adam's per-run rates do. (A list of more than about a hundred tensors takes a pass
    per hundred.)"""
    shapes = [tensor.shape for tensor in args[0]]
    lists = [arg for arg in args[1:] if isinstance(arg, (list, tuple)) and arg and isinstance(arg[0], torch.Tensor)]
    if any([tensor.shape for tensor in listed] != shapes for listed in lists):
        return len(shapes)
    return FOREACH_NORM_LAUNCHES if name == "_foreach_norm" else 1


def launcher_tally(name: str, args: tuple) -> Tally:
    """The kernels and bytes of ``OWN_LAUNCHERS``' ``name`` on these arguments on a GPU."""
    if name == "gradient_norms":
        from warpsim.train import gradient_norms

        counter = Counter()
        with counter:
            gradient_norms.launch(*args)
        return counter.tally
    return backward_tally(name, args)


def backward_tally(name: str, args: tuple) -> Tally:
    """The kernels and bytes of ``fused_backward.launch_backward`` (``name`` actor_critic_backward) or of
    ``fused_loss.launch`` (ppo_loss_gradients) on these arguments on a GPU: its Triton kernel's launches recorded,
    its torch operations counted. Its partial sums are as many as at a real size, where every run has more blocks
    of rows than programs: a fixed part, not one per block."""
    from unittest import mock

    from warpsim.train import actor_critic_backward_kernel, ppo_loss_kernel

    counter = Counter()
    with contextlib.ExitStack() as patched:
        for kernel_name in ("fused_actor_critic_backward", "fused_trunk_backward"):
            kernel = getattr(actor_critic_backward_kernel, kernel_name)
            patched.enter_context(mock.patch.object(actor_critic_backward_kernel, kernel_name,
                                                    RecordedKernel(kernel, counter.tally)))
        patched.enter_context(mock.patch.object(ppo_loss_kernel, "ppo_loss_forward",
                                                RecordedLossForward(ppo_loss_kernel.ppo_loss_forward, counter.tally)))
        with counter:
            # args: the aten call's tuple
            launch: Callable[..., object] = fused_backward.launch_backward if name == "actor_critic_backward" \
                else fused_loss.launch
            observations = args[2] if name == "actor_critic_backward" else args[0]
            launch(*args, programs=max(1, fused_backward.PARTIAL_SUMS // observations.shape[0]))
    return counter.tally


def uncounted(function):
    """``function``, run with the counters paused."""
    def run(*args, **kwargs):
        with _disable_current_modes():
            return function(*args, **kwargs)
    return run
