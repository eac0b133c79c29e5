"""The fused path (``TrainConfig.compile``): the rollout's policy step and record of a step, and
the update's GAE and minibatch step, each one ``torch.compile`` region.

Eagerly, one policy step is some two hundred kernels and one minibatch step some thousand,
each a launch and a pass over memory; most of them are small elementwise operations that
inductor fuses into a few kernels beside the matrix products. The compiled functions are the
eager ones (the same Python code), so they compute the same thing up to the rounding of fused
arithmetic; inside a CUDA graph they replay like any other kernels.

A function compiles at its first call with each shape. A failure to compile (dynamo,
inductor, Triton missing on a GPU, or Triton failing to build a kernel, warpsim's own or
inductor's, for the GPU at hand) is a one-line error naming the setting that turns fusion
off, never a traceback nor a silent fall-back to the eager path. Under bf16 the fused path runs
warpsim's bfloat16 kernels, which need a GPU of compute capability 8.0 or newer
(``resolve_compile``).
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import time
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

import torch

from warpsim.errors import InvalidValueError, UnavailableError
from warpsim.train.placement import BFLOAT16_CAPABILITY, computes_bfloat16, describe_gpu

Result = TypeVar("Result")


def resolve_compile(setting: str, device: torch.device, world_size: int, precision: str, hybrid: bool) -> bool:
    """Whether the trainer runs the fused path: ``auto`` on CUDA in one process (not under fp16, whose
    gradient scaler steps on the host, nor with the networks on another device than the environments, nor
    under bf16 on a GPU older than warpsim's bfloat16 kernels: ``placement.computes_bfloat16``); ``on``
    wherever torch.compile runs (a CPU needs a C++ compiler); ``off`` never."""
    if setting == "on" and precision == "fp16":
        raise InvalidValueError("compile='on' does not combine with precision='fp16' (its gradient scaler steps "
                                "outside the compiled update); use bf16, or compile='off'")
    if setting == "on" and world_size > 1:
        raise InvalidValueError(f"compile='on' runs in one process, and torchrun started {world_size}: its "
                                f"gradients are averaged outside the compiled update; use compile='off'")
    if setting == "on" and hybrid:
        raise InvalidValueError("compile='on' needs the networks on the environments' device, and policy_device "
                                "places them elsewhere; use compile='auto' or 'off'")
    no_bfloat16_gpu = precision == "bf16" and device.type == "cuda" and not computes_bfloat16(device)
    if setting == "on" and no_bfloat16_gpu:
        major, minor = BFLOAT16_CAPABILITY
        raise UnavailableError(f"compile='on' under precision='bf16' runs warpsim's bfloat16 kernels, which need a "
                               f"GPU of compute capability {major}.{minor} or newer, and the networks' device is "
                               f"{describe_gpu(device)}; use precision='fp32' (--precision fp32), or compile='off'")
    if setting == "auto":
        return device.type == "cuda" and world_size == 1 and precision != "fp16" and not hybrid and not no_bfloat16_gpu
    return setting == "on"


def own_code(function: Callable[..., Result]) -> Callable[..., Result]:
    """``function`` (or a bound method) on a copy of its code object. Dynamo keeps its compiled graphs, and
    counts recompilations against its limit (8), per code object: every trainer's functions would otherwise
    share one, and a process's ninth trainer (an experiment's ninth batch) would fail to compile."""
    if isinstance(function, types.MethodType):
        return types.MethodType(own_code(function.__func__), function.__self__)
    assert isinstance(function, types.FunctionType)
    copy = types.FunctionType(function.__code__.replace(), function.__globals__, function.__name__,
                              function.__defaults__, function.__closure__)
    copy.__kwdefaults__, copy.__qualname__ = function.__kwdefaults__, function.__qualname__
    return copy


INDUCTOR_OPTIONS = {"loop_ordering_after_fusion": False}
"""Inductor's settings for every region. Reordering a kernel's loops after fusion failed an assertion of
torch 2.11's scheduler (``reorder_loops_by_dep_pair``) on a GPU, compiling the minibatch step of continuous
actions at some shapes; turned off, it changes no kernel of train-ref's regions (the cost model's counts)."""


def compile_whole(function: Callable[..., Result]) -> Callable[..., Result]:
    """``function`` through ``torch.compile`` as every region is: whole, static shapes, on its own code
    object (``own_code``), with ``INDUCTOR_OPTIONS``."""
    import torch._inductor.config as inductor

    # an older torch without one of these settings has nothing of it to turn off
    options: dict[str, Any] = {name: value for name, value in INDUCTOR_OPTIONS.items() if hasattr(inductor, name)}
    return torch.compile(own_code(function), fullgraph=True, dynamic=False, options=options)


class Compiled(Generic[Result]):
    """``function`` through ``torch.compile`` (``compile_whole``); ``what`` names it in errors, which name
    ``ways_out`` (settings that turn off what it runs) before compile='off'. ``seconds`` is the time its first
    call took, compiling included."""

    def __init__(self, function: Callable[..., Result], what: str, ways_out: tuple[str, ...] = ()):
        self.function = function
        """The eager function it compiles."""
        self.compiled = compile_whole(function)
        self._what = what
        self._ways_out = ways_out
        self.seconds = 0.0

    def __call__(self, *args: Any) -> Result:
        started = time.perf_counter()
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):  # Triton prints a kernel that ptxas refuses, whole, as it raises
                result = self.compiled(*args)
        except Exception as error:
            from torch._dynamo.exc import TorchDynamoException  # loaded by torch.compile itself: no cost at import

            if isinstance(error, TorchDynamoException):  # inductor's errors, and Triton's absence, are among them
                why = _summary(error)
                raise self._unavailable("torch.compile could not compile",
                                        why + _raised_at(error) if NAMES_ALONE.fullmatch(why) else why) from None
            if _raised_by_triton(error):  # building a kernel for this GPU, warpsim's own or inductor's, failed
                raise self._unavailable("Triton could not build a kernel of", _summary(error)) from None
            sys.stdout.write(printed.getvalue())
            raise
        sys.stdout.write(printed.getvalue())
        if not self.seconds:
            self.seconds = time.perf_counter() - started
        return result

    def _unavailable(self, what_failed: str, why: str) -> UnavailableError:
        ways_out = "".join(f"{way}, or " for way in self._ways_out)
        return UnavailableError(f"config field compile: {what_failed} {self._what} ({why}); train with "
                                f"{ways_out}compile='off' (--compile off), the eager path")


NAMES_ALONE = re.compile(r"(\w+:\s*)+")
"""A summary of an error that names exceptions and says nothing more ("InductorError: AssertionError:")."""
PTXAS_ERROR = re.compile(r"ptxas .*?\berror\s*:\s*(.+)")
"""A line of ptxas's report of an error (which Triton quotes below a heading of its own): the error's words."""


def _raised_by_triton(error: Exception) -> bool:
    """Whether ``error`` is one of Triton's (a process without Triton raises none)."""
    errors = sys.modules.get("triton.errors")
    return errors is not None and isinstance(error, errors.TritonError)


def _raised_at(error: Exception) -> str:
    """Where ``error`` was raised, which a report of a compiler's fault needs where its words name exceptions alone
    (``NAMES_ALONE``): its traceback's innermost function and line, the file from its package's folder on
    ("; raised in reorder_loops_by_dep_pair, torch/_inductor/scheduler.py:1950"), or nothing without one."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return ""
    innermost = frames[-1]
    parts = Path(innermost.filename).parts
    installed = [index for index, part in enumerate(parts) if part in ("site-packages", "dist-packages")]
    file = "/".join(parts[installed[-1] + 1:]) if installed else parts[-1]
    return f"; raised in {innermost.name}, {file}:{innermost.lineno}"


def _summary(error: Exception) -> str:
    """``error``'s type and the line of its message that says what went wrong: ptxas's own where Triton quotes it."""
    text = str(error).strip()
    quoted = PTXAS_ERROR.search(text)
    line = quoted[1] if quoted else (getattr(error, "error_message", None) or text or " ").strip().splitlines()[0]
    return f"{type(error).__name__}: {line.strip()[:300]}"
