"""The trainer's rollout and update, each captured once as a CUDA graph and replayed every iteration.

A rollout is T steps of policy forward passes, sampling, environment steps and
rollout-storage writes; an update is GAE, the value statistics and epochs x minibatches
of shuffles, forward and backward passes, gradient clipping, Adam steps and the kl
schedule's rate moves. Both work on buffers allocated once (the optimizer's state, the
learning rates and the statistics are device tensors too): the same work on the same
addresses every iteration, which is what a CUDA graph replays. Replaying saves the host a
Python and launch round per operation (hundreds per step, some thousand per update). The
sampling generators (one per run) are registered with both graphs, so every replay draws fresh numbers
from them, exactly the numbers (actions, shuffles) the eager path would draw.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import torch

from warpsim.errors import InvalidValueError

Outputs = TypeVar("Outputs")


def resolve_graphs(setting: str, device: torch.device, world_size: int, hybrid: bool = False) -> bool:
    """Whether rollouts and updates replay captured graphs: ``auto`` and ``on`` with CUDA in a single
    process; several processes (DDP) run eagerly; ``on`` without CUDA is an error. Networks
    on another device than the environments (``hybrid``, see ``policy_device``) run eagerly too: their
    rollout copies between devices every step, which one stream's graph does not hold."""
    if setting == "on" and device.type != "cuda":
        raise InvalidValueError(f"graphs='on' needs CUDA (the environments run on {device}); use graphs='auto' "
                                f"or 'off'")
    if setting == "on" and hybrid:
        raise InvalidValueError("graphs='on' needs the networks on the environments' device, and policy_device "
                                "places them elsewhere; use graphs='auto' or 'off'")
    return setting != "off" and device.type == "cuda" and world_size == 1 and not hybrid


class CapturedGraph(Generic[Outputs]):
    """Runs ``work`` eagerly once on a side stream (the warm-up: kernels compile, libraries
    and the optimizer's state set up), captures it at the next call, and replays the
    capture from then on.

    ``work(inputs)`` takes a list of tensors whose values, not addresses, change between
    calls: the capture keeps its own copies, and each replay first copies the given ones
    into them. ``settings()`` returns what the capture bakes in (the Python values the work
    reads, by name); a call that finds one changed since the capture is refused, before
    anything runs, naming it.
    """

    def __init__(self, work: Callable[[list[torch.Tensor]], Outputs], generators: list[torch.Generator],
                 device: torch.device, settings: Callable[[], dict] = dict):
        self._work = work
        self._generators = generators
        self._settings = settings
        self._stream = torch.cuda.Stream(device)
        self._device = device
        self._warmed_up = False
        self._graph: torch.cuda.CUDAGraph | None = None
        self._captured_settings: dict = {}
        self._inputs: list[torch.Tensor] = []
        self._outputs: Outputs
        self.captures = 0
        """How many times the work was captured."""

    def __call__(self, inputs: list[torch.Tensor] | None = None) -> Outputs:
        """Does the work once; returns what it returns (tensors the next call overwrites)."""
        inputs = inputs or []
        if self._graph is not None:
            check_unchanged(self._captured_settings, self._settings())
            for mine, given in zip(self._inputs, inputs):
                if mine is not given:
                    mine.copy_(given)
            self._graph.replay()
            return self._outputs
        if not self._warmed_up:
            current = torch.cuda.current_stream(self._device)
            self._stream.wait_stream(current)
            with torch.cuda.stream(self._stream):
                outputs = self._work(inputs)
            current.wait_stream(self._stream)
            self._warmed_up = True
            return outputs
        self._inputs = [tensor.clone() for tensor in inputs]
        self._captured_settings = self._settings()
        graph = torch.cuda.CUDAGraph()
        for generator in self._generators:
            graph.register_generator_state(generator)
        with torch.cuda.graph(graph, stream=self._stream):
            self._outputs = self._work(self._inputs)
        self._graph = graph
        self.captures += 1
        graph.replay()  # the capture recorded the work without doing it
        return self._outputs

    def reset(self) -> None:
        """Forgets the capture (state it read was replaced, e.g. by loading a checkpoint): the
        next call captures again."""
        self._graph = None


def check_unchanged(captured: dict, current: dict) -> None:
    """Refuses ``current`` settings that differ from the ``captured`` ones, naming the first that does."""
    if current == captured:
        return
    name = next(name for name in current if current[name] != captured.get(name))
    raise InvalidValueError(f"{name} is {current[name]!r}, but the captured graph was recorded with "
                            f"{captured.get(name)!r}; settings are fixed for a trainer's life: build a new Trainer "
                            f"for new ones")
