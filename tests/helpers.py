"""Test helpers shared by every environment: kernel targets, injected states, comparisons
(tag_continuous's own are in tag_continuous_helpers.py), the benchmarks' scripts as modules, and
compile_kernels.py's compiles for a real GPU."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from warpsim.device import simulator_enabled

KERNEL_TARGETS = [
    pytest.param("simulator", id="simulator"),
    pytest.param("gpu", id="gpu", marks=pytest.mark.gpu),
]


def require_target(target: str) -> None:
    """Skips the simulator variant when a real GPU runs the kernels, and vice versa."""
    if target == "simulator" and not simulator_enabled():
        pytest.skip("a real GPU runs the kernels in this session (see the gpu variant)")
    if target == "gpu" and simulator_enabled():
        pytest.skip("needs a CUDA GPU")


def pettingzoo_adapter() -> ModuleType:
    """warpsim.adapters.pettingzoo, or the calling test skipped where PettingZoo is not installed (as on the GPU
    machine): a test module that imported the adapter at its top would fail to collect there, every test with it."""
    pytest.importorskip("pettingzoo")
    return importlib.import_module("warpsim.adapters.pettingzoo")


def write_state(env, state: dict) -> None:
    for name, value in state.items():
        target = getattr(env.state, name)
        target.copy_(torch.as_tensor(np.asarray(value), dtype=target.dtype))


def random_actions(env, rng: np.random.Generator) -> np.ndarray:
    levels = np.array(env.spec.action_levels)
    return (rng.random(tuple(env.actions.shape)) * levels).astype(np.int32)


def compared_arrays(env) -> dict:
    """Every array a step writes, as NumPy copies, by name."""
    arrays = {name: getattr(env.state, name) for name in env.state}
    arrays.update(observations=env.observations, rewards=env.rewards, done=env.done, terminated=env.terminated)
    return {name: tensor.detach().cpu().numpy().copy() for name, tensor in arrays.items()}


def assert_same(reference: dict, kernels: dict, when: str) -> None:
    for name, expected in reference.items():
        np.testing.assert_allclose(kernels[name], expected, rtol=1e-5, atol=1e-5,
                                   err_msg=f"{name} differs {when}")


def load_script(path: Path, name: str | None = None) -> ModuleType:
    """A script file (of benchmarks/, not an installed package) as a module, named ``name`` or its stem;
    registered in sys.modules while it runs, as an import would (its dataclasses need that)."""
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    assert spec is not None and spec.loader is not None, f"{path} is not a Python file"
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def fake_python(tmp_path: Path, body: str) -> Path:
    """An executable standing in for a peer's python: runs ``body`` with the script's arguments in sys.argv."""
    path = tmp_path / "python"
    path.write_text(f"#!{sys.executable}\nimport json, sys, time\n{body}\n")
    path.chmod(0o755)
    return path


COMPILE_KERNELS = Path(__file__).with_name("compile_kernels.py")
PTXAS_MISSING = 3
"""compile_kernels.py's exit code where ptxas is not installed."""


def compile_kernels(*args: str) -> list[dict]:
    """What compile_kernels.py printed, a kernel a line, run with ``args`` on the real CUDA target (the simulator
    off); a skip where the CUDA compiler's pieces are not installed."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, str(COMPILE_KERNELS), *args], env=env, capture_output=True, text=True,
                          timeout=600)
    if done.returncode == PTXAS_MISSING or "DynamicLibNotFoundError" in done.stderr:
        pytest.skip(f"the CUDA compiler's pieces are not installed (pip install -e '.[test]'): "
                    f"{done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]
