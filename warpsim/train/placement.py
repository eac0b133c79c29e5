"""Where training runs: the environments' placement and the networks' device, decided once.

``place_training`` makes the one decision: the environments' backend and device (one GPU
per process under DDP), then the networks' device. By default both share one device.
Otherwise (say NumPy environments with networks on a GPU) the environments' side of the
rollout (observations, rewards, episode ends) is stored on the environments' device and
the networks' side (actions, log-probabilities, values) on the policy device. Each step
copies the policy inputs over once and the actions back once; each iteration copies the
environments' side over once per buffer for the update (pinned and non-blocking from a CPU).
"""

from __future__ import annotations

import dataclasses

import torch

from warpsim.device import Placement, gpu_available, resolve_placement
from warpsim.errors import InvalidValueError, UnavailableError
from warpsim.train.distributed import World

BFLOAT16_CAPABILITY = (8, 0)
"""The oldest GPUs that compute in bfloat16 (compute capability 8.0, Ampere): their tensor cores multiply it, and
warpsim's networks' kernels round to it with an instruction older GPUs lack (tests/test_kernel_targets.py)."""


def place_training(backend: str, policy_device: str, world: World) -> tuple[Placement, torch.device]:
    """Where training with ``backend`` and ``policy_device`` (config settings) runs in ``world``'s
    process: the environments' placement and the networks' device."""
    env = environment_placement(backend, world)
    policy = resolve_policy_device(policy_device, env.torch_device)
    check_single_process(env.torch_device, policy, world.size)
    return env, policy


def environment_placement(backend: str, world: World | None = None) -> Placement:
    """The environments' placement for ``backend``: on a GPU, each process of several its own (its local rank)."""
    placement = resolve_placement(backend)
    if placement.on_gpu and world is not None and world.size > 1:
        return dataclasses.replace(placement, torch_device=torch.device("cuda", world.local_rank))
    return placement


def resolve_policy_device(setting: str, env_device: torch.device) -> torch.device:
    """The device of the networks for ``config.policy_device``; ``auto`` is ``env_device``.

    A CUDA device that is not there is an UnavailableError naming the setting and what is allowed.
    """
    if setting == "auto":
        return env_device
    device = torch.device(setting)
    if device.type == "cuda":
        if not gpu_available():
            raise UnavailableError(f"policy_device={setting!r} needs a CUDA GPU, and none was found; "
                                   f"use policy_device='cpu' or 'auto' (the environments' device)")
        count = torch.cuda.device_count()
        if device.index is not None and device.index >= count:
            raise UnavailableError(f"policy_device={setting!r}: this machine has {count} CUDA device(s), "
                                   f"cuda:0 to cuda:{count - 1}")
    return env_device if _indexed(device) == _indexed(env_device) else _indexed(device)


def _indexed(device: torch.device) -> torch.device:
    """``cuda`` as the numbered device it means (the current one)."""
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device


def computes_bfloat16(device: torch.device) -> bool:
    """Whether ``device`` is a GPU of ``BFLOAT16_CAPABILITY`` or newer."""
    return device.type == "cuda" and torch.cuda.get_device_capability(device) >= BFLOAT16_CAPABILITY


def describe_gpu(device: torch.device) -> str:
    """``device`` as an error names it: its index, its name and its compute capability."""
    major, minor = torch.cuda.get_device_capability(device)
    return f"{_indexed(device)} ({torch.cuda.get_device_name(device)}, compute capability {major}.{minor})"


def check_single_process(env_device: torch.device, policy_device: torch.device, world_size: int) -> None:
    """Networks on another device than the environments train in one process."""
    if env_device != policy_device and world_size > 1:
        raise InvalidValueError(f"policy_device={str(policy_device)!r} differs from the environments' device "
                                f"({env_device}), which runs in one process only (now {world_size}); use "
                                f"policy_device='auto' with several processes")


class RolloutMirror:
    """Copies of the environments' side of the rollout on the policy device, refreshed once per iteration."""

    def __init__(self, buffers: list[torch.Tensor], device: torch.device):
        self.sources = buffers
        self.copies = [torch.empty_like(buffer, device=device) for buffer in buffers]
        self.non_blocking = all(buffer.is_pinned() for buffer in buffers)

    def refresh(self) -> list[torch.Tensor]:
        """One copy per buffer (non-blocking from pinned memory); returns the copies, in order."""
        for source, copy in zip(self.sources, self.copies):
            copy.copy_(source, non_blocking=self.non_blocking)
        return self.copies
