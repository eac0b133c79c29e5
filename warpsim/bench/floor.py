"""The physical floor of a step: the least memory traffic it needs, and its search's arithmetic.

A step of one environment must at least read and write its state, read its actions
and write its observations, rewards and done flag. Over the device's measured copy
bandwidth this is the memory floor: a lower bound on the time of an environment step,
whatever the step computes and however it searches. A run's fraction of the memory
floor is floor time / measured time (1 would be a step as fast as the memory allows).

The compute floor is given apart, never merged into the memory floor: the pairwise
distances the environment declares, over the device's measured FP32 rate. It counts
a brute-force search, so it bounds a step only where that search runs; where the
kernels search a grid instead (tag_continuous at large N, docs/design.md) they
evaluate far fewer distances, and the compute floor says what the brute-force search
would cost, not what the step needs.

What is counted (per environment step, i.e. one environment advanced by one step):

* bytes: every state array with an ``E`` dimension read once and written once; the
  actions read once; the observations, rewards and done flag written once. Arrays
  shared by all environments (no ``E`` dimension, e.g. ``agent_type``) stay in cache
  and are not counted, nor is the reset counter ``episode``, touched only at resets.
* arithmetic: brute-force distance evaluations, each ``dx = xj - xi``, ``dy = yj - yi``,
  ``dx * dx + dy * dy``: 5 FLOPs (two subtractions, two multiplications, one addition;
  a fused multiply-add counts as two, as in the matmul that measures the FP32 rate).
  Each environment declares them (``EnvSpec.distance_evaluations_per_step``):
  tag_continuous with partial observations searches N x N pairs for the K nearest,
  and every runner searches the taggers for its nearest; environments with no
  floating-point search (tag_gridworld compares integer cells) declare none. An
  environment that declares nothing has an unknown compute floor: its record says
  "unknown".

Measured, once per device and process (:func:`measure_device`):

* copy bandwidth: a copy of a large buffer (1 GiB on a GPU, 256 MiB on a CPU),
  counted as read + write bytes, median of 5; on a GPU ``torch`` ``copy_`` timed
  with CUDA events, on a CPU ``numpy.copyto`` (one thread, as the NumPy backend).
* FP32 rate: a square float32 matmul (8192 on a GPU with TF32 off, 1024 on a CPU
  through NumPy's BLAS), 2 n^3 FLOPs, median of 5.
"""

from __future__ import annotations

import functools
import statistics
import time

import numpy as np
import torch

FLOPS_PER_DISTANCE = 5
"""dx, dy, dx*dx + dy*dy in float32: two subtractions, two multiplications, one addition."""
COPY_BYTES = {"cuda": 1 << 30, "cpu": 1 << 28}
"""Size of the copied buffer: far beyond the last-level cache, so memory is what is timed."""
MATMUL_SIZE = {"cuda": 8192, "cpu": 1024}
REPEATS = 5
UNKNOWN = "unknown"
"""What a record says where the environment does not declare its pairwise work."""


def bytes_per_env_step(env) -> int:
    """Bytes one environment step must read and write, from the environment's own buffers."""
    per_env_state = [array.name for array in env.spec.state if "E" in array.dims]
    read_and_written = sum(_bytes_per_env(env, getattr(env.state, name)) for name in per_env_state)
    written = sum(_bytes_per_env(env, buffer) for buffer in (env.observations, env.rewards, env.done))
    return 2 * read_and_written + _bytes_per_env(env, env.actions) + written


def _bytes_per_env(env, tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size() // env.num_envs


def distance_evaluations_per_env_step(env) -> int | None:
    """Pairwise distances one environment step evaluates, as the environment declares them (None: unknown)."""
    return env.spec.distance_evaluations_per_step


def flops_per_env_step(env) -> int | None:
    """FP32 operations of the neighbour search of one environment step (None: unknown)."""
    distances = distance_evaluations_per_env_step(env)
    return None if distances is None else FLOPS_PER_DISTANCE * distances


@functools.lru_cache(maxsize=None)
def measure_device(device: torch.device) -> dict:
    """Copy bandwidth (GB/s, read + write) and FP32 rate (GFLOP/s) measured on ``device``."""
    kind = "cuda" if device.type == "cuda" else "cpu"
    if kind == "cuda":
        copy_seconds, matmul_seconds = _time_on_gpu(device)
    else:
        copy_seconds, matmul_seconds = _time_on_cpu()
    size = MATMUL_SIZE[kind]
    return {
        "copy_bandwidth_gb_per_s": 2 * COPY_BYTES[kind] / copy_seconds / 1e9,
        "copy_method": (f"copy of {COPY_BYTES[kind] >> 20} MiB, read + write bytes, median of {REPEATS}, "
                        + ("torch copy_ timed with CUDA events" if kind == "cuda" else "numpy.copyto")),
        "fp32_gflop_per_s": 2 * size ** 3 / matmul_seconds / 1e9,
        "fp32_method": (f"{size} x {size} float32 matmul, 2 n^3 FLOPs, median of {REPEATS}, "
                        + ("torch with TF32 off" if kind == "cuda" else "numpy (BLAS, all cores)")),
    }


def _time_on_gpu(device: torch.device) -> tuple[float, float]:
    # One function per measurement: its buffers are freed before the next one allocates.
    copy_seconds = _gpu_copy_seconds(device)
    matmul_seconds = _gpu_matmul_seconds(device)
    torch.cuda.empty_cache()
    return copy_seconds, matmul_seconds


def _gpu_copy_seconds(device: torch.device) -> float:
    source = torch.ones(COPY_BYTES["cuda"] // 4, dtype=torch.float32, device=device)
    target = torch.empty_like(source)
    return _median_cuda_seconds(lambda: target.copy_(source), device)


def _gpu_matmul_seconds(device: torch.device) -> float:
    size = MATMUL_SIZE["cuda"]
    a = torch.rand(size, size, device=device)
    b = torch.rand(size, size, device=device)
    precision = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")  # full FP32, not TF32
    try:
        return _median_cuda_seconds(lambda: torch.mm(a, b), device)
    finally:
        torch.set_float32_matmul_precision(precision)


def _median_cuda_seconds(operation, device: torch.device) -> float:
    with torch.cuda.device(device):
        operation()  # the first call pays for allocation and library start-up
        seconds = []
        for _ in range(REPEATS):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            operation()
            end.record()
            end.synchronize()
            seconds.append(start.elapsed_time(end) / 1e3)
    return statistics.median(seconds)


def _time_on_cpu() -> tuple[float, float]:
    return _host_copy_seconds(), _host_matmul_seconds()


def _host_copy_seconds() -> float:
    source = np.ones(COPY_BYTES["cpu"] // 4, dtype=np.float32)
    target = np.empty_like(source)
    return _median_host_seconds(lambda: np.copyto(target, source))


def _host_matmul_seconds() -> float:
    size = MATMUL_SIZE["cpu"]
    generator = np.random.default_rng(0)
    a = generator.random((size, size), dtype=np.float32)
    b = generator.random((size, size), dtype=np.float32)
    return _median_host_seconds(lambda: a @ b)


def _median_host_seconds(operation) -> float:
    operation()
    seconds = []
    for _ in range(REPEATS):
        begin = time.perf_counter()
        operation()
        seconds.append(time.perf_counter() - begin)
    return statistics.median(seconds)


def floor_fields(env, env_steps_per_second: float) -> dict:
    """The ``floor`` fields of a record: what a step needs, what the device does, how close the run got."""
    measured = measure_device(env.device)
    step_bytes, step_flops = bytes_per_env_step(env), flops_per_env_step(env)
    memory_seconds = step_bytes / (measured["copy_bandwidth_gb_per_s"] * 1e9)
    compute_seconds = None if step_flops is None else step_flops / (measured["fp32_gflop_per_s"] * 1e9)
    run_seconds = 1 / env_steps_per_second
    distances = distance_evaluations_per_env_step(env)
    return {
        "bytes_per_env_step": step_bytes,
        "distance_evaluations_per_env_step": UNKNOWN if distances is None else distances,
        "flops_per_env_step": UNKNOWN if step_flops is None else step_flops,
        **measured,
        "memory_floor_seconds_per_env_step": memory_seconds,
        "compute_floor_seconds_per_env_step": UNKNOWN if compute_seconds is None else compute_seconds,
        "run_seconds_per_env_step": run_seconds,
        "fraction_of_memory_floor": memory_seconds / run_seconds,
    }
