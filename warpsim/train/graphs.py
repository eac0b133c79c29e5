"""The trainer's rollout captured once as a CUDA graph and replayed every iteration.

A rollout is T steps of policy forward passes, Gumbel sampling, environment steps and
rollout-storage writes, all on buffers allocated once: it is the same work on the same
addresses every iteration, which is what a CUDA graph replays. Replaying it saves the
host a Python and launch round per operation (hundreds per step). The sampling
generator is registered with the graph, so every replay draws fresh numbers from it,
exactly the numbers an eager rollout would draw. The update (epochs x minibatches) stays
eager: the learning rate, the optimizer's state and the shuffles change what it launches.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from warpsim.errors import InvalidValueError


def resolve_graphs(setting: str, device: torch.device, world_size: int, hybrid: bool = False) -> bool:
    """Whether rollouts replay a captured graph: ``auto`` and ``on`` with CUDA in a single
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


class RolloutGraph:
    """Runs ``collect`` eagerly once on a side stream (the warm-up: kernels compile, libraries
    set up), captures it at the next call, and replays the capture from then on."""

    def __init__(self, collect: Callable[[], list[torch.Tensor]], generator: torch.Generator, device: torch.device):
        self._collect = collect
        self._generator = generator
        self._stream = torch.cuda.Stream(device)
        self._device = device
        self._warmed_up = False
        self._graph: torch.cuda.CUDAGraph | None = None
        self._outputs: list[torch.Tensor] = []

    def __call__(self) -> list[torch.Tensor]:
        """Collects one rollout; returns each learning role's value of the final observations
        (tensors the next call overwrites)."""
        if self._graph is not None:
            self._graph.replay()
            return self._outputs
        if not self._warmed_up:
            current = torch.cuda.current_stream(self._device)
            self._stream.wait_stream(current)
            with torch.cuda.stream(self._stream):
                outputs = self._collect()
            current.wait_stream(self._stream)
            self._warmed_up = True
            return outputs
        graph = torch.cuda.CUDAGraph()
        graph.register_generator_state(self._generator)
        with torch.cuda.graph(graph, stream=self._stream):
            self._outputs = self._collect()
        self._graph = graph
        graph.replay()  # the capture recorded the work without doing it
        return self._outputs
