"""Compiles every kernel of an environment for a real GPU (sm_90) without needing one.

Run as a script with the CUDA simulator off (``compile_kernels.py [--resources | --both] ENV_ID CONFIG...``,
each CONFIG a JSON object of the environment's parameters): for each config it records the launches of one
step and one reset with the exact argument types the runtime passes, compiles each kernel to PTX through NVVM
and prints one JSON line per kernel with its ``config`` (the index among the configs), its ``kernel`` name and

* ``float64``: its variables that Numba typed as float64 (there must be none: the
  kernels compute in float32; the PTX may hold float64 code inside libdevice's own
  functions, which is fine);
* ``contracted``: the multiply-adds the compiler fused on its own (there must be none:
  NumPy rounds a product and a sum apart). It is the number of ``fma.rn.f32`` in the
  PTX NVVM makes by default minus the number when it compiles with ``-fma=0``, which
  keeps only the fused multiply-adds written explicitly (libdevice's internals).

With ``--resources`` it prints instead what each kernel costs on an sm_90 GPU (``--both``: both
reports in one line, the default compile made once for the two): ``ptxas -v``
(from the ``nvidia-cuda-nvcc`` wheel) assembles the PTX and reports its ``registers``,
``stack`` (local stack frame bytes), ``spill_stores`` and ``spill_loads`` (bytes) and
static ``shared`` bytes; ``instructions`` counts the PTX instructions, ``div_s64`` and
``div_rn_f32`` the 64-bit integer and IEEE float32 divisions among them.
"""

import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import numba.cuda.compiler
import numba.cuda.dispatcher
from numba import cuda, typeof, types

import warpsim
from warpsim.kernels.reset import count_resets
from warpsim.kernels.rounding import squared_distance

TARGET = (9, 0)
# Device functions ask the current device for its compute capability; there is none here.
numba.cuda.dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=TARGET)
FUSED_MULTIPLY_ADD = "fma.rn.f32"
PTXAS_MISSING = 3
"""Exit code of ``--resources`` where ptxas is not installed."""
PTXAS_FIGURES = {
    "registers": re.compile(r"Used (\d+) registers"),
    "stack": re.compile(r"(\d+) bytes stack frame"),
    "spill_stores": re.compile(r"(\d+) bytes spill stores"),
    "spill_loads": re.compile(r"(\d+) bytes spill loads"),
    "shared": re.compile(r"(\d+) bytes smem"),
}
"""What ``ptxas -v`` says of the entry function; a figure it leaves out is 0."""
PTX_INSTRUCTION = re.compile(r"^\s*(?:@!?%p\d+\s+)?([a-z][\w.]*)[\s;]", re.MULTILINE)
PTX_DIRECTIVES_AND_LABELS = re.compile(r"^\s*[.$]|:\s*$")


class LaunchRecorder:
    """Stands in for the environment's Launcher: keeps each kernel and its arguments."""

    def __init__(self):
        self.launches = []

    def __call__(self, kernel, num_items, *args):
        self.launches.append((kernel, args))

    def per_block(self, kernel, num_blocks, items_per_block, shared_bytes, *args):
        self.launches.append((kernel, args))


def recorded_launches(env):
    recorder = LaunchRecorder()
    launches = recorder.launches
    env._launch = recorder  # run() binds the arguments, then hands them to the launcher
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


def planted_local_list(values, out):
    """values, out int64[M]: a list indexed at run time (local memory) and a 64-bit division."""
    k = cuda.grid(1)
    held = cuda.local.array(64, types.int64)
    for slot in range(64):
        held[slot] = values[(k + slot) % values.shape[0]]
    out[k] = held[values[k] % 64] // values[0]


def main_planted() -> None:
    """Inspects the planted kernels: the check must see the plain one fused."""
    signature = (types.float32[::1],) * 3
    for kernel in (planted_squared_distance, rounded_squared_distance):
        print(json.dumps({"kernel": kernel.__name__, **inspect(kernel, signature)}), flush=True)


def main_planted_resources() -> None:
    """The resources of a kernel that breaks the budgets: the report must see its stack and division."""
    signature = (types.int64[::1],) * 2
    print(json.dumps({"kernel": "planted_local_list", **resources(planted_local_list, signature)}), flush=True)


def main(env_id: str, configs: list[dict], report) -> None:
    """Each config's kernels in turn, in this one process: a config after the first compiles in about half the
    time of a process of its own (Numba's start and the kernels' shared device functions are paid once)."""
    for index, params in enumerate(configs):
        env = warpsim.make(env_id, 2, backend="numpy", **params)
        for kernel, args in recorded_launches(env):
            signature = tuple(typeof(arg) for arg in args)
            print(json.dumps({"config": index, "kernel": kernel.py_func.__name__,
                              **report(kernel.py_func, signature)}), flush=True)


def default_compile(function, signature) -> tuple[str, dict]:
    """The PTX NVVM makes of ``function`` by default, and the type of each of its variables."""
    with typing_kept() as typed:
        ptx = cuda.compile_ptx(function, signature, cc=TARGET)[0]
    return ptx, typed


def inspect(function, signature, compiled: tuple[str, dict] | None = None) -> dict:
    """What the compiled kernel ``function`` does that the simulator cannot show."""
    ptx, typed = compiled or default_compile(function, signature)
    float64 = sorted(name for name, kind in typed.items() if types.float64 in _leaf_types(kind))
    with nvvm_fma_disabled():
        written = cuda.compile_ptx(function, signature, cc=TARGET)[0].count(FUSED_MULTIPLY_ADD)
    return {"float64": float64, "contracted": ptx.count(FUSED_MULTIPLY_ADD) - written}


def both(function, signature) -> dict:
    """``resources`` and ``inspect`` of one default compile."""
    compiled = default_compile(function, signature)
    return {**resources(function, signature, compiled), **inspect(function, signature, compiled)}


def resources(function, signature, compiled: tuple[str, dict] | None = None) -> dict:
    """Registers, local memory, shared memory and PTX instruction counts of ``function`` on sm_90."""
    ptx = (compiled or default_compile(function, signature))[0]
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder, "kernel.ptx")
        source.write_text(ptx)
        assembled = subprocess.run([str(ptxas_path()), f"-arch=sm_{TARGET[0]}{TARGET[1]}", "-v",
                                    "-o", str(Path(folder, "kernel.cubin")), str(source)],
                                   capture_output=True, text=True, check=True)
    # Only a kernel's own entry function is assembled: its device functions are inlined.
    figures = {name: int(found.group(1)) if (found := pattern.search(assembled.stderr)) else 0
               for name, pattern in PTXAS_FIGURES.items()}
    opcodes = [match.group(1) for line in ptx.splitlines() if not PTX_DIRECTIVES_AND_LABELS.search(line)
               and (match := PTX_INSTRUCTION.match(line))]
    return {**figures, "instructions": len(opcodes), "div_s64": opcodes.count("div.s64"),
            "div_rn_f32": opcodes.count("div.rn.f32")}


def ptxas_path() -> Path:
    """ptxas of the nvidia-cuda-nvcc wheel; exits with PTXAS_MISSING (and says so) where it is absent."""
    try:
        spec = importlib.util.find_spec("nvidia.cuda_nvcc")
    except ModuleNotFoundError:
        spec = None
    for place in spec.submodule_search_locations or [] if spec else []:
        if Path(place, "bin", "ptxas").is_file():
            return Path(place, "bin", "ptxas")
    print("ptxas not found: the nvidia-cuda-nvcc-cu12 wheel is not installed (pip install -e '.[test]')",
          file=sys.stderr)
    sys.exit(PTXAS_MISSING)


@contextmanager
def typing_kept():
    """Yields a dict that holds, once the block has compiled a kernel, the type of each of its variables."""
    original = numba.cuda.compiler.compile_cuda
    typemap: dict = {}

    def keeping(*args, **kwargs):
        result = original(*args, **kwargs)
        typemap.update(result.fndesc.typemap)
        return result

    numba.cuda.compiler.compile_cuda = keeping
    try:
        yield typemap
    finally:
        numba.cuda.compiler.compile_cuda = original


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
    elif sys.argv[1] == "--planted-resources":
        main_planted_resources()
    elif sys.argv[1] in ("--resources", "--both"):
        main(sys.argv[2], [json.loads(config) for config in sys.argv[3:]],
             resources if sys.argv[1] == "--resources" else both)
    else:
        main(sys.argv[1], [json.loads(config) for config in sys.argv[2:]], inspect)
