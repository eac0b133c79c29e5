"""Compiles every kernel of an environment for a real GPU (sm_90) without needing one.

Run as a script with the CUDA simulator off: it records the launches of one step and
one reset with the exact argument types the runtime passes, compiles each kernel to
PTX through NVVM and prints one JSON line per kernel with

* ``float64``: its variables that Numba typed as float64 (there must be none: the
  kernels compute in float32; the PTX may hold float64 code inside libdevice's own
  functions, which is fine);
* ``contracted``: the multiply-adds the compiler fused on its own (there must be none:
  NumPy rounds a product and a sum apart). It is the number of ``fma.rn.f32`` in the
  PTX NVVM makes by default minus the number when it compiles with ``-fma=0``, which
  keeps only the fused multiply-adds written explicitly (libdevice's internals).
"""

import json
import sys
from contextlib import contextmanager
from types import SimpleNamespace

import numba.cuda.compiler
import numba.cuda.dispatcher
from numba import cuda, types, typeof
from numba.cuda.compiler import compile_cuda

import warpsim
from warpsim.kernels.reset import count_resets
from warpsim.kernels.rounding import squared_distance

TARGET = (9, 0)
# Device functions ask the current device for its compute capability; there is none here.
numba.cuda.dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=TARGET)
FUSED_MULTIPLY_ADD = "fma.rn.f32"


class LaunchRecorder:
    """Stands in for the environment's Launcher: keeps each kernel and its arguments."""

    def __init__(self):
        self.launches = []

    def __call__(self, kernel, num_items, *args):
        self.launches.append((kernel, args))

    def per_block(self, kernel, num_blocks, shared_bytes, *args):
        self.launches.append((kernel, args))


def recorded_launches(env):
    recorder = LaunchRecorder()
    launches = recorder.launches
    env._launch = recorder
    env.step_cuda()
    env.reset_cuda(env.views.done)
    launches.append((count_resets, (env.views.done, env.views.episode)))  # the runtime's, whether launched or not
    return launches


def planted_squared_distance(dx, dy, out):
    """dx, dy, out float32[M]: the contraction the rule forbids, written plainly."""
    k = cuda.grid(1)
    out[k] = dx[k] * dx[k] + dy[k] * dy[k]


def rounded_squared_distance(dx, dy, out):
    """dx, dy, out float32[M]: the same value through the rounding helper."""
    k = cuda.grid(1)
    out[k] = squared_distance(dx[k], dy[k])


def main_planted() -> None:
    """Inspects the planted kernels: the check must see the plain one fused."""
    signature = (types.float32[::1],) * 3
    for kernel in (planted_squared_distance, rounded_squared_distance):
        print(json.dumps({"kernel": kernel.__name__, **inspect(kernel, signature)}), flush=True)


def main(env_id: str, params: dict) -> None:
    env = warpsim.make(env_id, 2, backend="numpy", **params)
    for kernel, args in recorded_launches(env):
        signature = tuple(typeof(arg) for arg in args)
        print(json.dumps({"kernel": kernel.py_func.__name__, **inspect(kernel.py_func, signature)}), flush=True)


def inspect(function, signature) -> dict:
    """What the compiled kernel ``function`` does that the simulator cannot show."""
    typed = compile_cuda(function, types.void, signature, cc=TARGET).fndesc.typemap
    float64 = sorted(name for name, kind in typed.items() if types.float64 in _leaf_types(kind))
    fused = cuda.compile_ptx(function, signature, cc=TARGET)[0].count(FUSED_MULTIPLY_ADD)
    with nvvm_fma_disabled():
        written = cuda.compile_ptx(function, signature, cc=TARGET)[0].count(FUSED_MULTIPLY_ADD)
    return {"float64": float64, "contracted": fused - written}


@contextmanager
def nvvm_fma_disabled():
    """Compiles with NVVM's ``-fma=0``: no multiply and add fused unless written as an fma."""
    original = numba.cuda.compiler.compile_cuda

    def without_fma(*args, nvvm_options=None, **kwargs):
        return original(*args, nvvm_options={**(nvvm_options or {}), "fma": False}, **kwargs)

    numba.cuda.compiler.compile_cuda = without_fma
    try:
        yield
    finally:
        numba.cuda.compiler.compile_cuda = original


def _leaf_types(kind):
    """The scalar types inside a (possibly tuple) Numba type."""
    if isinstance(kind, types.BaseTuple):
        return [leaf for item in kind.types for leaf in _leaf_types(item)]
    return [getattr(kind, "dtype", kind)]


if __name__ == "__main__":
    if sys.argv[1] == "--planted":
        main_planted()
    else:
        main(sys.argv[1], json.loads(sys.argv[2]))
