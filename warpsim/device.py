"""Where an environment's arrays live and how kernels reach them.

Every array is a torch tensor. The ``numpy`` backend works on NumPy views of CPU
tensors; the ``cuda`` backend launches Numba kernels on views of CUDA tensors (the
CUDA array interface, so no copy) on torch's current stream. Under the Numba CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1``) the ``cuda`` backend runs the very same kernels
on the CPU, over NumPy views of CPU tensors: that is how the kernels are tested
without a GPU.
"""

from __future__ import annotations

import functools
import inspect
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import torch
from numba import cuda

from warpsim.errors import InvalidTypeError, InvalidValueError, UnavailableError

BACKENDS = ("auto", "cuda", "numpy")
THREADS_PER_BLOCK = 128
"""Threads per block of the one-thread-per-item kernels on a GPU. Several environments
share a block when N is small; an environment spans blocks when N is large."""
WARP_SIZE = 32
SIMULATOR_THREADS_PER_BLOCK = 8
"""The simulator runs one Python thread per CUDA thread, idle ones included: small blocks."""
LOW_OCCUPANCY_WARNING = r".*Grid size \d+ will likely result in GPU under-utilization"
"""Numba's NumbaPerformanceWarning for grids under 128 blocks: a small batch is the user's choice
here, and the warning breaks tools that turn warnings into errors (PettingZoo's API test)."""


def simulator_enabled() -> bool:
    """True when Numba runs CUDA kernels on its CPU simulator."""
    return bool(numba.config.ENABLE_CUDASIM)


def _simulator_yields_while_it_waits() -> None:
    """The simulator's block manager polls its threads in a loop that holds the GIL, so a block's
    threads run only when Python's switch interval takes it away: a launch's time swings 10-30x
    with the scheduling (0.8 to 12 s for one search test here). Sleeping 0 s at each poll of a
    thread hands them the GIL at once, and nothing else about the simulation changes."""
    from numba.cuda.simulator import kernel as simulated

    polled = simulated.BlockThread.is_alive
    if getattr(polled, "yields", False):
        return

    def is_alive(thread) -> bool:
        time.sleep(0)
        return polled(thread)

    is_alive.yields = True  # type: ignore[attr-defined]
    simulated.BlockThread.is_alive = is_alive


if simulator_enabled():
    _simulator_yields_while_it_waits()


def gpu_available() -> bool:
    """True when a real CUDA GPU is usable by both torch and Numba."""
    return (not simulator_enabled()) and torch.cuda.is_available() and cuda.is_available()


def cuda_driver_version() -> str | None:
    """The CUDA version the GPU's driver supports, e.g. "13.0"; None without a GPU (the simulator has no driver)."""
    if not gpu_available():
        return None
    major, minor = cuda.cudadrv.driver.driver.get_version()
    return f"{major}.{minor}"


@dataclass(frozen=True)
class Placement:
    """The backend an environment runs on and the torch device holding its arrays."""

    backend: str
    torch_device: torch.device

    @property
    def runs_kernels(self) -> bool:
        return self.backend == "cuda"

    @property
    def on_gpu(self) -> bool:
        return self.torch_device.type == "cuda"


def resolve_placement(backend: str, device: str | int | None = None) -> Placement:
    """Turns a backend name (``auto``, ``cuda`` or ``numpy``) into a placement."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise InvalidValueError(f"backend={backend!r} is not known; allowed: {', '.join(BACKENDS)}")
    if device is not None:
        try:
            torch.device(device)
        except (RuntimeError, TypeError, ValueError):
            raise InvalidValueError(f"device={device!r} is not a device; give e.g. 'cpu', 'cuda' or 'cuda:0'") from None
    if backend == "auto":
        backend = "cuda" if gpu_available() else "numpy"
    if backend == "numpy":
        if device is not None and torch.device(device).type != "cpu":
            raise InvalidValueError(f"device={device!r} with backend='numpy'; the numpy backend runs on 'cpu' only")
        return Placement("numpy", torch.device("cpu"))
    if simulator_enabled():
        return Placement("cuda", torch.device("cpu"))
    if not gpu_available():
        raise UnavailableError(
            "backend='cuda' needs a CUDA GPU visible to torch and Numba, and none was found; "
            "use backend='numpy' (or 'auto'), or set NUMBA_ENABLE_CUDASIM=1 before importing "
            "numba to run the kernels on the CUDA simulator")
    torch_device = torch.device("cuda" if device is None else device)
    if torch_device.type != "cuda":
        raise InvalidValueError(f"device={device!r} with backend='cuda'; give a CUDA device such as 'cuda:0'")
    return Placement("cuda", torch_device)


def kernel_view(tensor: torch.Tensor):
    """The array a kernel (or the NumPy reference) reads: same bytes, no copy. Numba and NumPy
    have no bfloat16: a bfloat16 tensor is seen as int16, its bits (``warpsim.kernels.bfloat16``)."""
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.view(torch.int16)
    if tensor.device.type == "cpu":
        return tensor.numpy()
    return cuda.as_cuda_array(tensor.detach(), sync=False)


def device_pointer(view) -> int:
    """Address of the first byte of a view made by :func:`kernel_view`."""
    if isinstance(view, np.ndarray):
        return view.ctypes.data
    return view.__cuda_array_interface__["data"][0]


class Launcher:
    """Launches one-thread-per-item kernels on torch's current stream.

    Numba stream objects and launch configurations are cached, so a launch does not wrap
    anything anew. Python numbers are refused as kernel arguments (see
    :func:`refuse_python_numbers`). On a GPU each launch's arguments are also marshalled
    only once (see :func:`prepared_launch`); ``prepare_arguments = False`` turns that off.
    """

    def __init__(self, placement: Placement):
        self._placement = placement
        self._streams: dict[int, object] = {}
        self._configured: dict[tuple[Any, int, int, int, int], Any] = {}
        self._prepared: dict[tuple, tuple[Callable[[], Any] | None, tuple]] = {}
        self.threads_per_block = SIMULATOR_THREADS_PER_BLOCK if simulator_enabled() else THREADS_PER_BLOCK
        self.prepare_arguments = placement.on_gpu

    def stream(self):
        if not self._placement.on_gpu:
            return 0
        handle = torch.cuda.current_stream(self._placement.torch_device).cuda_stream
        if handle not in self._streams:
            self._streams[handle] = cuda.external_stream(handle)
        return self._streams[handle]

    def __call__(self, kernel, num_items: int, *args) -> None:
        """Launches one thread per item (e.g. per agent of every environment)."""
        blocks = (num_items + self.threads_per_block - 1) // self.threads_per_block
        self._launch(kernel, blocks, 0, args)

    def per_block(self, kernel, num_blocks: int, items_per_block: int, shared_bytes: int, *args) -> None:
        """Launches ``num_blocks`` blocks (e.g. one per environment) of ``block_threads(items_per_block)``
        threads with ``shared_bytes`` of dynamic shared memory each."""
        self._launch(kernel, num_blocks, shared_bytes, args, self.block_threads(items_per_block))

    def block_threads(self, items: int) -> int:
        """Threads of a block that works on ``items`` (e.g. an environment's agents): the usual
        block, or fewer whole warps where fewer cover the items, so small environments leave
        no warp idle."""
        return min(self.threads_per_block, WARP_SIZE * -(-items // WARP_SIZE))

    def _launch(self, kernel, blocks: int, shared_bytes: int, args: tuple, threads: int | None = None) -> None:
        stream = self.stream()
        threads = threads or self.threads_per_block
        key = (kernel, blocks, threads, shared_bytes, id(stream))
        if self.prepare_arguments:
            # Arrays by identity (the entry keeps them alive, so an id is never reused), scalars by value.
            launch_key = (key, *((type(a), a) if isinstance(a, (np.generic, bool)) else id(a) for a in args))
            prepared = self._prepared.get(launch_key)
            if prepared is not None and prepared[0] is not None:
                try:
                    prepared[0]()
                    return
                except (TypeError, ValueError):  # the packed arguments were refused before anything was launched
                    self._prepared[launch_key] = (None, args)
        refuse_python_numbers(kernel, args)
        configured = self._configured.get(key)
        if configured is None:
            with warnings.catch_warnings():
                # Only here: the warning is raised when a launch is configured, and stays on elsewhere.
                warnings.filterwarnings("ignore", message=LOW_OCCUPANCY_WARNING)
                configured = kernel[blocks, threads, stream, shared_bytes]
            self._configured[key] = configured
        configured(*args)  # through Numba: compiles the kernel at its first launch
        if self.prepare_arguments and launch_key not in self._prepared and len(self._prepared) < MAX_PREPARED:
            self._prepared[launch_key] = (prepared_launch(configured, args), args)


MAX_PREPARED = 512
"""Launches a Launcher keeps marshalled; beyond it (arguments made anew at every launch) Numba marshals them."""


def prepared_launch(configured, args: tuple) -> Callable[[], Any] | None:
    """The launch of ``configured`` (a Numba launch configuration) with ``args``, marshalled now
    by Numba's own code and kept: a call then only hands the packed arguments to the driver.

    Numba types, looks up and packs every argument at every launch (microseconds each, a
    step's largest host cost); warpsim launches the same kernels on the same views of
    buffers that never move, with the same scalars, so that work can be done once. None
    where it does not apply (a launch that copies host arrays, a debug or launch-config
    sensitive kernel, Numba internals other than expected): such launches go through Numba.
    """
    try:
        # The very launch function, config class and version flag Numba's own launches use.
        from numba.cuda.dispatcher import CUDA_CORE_GE_1_0, LaunchConfig, launch

        dispatcher = configured.dispatcher
        if (configured.pre_launch_callbacks or dispatcher.specialized or dispatcher._launch_config_sensitive
                or dispatcher._launch_config_is_specialized):
            return None
        kernel = dispatcher.overloads[tuple(dispatcher.typeof_pyval(a) for a in args)]
        if kernel.debug or kernel.extensions:
            return None
        writebacks: list = []
        packed: list = []
        for argument_type, value in zip(kernel.argument_types, args):
            kernel._prepare_args(argument_type, value, configured.stream, writebacks, packed)
        if writebacks:
            return None
        cooperative = {"is_cooperative" if CUDA_CORE_GE_1_0 else "cooperative_launch": kernel.cooperative}
        config = LaunchConfig(grid=configured.griddim, block=configured.blockdim,
                              shmem_size=configured.sharedmem, **cooperative)
        function = kernel._codelibrary.get_cufunc().kernel
    except (AttributeError, ImportError, KeyError, TypeError, NotImplementedError):
        return None
    return functools.partial(launch, configured.stream, config, function, *packed)


def refuse_python_numbers(kernel, args: tuple) -> None:
    """Refuses a Python float or int among a kernel's arguments.

    On a GPU Numba types a Python float as float64 and an int as int64, so the kernel
    computes in double precision (or mixes int64 with uint64 into float64), while the
    simulator computes with NumPy's float32 rules: the two would disagree. NumPy scalars
    (np.float32, np.int32, ...) and bools are launched as they are.
    """
    for position, value in enumerate(args):
        if isinstance(value, (int, float)) and not isinstance(value, (bool, np.generic)):
            function = getattr(kernel, "py_func", None) or getattr(kernel, "fn", kernel)
            name = getattr(function, "__name__", repr(kernel))
            try:
                parameter = f" ({list(inspect.signature(function).parameters)[position]})"
            except (TypeError, ValueError, IndexError):
                parameter = ""
            wrap = "np.float32" if isinstance(value, float) else "np.int32"
            raise InvalidTypeError(
                f"kernel {name}: argument {position + 1}{parameter} is the Python {type(value).__name__} "
                f"{value!r}, which a GPU compiles as {'float64' if isinstance(value, float) else 'int64'} "
                f"(the simulator does not); pass a NumPy scalar of the kernel's type, e.g. {wrap}({value!r})")


def available_bytes(placement: Placement) -> int:
    """Memory free for new buffers where the placement allocates them."""
    if placement.on_gpu:
        free, _total = torch.cuda.mem_get_info(placement.torch_device)
        return int(free)
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def device_name(placement: Placement) -> str:
    """A human-readable name of the hardware the placement runs on: the GPU's name, "CUDA
    simulator" when the simulator runs the kernels, or else the CPU's model."""
    if placement.runs_kernels and simulator_enabled():
        return "CUDA simulator"
    if placement.on_gpu:
        return torch.cuda.get_device_name(placement.torch_device)
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu"
