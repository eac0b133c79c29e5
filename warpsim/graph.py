"""A run of environment steps captured once as a CUDA graph and replayed (``Environment.graph``).

warpsim allocates every buffer once and launches its kernels on torch's current stream,
so ``torch.cuda.graph`` records a step's launches (and the few torch operations around
them) as they are; a replay then costs one launch of the whole graph instead of a host
round of Python and Numba per kernel. Where nothing can be captured (the numpy backend,
the CUDA simulator) a ``StepGraph`` steps eagerly, with the same results, so code written
against it runs everywhere.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from warpsim.device import Placement
from warpsim.validation import require_int

MAX_STEPS = 10_000
"""Most steps one graph holds: a capture records every launch of every step, so far more is a mistake
that would capture (or step eagerly) until killed."""
EAGER, CUDA_GRAPH = "eager", "cuda-graph"
"""How steps are launched, as benchmark records name it (their ``launches`` field)."""


class Steppable(Protocol):
    """What a StepGraph uses of an environment (``warpsim.Environment``): its public step hooks."""

    placement: Placement
    params: Any
    checked: bool
    observations: torch.Tensor
    rewards: torch.Tensor
    done: torch.Tensor

    @property
    def device(self) -> torch.device: ...

    def step(self) -> Any: ...

    def step_for_capture(self) -> None: ...

    def step_outputs(self) -> list[torch.Tensor]: ...

    def count_steps(self, steps: int) -> None: ...


def can_capture(env: Steppable) -> bool:
    """True where the environment's steps can be captured: kernels on a real GPU."""
    return env.placement.runs_kernels and env.placement.on_gpu


class StepGraph:
    """``steps`` auto-resetting steps of ``env``; ``replay()`` (or calling it) runs them.

    Every replayed step reads ``env.actions`` as it is when the replay runs: write the
    actions in place (``env.actions.copy_(...)``) before. The capture happens at the first
    replay, and again when it has become stale: when ``env.params`` or ``env.checked`` is
    not what it was (the buffers themselves cannot be rebound, so their addresses hold).
    The environment's state is left as it was by the capture: a replay of k steps gives the
    same trajectory as k calls of ``env.step()``. In checked mode the device-side action
    check runs inside the graph and ``check()`` is read every ``CHECK_EVERY`` steps, as eagerly.
    """

    def __init__(self, env: Steppable, steps: int = 1):
        self.env = env
        self.steps = require_int("steps", steps, 1, MAX_STEPS)
        self.captures = 0
        """How many times the steps were captured (1 after the first replay, more if a capture went stale)."""
        self._graph: torch.cuda.CUDAGraph | None = None
        self._captured_with: tuple | None = None

    @property
    def launches(self) -> str:
        """``"cuda-graph"`` where the steps are captured, ``"eager"`` where they are stepped one by one."""
        return CUDA_GRAPH if can_capture(self.env) else EAGER

    def replay(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Runs the ``steps`` steps; returns ``(observations, rewards, done)`` as ``env.step()`` does."""
        env = self.env
        if not can_capture(env):
            for _ in range(self.steps):
                env.step()
            return env.observations, env.rewards, env.done
        if self._graph is None or self._captured_with != self._settings():
            self._capture()
        assert self._graph is not None
        self._graph.replay()
        env.count_steps(self.steps)
        return env.observations, env.rewards, env.done

    __call__ = replay

    def _settings(self) -> tuple:
        # Params are frozen dataclasses: the same object means the same values.
        return id(self.env.params), self.env.params, self.env.checked

    def _capture(self) -> None:
        env = self.env
        written = env.step_outputs()
        saved = [tensor.clone() for tensor in written]
        stream = torch.cuda.Stream(env.device)
        stream.wait_stream(torch.cuda.current_stream(env.device))
        with torch.cuda.stream(stream):
            # Warm-up on the capture stream: compiles the kernels and configures their launches.
            env.step_for_capture()
        torch.cuda.current_stream(env.device).wait_stream(stream)
        for tensor, before in zip(written, saved):
            tensor.copy_(before)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(self.steps):
                env.step_for_capture()
        self._graph = graph
        self._captured_with = self._settings()
        self.captures += 1
