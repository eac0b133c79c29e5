"""A cost model of one training iteration that needs no GPU: the kernels and the bytes of the
rollout's policy step and of one optimizer step of the update, counted on the device at hand.

    python benchmarks/iteration_cost.py [--config train-ref] [--path off|on|kernels|loss|loss-forward|all] [--json FILE]

What is counted (kernels, bytes, the networks' kernels' multiply-adds): warpsim.bench.kernel_counts, and for
compiled regions warpsim.bench.region_counts.

The configs are train-ref, headline and grid (docs/benchmarks.md), with the train tier's
100-step rollouts and fixed update (4 epochs x 4 minibatches), both roles learning where both
may, in bf16, at two small batches of environments: kernels do not depend on the batch, and
bytes are a fixed part (the weights) plus a part per sample, so two sizes give each per
agent-step or per sample at the config's own size. The update's once-per-update work (GAE,
the shuffles, the value statistics) is shared out over its optimizer steps. Each count runs in a process of its
own; its compiled regions run eagerly (``region_counts.eager_regions``: no C++ is compiled), each compiled
afresh for its count alone (``fresh_compiles``). The prediction of
GPU time is bytes / copy bandwidth + kernels x the cost of a kernel in a replayed graph, both
measured once on an H200 (``H200``), + the multiply-adds of warpsim's networks' kernels at the rates
the forward kernel and the gradients' kernels ran at on an H200: those kernels compute, where the rest
only moves bytes; a matrix product on rows that are not 16-byte aligned moves its bytes slower
(``unaligned_product_slowdown``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import multiprocessing
from collections.abc import Iterator
from unittest import mock

import torch

from warpsim.bench.kernel_counts import Counter, uncounted
from warpsim.bench.policy_tiers import FIXED_UPDATE
from warpsim.bench.region_counts import CountedRegions, eager_regions
from warpsim.commands import json_output, torch_device
from warpsim.configs import NAMED_CONFIGS
from warpsim.files import write_output
from warpsim.source_commit import source_commit
from warpsim.train import TrainConfig, Trainer, fused_loss

H200 = {"copy_bytes_per_second": 4.3e12, "seconds_per_kernel": 0.95e-6,
        "forward_multiply_adds_per_second": 220_000 * (2 * (80 * 64 + 64 * 64) + 43 * 64) / (0.1071e-3 * 2 / 2.125),
        "gradient_multiply_adds_per_second": 880_000 * (2 * (80 * 64 + 64 * 64) + 43 * 64 + 43 * 64
                                                        + 2 * (80 * 64 + 2 * 64 * 64)) / 1.2891e-3,
        "unaligned_product_slowdown": 0.559e-3 / (2 * 880_000 * (71 + 128) * 2 / 4.3e12)}
"""One NVIDIA H200: a device-to-device copy's bytes read and written per second (4.3 TB/s), the
cost of one small kernel in a replayed CUDA graph (benchmarks/iteration_profile.py, 0.95-0.98 us),
and the multiply-adds per second (``network_multiply_adds``) of the networks' kernels at train-ref,
from the CUDA kernels' own times in torch's profiler: at warpsim 786d1b8
(benchmarks/results/train-speed/profile-gradient-kernels-train-ref-nvidia-h200.json) the forward
kernel's 220,000 agents of a rollout step in 0.1008 ms (4.6e13); at 536d8d6
(profile-gradient-kernels-train-ref-536d8d6-nvidia-h200.json) the gradients' kernels' 880,000
samples of an optimizer step in 1.289 ms (3.5e13; 1.9e13 at 786d1b8). A matrix product with an operand
whose rows are not 16-byte aligned (``kernel_counts.aligned_matrix``) moves its bytes this many times slower:
at warpsim c4ea203 (profile-fused-train-ref-nvidia-h200.json) train-ref's first layers' products, forward and
the weight's gradient, on 880,000 rows of 71 bfloat16 inputs and 128 outputs, took 0.559 ms (3.4 times their
bytes' time)."""
MEASURED = {("train-ref", "off"): {"rollout_ms": 149.0, "update_ms": 697.0, "commit": "9c79ab3"},
            ("train-ref", "on"): {"rollout_ms": 44.5, "update_ms": 214.0, "commit": "062ec78"},
            ("grid", "on"): {"rollout_ms": 8.48, "update_ms": 14.5, "commit": "062ec78"},
            ("train-ref", "kernels"): {"rollout_ms": 44.4, "update_ms": 201.8, "commit": "062ec78"},
            ("grid", "kernels"): {"rollout_ms": 8.48, "update_ms": 9.69, "commit": "062ec78"}}
"""The H200 records (benchmarks/results/nvidia-h200.json and train-speed/nvidia-h200.json) of one 100-step
iteration, eager networks, the fused path or the fused path with gradient kernels, in CUDA graphs: the rollout
and the update in milliseconds, and the commit measured."""
ROLLOUT_STEPS = 100
"""The train tier's rollout (warpsim bench --steps)."""
SMALL_BATCHES = (2, 4)
"""The environments the two counts are made at."""
PATHS = {"off": dict(compile="off"), "on": dict(compile="on", gradient_kernels="off"),
         "kernels": dict(compile="on", gradient_kernels="on"), "loss": dict(compile="on", gradient_kernels="loss"),
         "loss-forward": dict(compile="on", gradient_kernels="loss")}
"""The trainer's paths counted, by name: eager (the baseline), fused, fused with the update's networks
and gradients as warpsim's kernels (``TrainConfig.gradient_kernels``), those kernels computing the loss too, and the
loss computed in a forward kernel of its own before them (the same operation launched ``in_forward``:
``IN_FORWARD_PATHS``)."""
IN_FORWARD_PATHS = {"loss-forward"}
"""The paths whose loss the operation launches ``in_forward`` (``fused_loss.IN_FORWARD``): counted when named, not
among ``--path all``'s."""


BESIDE = {"off": "baseline", "on": "fused", "kernels": "kernels"}
"""The keys under which --json gives the other paths' figures beside the last path's."""


def trainer_for(name: str, num_envs: int, path: str, device: str) -> Trainer:
    named = NAMED_CONFIGS[name]
    backend = "cuda" if device.startswith("cuda") else "numpy"
    return Trainer(TrainConfig(env=named.env, env_params=dict(named.params), num_envs=num_envs,
                               rollout_steps=ROLLOUT_STEPS,
                               backend=backend, precision="bf16", graphs="off", **PATHS[path],
                               seed=0, **FIXED_UPDATE))


@contextlib.contextmanager
def fresh_compiles() -> Iterator[None]:
    """Inductor's caches of compiled graphs off: a compile served from them (of an earlier count, or an earlier
    run's) laid out some of the update's tensors otherwise, and its count moved (train-ref's update with
    gradient kernels: 1,587 B per sample from a warm cache, 1,616 compiled afresh). And no pool of compiling
    processes: a count writes code and compiles none, and the pool's start took a fifth of its CPU time."""
    import torch._functorch.config
    import torch._inductor.config

    with torch._inductor.config.patch(fx_graph_cache=False, compile_threads=1), \
            torch._functorch.config.patch(enable_autograd_cache=False):
        yield


def count(name: str, num_envs: int, path: str, device: str) -> dict:
    """One rollout and one update of the config at ``num_envs``, counted after a first iteration: kernels per
    environment step and per optimizer step, and the bytes of each."""
    with fresh_compiles(), mock.patch.object(fused_loss, "IN_FORWARD", path in IN_FORWARD_PATHS):
        trainer = trainer_for(name, num_envs, path, device)
        with eager_regions():
            trainer.iterate()
        for env in trainer.envs:  # the environments' own work is not the policy step's
            env.step = uncounted(env.step)  # type: ignore[method-assign]
        rollout, update = Counter(), Counter()
        with CountedRegions(rollout), rollout:
            next_values = trainer.rollout()
        with CountedRegions(update), update:
            trainer.update(next_values)
    steps, optimizer_steps = trainer.config.rollout_steps, trainer.config.epochs * trainer.minibatches
    return {"rollout_kernels": rollout.tally.kernels / steps, "rollout_bytes": rollout.tally.bytes / steps,
            "rollout_multiply_adds": rollout.tally.network_multiply_adds / steps,
            "rollout_unaligned_products": rollout.tally.unaligned_products / steps,
            "rollout_unaligned_bytes": rollout.tally.unaligned_bytes / steps,
            "rollout_ops": rollout.tally.by_op, "agents": trainer.env.num_agents * num_envs,
            "update_kernels": update.tally.kernels / optimizer_steps,
            "update_bytes": update.tally.bytes / optimizer_steps,
            "update_multiply_adds": update.tally.network_multiply_adds / optimizer_steps,
            "update_gradient_multiply_adds": update.tally.gradient_multiply_adds / optimizer_steps,
            "update_unaligned_products": update.tally.unaligned_products / optimizer_steps,
            "update_unaligned_bytes": update.tally.unaligned_bytes / optimizer_steps,
            "update_ops": update.tally.by_op,
            "samples": sum(trainer.samples_per_role) * trainer.runs / trainer.minibatches}


def at_size(small: dict, large: dict, key: str, units: str, real_units: float) -> float:
    """Bytes per unit at ``real_units``, from two counts: a fixed part (weights) and a part per unit."""
    slope = (large[key] - small[key]) / (large[units] - small[units])
    return slope + (small[key] - slope * small[units]) / real_units


def model(name: str, path: str, device: str) -> dict:
    """The config's figures at its own size, from counts at two small ones, and the predicted GPU time."""
    named = NAMED_CONFIGS[name]
    # Each count in a process of its own, both at once: a count made after another in one process could differ
    # (train-ref's update with gradient kernels: 1,616 B per sample after the fused path's count, 1,587 alone,
    # inductor having fused the loss's kernels otherwise).
    with concurrent.futures.ProcessPoolExecutor(len(SMALL_BATCHES), mp_context=multiprocessing.get_context("spawn")) \
            as processes:
        small, large = processes.map(count, *zip(*((name, num_envs, path, device) for num_envs in SMALL_BATCHES)))
    real_agents = large["agents"] * named.num_envs / SMALL_BATCHES[1]
    real_samples = large["samples"] * named.num_envs / SMALL_BATCHES[1]
    rollout_bytes = at_size(small, large, "rollout_bytes", "agents", real_agents)
    update_bytes = at_size(small, large, "update_bytes", "samples", real_samples)
    rollout_multiply_adds = large["rollout_multiply_adds"] / large["agents"]
    update_multiply_adds = large["update_multiply_adds"] / large["samples"]
    gradient_multiply_adds = large["update_gradient_multiply_adds"] / large["samples"]
    optimizer_steps = 4 * 4
    rollout_unaligned = at_size(small, large, "rollout_unaligned_bytes", "agents", real_agents)
    update_unaligned = at_size(small, large, "update_unaligned_bytes", "samples", real_samples)
    slower = H200["unaligned_product_slowdown"] - 1
    rollout_seconds = ROLLOUT_STEPS * (large["rollout_kernels"] * H200["seconds_per_kernel"]
                                       + (rollout_bytes + slower * rollout_unaligned) * real_agents
                                       / H200["copy_bytes_per_second"]
                                       + rollout_multiply_adds * real_agents / H200["forward_multiply_adds_per_second"])
    update_seconds = optimizer_steps * (large["update_kernels"] * H200["seconds_per_kernel"]
                                        + (update_bytes + slower * update_unaligned) * real_samples
                                        / H200["copy_bytes_per_second"]
                                        + (update_multiply_adds - gradient_multiply_adds) * real_samples
                                        / H200["forward_multiply_adds_per_second"]
                                        + gradient_multiply_adds * real_samples
                                        / H200["gradient_multiply_adds_per_second"])
    return {
        "config": name, "path": path, **PATHS[path], "device": device, "precision": "bf16",
        "warpsim_commit": source_commit(),
        "rollout": {"kernels_per_step": large["rollout_kernels"], "bytes_per_agent_step": rollout_bytes,
                    "network_multiply_adds_per_agent_step": rollout_multiply_adds,
                    "unaligned_products_per_step": large["rollout_unaligned_products"],
                    "unaligned_bytes_per_agent_step": rollout_unaligned,
                    "ops": dict(large["rollout_ops"].most_common(12)), "predicted_ms": 1e3 * rollout_seconds},
        "update": {"kernels_per_step": large["update_kernels"], "bytes_per_sample": update_bytes,
                   "network_multiply_adds_per_sample": update_multiply_adds,
                   "gradient_multiply_adds_per_sample": gradient_multiply_adds,
                   "unaligned_products_per_step": large["update_unaligned_products"],
                   "unaligned_bytes_per_sample": update_unaligned,
                   "samples_per_optimizer_step": real_samples, "ops": dict(large["update_ops"].most_common(12)),
                   "predicted_ms": 1e3 * update_seconds},
        "measured_h200_ms": MEASURED.get((name, path)),
    }


TARGETS = {"update_bytes_per_sample": 3000, "update_kernels_per_step": 60, "rollout_kernels_per_step": 30,
           "rollout_bytes_per_agent_step": 1000}
"""The targets of the training-speed work, at train-ref."""


def multiply_adds(count: float, unit: str) -> str:
    """The networks' kernels' multiply-adds per ``unit``, as ``report`` words them (none: nothing)."""
    return f", {count:,.0f} multiply-adds of the networks' kernels per {unit}" if count else ""


def unaligned(count: float) -> str:
    """The matrix products with an operand whose rows are not 16-byte aligned (``kernel_counts.aligned_matrix``),
    as ``report`` words them (none: nothing)."""
    return f", {count:.0f} of its matrix products on rows not 16-byte aligned" if count else ""


def report(result: dict) -> str:
    rollout, update = result["rollout"], result["update"]
    path = {"off": "eager", "on": "fused", "kernels": "fused, gradient kernels",
            "loss": "fused, the loss in the gradient kernels",
            "loss-forward": "fused, the loss in a forward kernel before the gradient kernels"}[result["path"]]
    lines = [f"{result['config']}, {path} ({result['device']}):",
             f"  rollout policy step: {rollout['kernels_per_step']:.1f} kernels per step, "
             f"{rollout['bytes_per_agent_step']:,.0f} B per agent-step"
             f"{multiply_adds(rollout['network_multiply_adds_per_agent_step'], 'agent-step')}"
             f"{unaligned(rollout['unaligned_products_per_step'])}; predicted "
             f"{rollout['predicted_ms']:.0f} ms per 100-step rollout on an H200",
             f"  update: {update['kernels_per_step']:.1f} kernels per optimizer step, "
             f"{update['bytes_per_sample']:,.0f} B per sample"
             f"{multiply_adds(update['network_multiply_adds_per_sample'], 'sample')}"
             f"{unaligned(update['unaligned_products_per_step'])}; predicted "
             f"{update['predicted_ms']:.0f} ms per update"]
    if result["measured_h200_ms"]:
        measured = result["measured_h200_ms"]
        lines.append(f"  measured on an H200 ({measured['commit']}): rollout {measured['rollout_ms']:.0f} ms, update "
                     f"{measured['update_ms']:.0f} ms")
    if result["config"] == "train-ref":
        met = {"update <= 3 KB per sample": update["bytes_per_sample"] <= TARGETS["update_bytes_per_sample"],
               "update <= 60 kernels": update["kernels_per_step"] <= TARGETS["update_kernels_per_step"],
               "rollout <= 30 kernels": rollout["kernels_per_step"] <= TARGETS["rollout_kernels_per_step"],
               "rollout <= 1 KB per agent-step": rollout["bytes_per_agent_step"]
               <= TARGETS["rollout_bytes_per_agent_step"]}
        lines.append("  targets: " + ", ".join(f"{name} {'met' if ok else 'missed'}" for name, ok in met.items()))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", choices=["train-ref", "headline", "grid"],
                        help="repeatable; default train-ref")
    parser.add_argument("--path", choices=[*PATHS, "all"], default="all",
                        help="the eager path (off, the baseline), the fused one (on), the fused one with gradient "
                             "kernels (kernels), those computing the loss too (loss), or all four (default); or the "
                             "loss computed in a forward kernel before the gradient kernels (loss-forward)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", type=torch_device)
    parser.add_argument("--json", type=json_output("cost model figures"), help="also write every figure to this file")
    args = parser.parse_args()
    paths = [path for path in PATHS if path not in IN_FORWARD_PATHS] if args.path == "all" else [args.path]
    records = {}
    for name in args.config or ["train-ref"]:
        results = {}
        for path in paths:
            results[path] = model(name, path, args.device)
            print(report(results[path]), flush=True)
        # The last path's figures (the loss in the gradient kernels when all were counted), the others beside them.
        records[name] = {**results[paths[-1]], **{key: results.get(path) for path, key in BESIDE.items()
                                                  if path != paths[-1]}}
    if args.json:
        figures = next(iter(records.values())) if len(records) == 1 else records
        write_output(args.json, json.dumps(figures, indent=1).encode(), "cost model figures")


if __name__ == "__main__":
    main()
