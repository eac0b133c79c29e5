"""The CUDA kernels of one training iteration, from torch's profiler on a GPU: how many one
rollout step and one update launch, and the most expensive ones.

    python benchmarks/iteration_profile.py --config train-ref [--steps 16] [--compile on [--gradient-kernels on|off]]
                                           [--json FILE]

The trainer runs without graphs (so that the profiler sees each kernel, which a replayed graph
hides), eager or fused (``--compile``; ``--gradient-kernels``: whether the update's networks and gradients
run as warpsim's kernels, as training's ``gradient_kernels``), at the config's E x N with the train tier's fixed update,
in bf16. Printed: the
kernels and their GPU time per rollout step and per optimizer step, the ``TOP`` most expensive
kernels of each phase, those of its matrix products that load under 16 bytes at a time
(``unaligned_gemm``: their operands' rows not 16-byte aligned, which the cost model counts), and the
per-kernel cost of a replayed CUDA graph of small kernels (the cost model's launch term,
benchmarks/iteration_cost.py).
"""

from __future__ import annotations

import argparse
import json
import re
import time

import torch
from torch.profiler import ProfilerActivity, profile

from warpsim.bench.policy_tiers import FIXED_UPDATE
from warpsim.commands import json_output, positive_int
from warpsim.configs import NAMED_CONFIGS
from warpsim.files import write_output
from warpsim.source_commit import source_commit
from warpsim.train import TrainConfig, Trainer
from warpsim.train.config import GRADIENT_KERNELS

TOP = 25
"""The most expensive kernels listed per phase: the fused update's first 10 were 57% of its GPU time."""


ALIGNMENT = re.compile(r"align[abc]?(\d+)")
"""A cuBLAS or CUTLASS kernel's alignment in its name: the elements it loads at a time (of each operand)."""


def unaligned_gemm(name: str) -> bool:
    """Whether a cuBLAS or CUTLASS kernel's name says it loads under 16 bytes at a time (``alignN``: N elements
    of 2 bytes in a bf16 or f16 kernel, of 4 otherwise), as such kernels run where a matrix's rows are not
    16-byte aligned."""
    element = 2 if "f16" in name else 4
    return any(int(count) * element < 16 for count in ALIGNMENT.findall(name))


def cuda_kernels(work) -> tuple[list[tuple[str, int, float]], float]:
    """``work()``'s CUDA kernels as (name, launches, total ms), most expensive first, and its wall ms."""
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as profiler:
        begin = time.perf_counter()
        work()
        torch.cuda.synchronize()
        wall_ms = 1e3 * (time.perf_counter() - begin)
    kernels = [(event.key, event.count, event.device_time_total / 1e3) for event in profiler.key_averages()
               if event.device_time_total > 0]
    return sorted(kernels, key=lambda kernel: -kernel[2]), wall_ms


def graph_kernel_cost(kernels: int = 2000, elements: int = 1024) -> float:
    """Microseconds per small kernel (one add of ``elements`` floats) in a replayed CUDA graph."""
    x = torch.zeros(elements, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        x.add_(1.0)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(kernels):
            x.add_(1.0)
    graph.replay()
    torch.cuda.synchronize()
    begin = time.perf_counter()
    for _ in range(5):
        graph.replay()
    torch.cuda.synchronize()
    return 1e6 * (time.perf_counter() - begin) / (5 * kernels)


def summary(kernels: list[tuple[str, int, float]], per: int) -> dict:
    unaligned = [kernel for kernel in kernels if unaligned_gemm(kernel[0])]
    return {"kernels": sum(k[1] for k in kernels) / per, "gpu_ms": sum(k[2] for k in kernels) / per,
            "unaligned_gemms": {"launches": sum(k[1] for k in unaligned) / per,
                                "ms": sum(k[2] for k in unaligned) / per},
            "top": [{"name": name[:120], "launches": count / per, "ms": ms / per} for name, count, ms in kernels[:TOP]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="train-ref", choices=["train-ref", "headline", "grid"])
    parser.add_argument("--steps", type=positive_int, default=16, help="rollout steps")
    parser.add_argument("--compile", choices=["off", "on"], default="off", help="the eager path or the fused one")
    parser.add_argument("--gradient-kernels", choices=GRADIENT_KERNELS, default=TrainConfig.gradient_kernels,
                        nargs="?", const="on", help="with --compile on: whether the update's networks and gradients "
                                                   "run as warpsim's kernels, the loss too with loss (default auto, "
                                                   "as training's; alone: on)")
    parser.add_argument("--json", type=json_output("profile"), help="write the figures to this file")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        parser.error("torch sees no CUDA GPU here, and this profiles an iteration's CUDA kernels; on a CPU, "
                     "benchmarks/iteration_cost.py counts its kernels and bytes")
    config = NAMED_CONFIGS[args.config]
    trainer = Trainer(TrainConfig(env=config.env, env_params=dict(config.params), num_envs=config.num_envs,
                                  rollout_steps=args.steps, precision="bf16", graphs="off", seed=0,
                                  compile=args.compile, gradient_kernels=args.gradient_kernels, **FIXED_UPDATE))
    trainer.iterate()
    trainer.iterate()
    rollout, rollout_wall = cuda_kernels(trainer.rollout)
    next_values = trainer.rollout()
    update, update_wall = cuda_kernels(lambda: trainer.update(next_values))
    optimizer_steps = trainer.config.epochs * trainer.minibatches
    result = {"config": args.config, "compile": args.compile, "gradient_kernels": trainer.policies.gradient_kernels,
              "loss_kernels": trainer.policies.loss_kernels, "rollout_steps": args.steps,
              "optimizer_steps": optimizer_steps,
              "device": torch.cuda.get_device_name(), "torch": torch.__version__, "warpsim_commit": source_commit(),
              "rollout_per_step": {**summary(rollout, args.steps), "wall_ms": rollout_wall / args.steps},
              "update_per_optimizer_step": {**summary(update, optimizer_steps),
                                            "wall_ms": update_wall / optimizer_steps},
              "graph_us_per_small_kernel": graph_kernel_cost()}
    print(json.dumps(result, indent=1))
    if args.json:
        write_output(args.json, json.dumps(result, indent=1).encode(), "profile")


if __name__ == "__main__":
    main()
