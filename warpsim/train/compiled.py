"""The fused path (``TrainConfig.compile``): the rollout's policy step and record of a step, and
the update's GAE and minibatch step, each one ``torch.compile`` region.

Eagerly, one policy step is some two hundred kernels and one minibatch step some thousand,
each a launch and a pass over memory; most of them are small elementwise operations that
inductor fuses into a few kernels beside the matrix products. The compiled functions are the
eager ones (the same Python code), so they compute the same thing up to the rounding of fused
arithmetic; inside a CUDA graph they replay like any other kernels.

A function compiles at its first call with each shape. A failure to compile (dynamo,
inductor, or Triton missing on a GPU) is a one-line error naming the setting that turns fusion
off, never a traceback nor a silent fall-back to the eager path.
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import torch
from torch._dynamo.exc import TorchDynamoException

from warpsim.errors import InvalidValueError, UnavailableError

Result = TypeVar("Result")


def resolve_compile(setting: str, device: torch.device, world_size: int, precision: str, hybrid: bool) -> bool:
    """Whether the trainer runs the fused path: ``auto`` on CUDA in one process (not under fp16, whose
    gradient scaler steps on the host, nor with the networks on another device than the environments);
    ``on`` wherever torch.compile runs (a CPU needs a C++ compiler); ``off`` never."""
    if setting == "on" and precision == "fp16":
        raise InvalidValueError("compile='on' does not combine with precision='fp16' (its gradient scaler steps "
                                "outside the compiled update); use bf16, or compile='off'")
    if setting == "on" and world_size > 1:
        raise InvalidValueError(f"compile='on' runs in one process, and torchrun started {world_size}: its "
                                f"gradients are averaged outside the compiled update; use compile='off'")
    if setting == "on" and hybrid:
        raise InvalidValueError("compile='on' needs the networks on the environments' device, and policy_device "
                                "places them elsewhere; use compile='auto' or 'off'")
    if setting == "auto":
        return device.type == "cuda" and world_size == 1 and precision != "fp16" and not hybrid
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


class Compiled(Generic[Result]):
    """``function`` through ``torch.compile`` (whole, static shapes, on its own code object: ``own_code``);
    ``what`` names it in errors. ``seconds`` is the time its first call took, compiling included."""

    def __init__(self, function: Callable[..., Result], what: str):
        self.function = function
        """The eager function it compiles."""
        self.compiled = torch.compile(own_code(function), fullgraph=True, dynamic=False)
        self._what = what
        self.seconds = 0.0

    def __call__(self, *args: Any) -> Result:
        started = time.perf_counter()
        try:
            result = self.compiled(*args)
        except TorchDynamoException as error:  # inductor's errors, and Triton's absence, are among them
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise UnavailableError(f"config field compile: torch.compile could not compile {self._what} "
                                   f"({type(error).__name__}: {first[:300]}); train with compile='off' (--compile "
                                   f"off), the eager path") from None
        if not self.seconds:
            self.seconds = time.perf_counter() - started
        return result
