"""Counting a compiled region (``TrainConfig.compile``) as a GPU would run it, with no GPU needed: from the code
inductor writes for it as it writes it for a GPU (``gpu_code``: Triton kernels, generated on the device at hand,
never compiled), its generated kernels and the kernels it calls as they are, matrix products and warpsim's own (the
launches of its wrapper code); its bytes from inductor's count of what its generated kernels read and write, plus
the operands of the kernels it calls, counted eagerly (``kernel_counts.Counter``). On a CPU inductor would write C++
loops, fused far more widely than a GPU's kernels: counted so, train-ref's optimizer step was 46 kernels where an
H200 ran 175.

``CountedRegions`` adds each region's count to an eager counter's; ``eager_regions`` runs the regions eagerly,
compiling nothing, where they run only to set a trainer up (its first iteration, before the counted one).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator

from torch.utils._python_dispatch import _disable_current_modes

from warpsim.bench.kernel_counts import Counter, Tally, tensors
from warpsim.train import compiled

LAUNCH = re.compile(r"^\s+(?:\w+ = )?(extern_kernels\.\w+|\w+\.run|torch\.ops\.\w+\.\w+\.default)\(", re.MULTILINE)
"""A launch in inductor's wrapper code: a matrix product, a Triton kernel or an operation called as it is
(such as warpsim's own kernel)."""


@contextlib.contextmanager
def eager_regions() -> Iterator[None]:
    """Every ``compiled.Compiled`` call runs its eager function: what the compiled code would compute, with no
    code compiled for the device at hand (on a CPU, C++ that would take most of a count's time)."""
    original = compiled.Compiled.__call__
    compiled.Compiled.__call__ = lambda wrapper, *args: wrapper.function(*args)  # type: ignore[method-assign]
    try:
        yield
    finally:
        compiled.Compiled.__call__ = original  # type: ignore[method-assign]


class CountedRegions:
    """While entered, every ``compiled.Compiled`` call adds its region's kernels and bytes to the
    active counter, which is paused while the region runs (eagerly: ``eager_regions``); a region is analysed at
    its first call."""

    def __init__(self, counter: Counter):
        self.counter = counter
        self.regions: dict[tuple, Tally] = {}
        self._original = compiled.Compiled.__call__

    def __enter__(self) -> CountedRegions:
        regions, counter = self.regions, self.counter

        def call(wrapper, *args):
            key = (id(wrapper), tuple(tuple(t.shape) for t in tensors(args)))
            with _disable_current_modes():
                if key not in regions:
                    regions[key] = analyse(wrapper, args)
                result = wrapper.function(*args)
            counter.tally.add(regions[key])
            return result

        compiled.Compiled.__call__ = call  # type: ignore[method-assign]
        return self

    def __exit__(self, *exception) -> None:
        compiled.Compiled.__call__ = self._original  # type: ignore[method-assign]


class _Written(Exception):
    """Stops a compilation once inductor has written its code (``gpu_code``)."""


def gpu_code(function: Callable, args: tuple) -> tuple[str, int]:
    """The wrapper code, kernels included, that inductor writes for ``function(*args)`` (compiled whole, as
    ``compiled.Compiled`` compiles) as it writes it for a GPU, and its count of the bytes that the kernels it
    generates read and write (the kernels it calls as they are left out). Written on the device at hand: the
    tensors' device only says where each kernel would run, and the Triton kernels are never compiled (that
    needs a GPU's driver). Inductor's heuristics read the device's properties (a CPU has few cores), so a
    large reduction may be one kernel here where a GPU's would be two; and on a CPU it copies the parts of a joined
    tensor (``cat``) into place, where for a GPU it may join them in the kernel that reads them (the fused update's
    joined gradients of the two first layers' outputs: 512 B per sample at train-ref)."""
    from unittest import mock

    import torch._dynamo
    import torch._inductor.config
    import torch.utils._triton
    from torch._inductor.graph import GraphLowering
    from torch._inductor.scheduler import ExternKernelSchedulerNode

    written: list[tuple[str, int]] = []

    def write(graph: GraphLowering):
        code, _ = graph.codegen()
        generated = sum(node.get_read_write_buffers_sizes() for node in graph.scheduler.nodes
                        if not isinstance(node, ExternKernelSchedulerNode))
        written.append((code.value, generated))
        raise _Written

    with torch._inductor.config.patch(cpu_backend="triton", fx_graph_cache=False), \
            mock.patch.object(torch.utils._triton, "triton_hash_with_backend", lambda: "no-gpu"), \
            mock.patch.object(GraphLowering, "_compile_to_module", write):
        try:
            compiled.compile_whole(function)(*args)
        except Exception as error:  # dynamo wraps the stop in its own errors
            if not written:
                raise RuntimeError(f"inductor wrote no code: {type(error).__name__}: {error}") from error
        finally:
            torch._dynamo.reset()
    return "\n".join(code for code, _ in written), sum(count for _, count in written)


def analyse(wrapper: compiled.Compiled, args: tuple) -> Tally:
    """A compiled region's launches (from the wrapper code inductor writes for a GPU, ``gpu_code``) and
    bytes (inductor's count of its generated kernels') plus the operands of the kernels it calls, at these
    arguments' shapes."""
    eager = Counter()
    with eager:
        wrapper.function(*args)  # the operands of the kernels it calls, counted eagerly
    code, generated_bytes = gpu_code(wrapper.function, args)
    launches = LAUNCH.findall(code)
    tally = Tally(kernels=len(launches) + eager.tally.launched_within, extern_bytes=eager.tally.extern_bytes,
                  network_multiply_adds=eager.tally.network_multiply_adds,
                  gradient_multiply_adds=eager.tally.gradient_multiply_adds,
                  unaligned_products=eager.tally.unaligned_products, unaligned_bytes=eager.tally.unaligned_bytes,
                  bytes=generated_bytes + eager.tally.extern_bytes)
    tally.by_op.update("fused" if launch.endswith(".run") else "extern" for launch in launches)
    return tally
