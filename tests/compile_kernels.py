"""Compiles every kernel of an environment for a real GPU (sm_90) without needing one.

Run as a script with the CUDA simulator off: it records the launches of one step and
one reset with the exact argument types the runtime passes, compiles each kernel to
PTX through NVVM and prints one JSON line per kernel naming its variables that Numba
typed as float64 (there must be none: the kernels compute in float32; the PTX itself
holds float64 code from libdevice's own sin/cos range reduction, which is fine).
"""

import json
import sys

from types import SimpleNamespace

import numba.cuda.dispatcher
from numba import cuda, types, typeof
from numba.cuda.compiler import compile_cuda

import warpsim
from warpsim.kernels.reset import count_resets

TARGET = (9, 0)
# Device functions ask the current device for its compute capability; there is none here.
numba.cuda.dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=TARGET)



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
    env.launch = recorder
    env.step_cuda()
    env.reset_cuda(env.views.done)
    launches.append((count_resets, (env.views.done, env.views.episode)))
    return launches


def main(env_id: str, params: dict) -> None:
    env = warpsim.make(env_id, 2, backend="numpy", **params)
    for kernel, args in recorded_launches(env):
        signature = tuple(typeof(arg) for arg in args)
        cuda.compile_ptx(kernel.py_func, signature, cc=TARGET)
        typed = compile_cuda(kernel.py_func, types.void, signature, cc=TARGET).fndesc.typemap
        float64 = sorted(name for name, kind in typed.items() if types.float64 in _leaf_types(kind))
        print(json.dumps({"kernel": kernel.py_func.__name__, "float64": float64}), flush=True)


def _leaf_types(kind):
    """The scalar types inside a (possibly tuple) Numba type."""
    if isinstance(kind, types.BaseTuple):
        return [leaf for item in kind.types for leaf in _leaf_types(item)]
    return [getattr(kind, "dtype", kind)]


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]))
