"""Several processes through torch.distributed, as started by ``torchrun``.

Each rank simulates its own environments with its own seeds; DDP averages the
gradients; only rank 0 writes files. A single process (no ``torchrun``) is a world
of one and uses no process group.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class World:
    """This process's place among the training processes."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def is_writer(self) -> bool:
        """Only rank 0 writes the run directory."""
        return self.rank == 0

    @classmethod
    def from_environment(cls, uses_gpu: bool) -> "World":
        """Joins the process group ``torchrun`` describes (NCCL on GPUs, gloo on CPUs)."""
        size = int(os.environ.get("WORLD_SIZE", "1"))
        if size == 1:
            return cls()
        rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
        if not dist.is_initialized():
            if uses_gpu:
                torch.cuda.set_device(local_rank)
            dist.init_process_group("nccl" if uses_gpu else "gloo")
        return cls(rank, size, local_rank)

    def gather(self, value) -> list:
        """Every rank's ``value`` (a picklable object), in rank order."""
        if self.size == 1:
            return [value]
        values = [None] * self.size
        dist.all_gather_object(values, value)
        return values

    def all_reduce_sum(self, tensor: torch.Tensor) -> None:
        """Sums ``tensor`` over the ranks, in place; a world of one leaves it."""
        if self.size > 1:
            dist.all_reduce(tensor)

    def all_reduce_mean(self, tensor: torch.Tensor) -> None:
        """Averages ``tensor`` over the ranks, in place; a world of one leaves it."""
        if self.size > 1:
            dist.all_reduce(tensor)
            tensor /= self.size

    def any(self, flag: bool, device: torch.device) -> bool:
        """Whether ``flag`` is set on any rank (a tensor on ``device`` goes round the ranks)."""
        if self.size == 1:
            return flag
        flags = torch.tensor([int(flag)], dtype=torch.int32, device=device)
        dist.all_reduce(flags, op=dist.ReduceOp.MAX)
        return bool(flags.item())

    def close(self) -> None:
        if self.size > 1 and dist.is_initialized():
            # Every rank arrives first: a rank that tears down its connections while another still
            # uses them makes gloo abort the process ("terminate called without an active exception").
            dist.barrier()
            dist.destroy_process_group()
