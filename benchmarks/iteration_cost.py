"""A cost model of one training iteration that needs no GPU: the kernels and the bytes of the
rollout's policy step and of one optimizer step of the update, counted on the device at hand.

    python benchmarks/iteration_cost.py [--config train-ref] [--path off|on|kernels|all] [--json FILE]

What is counted:

* eagerly, every aten operation that launches a kernel on a GPU (views, allocations and
  metadata launch none), and the bytes it reads and writes: its tensors' sizes, an expanded
  input counted once; the environments' own step is left out;
* a compiled region (``TrainConfig.compile``), from inductor's own output: its generated
  kernels and the kernels it calls as they are, matrix products and warpsim's own (the launches
  of its wrapper code); its bytes from inductor's count where it gives one (Triton kernels, on a
  GPU), otherwise, on a CPU, what no fusion avoids: the region's outputs, and its inputs once,
  each as much as its most reading operation reads of it; plus the operands of the kernels it calls.

A gathering operation (``GATHERS``) reads of its source only the rows it gathers: a minibatch step
reads its minibatch of the rollout, not the whole rollout.

The configs are train-ref, headline and grid (docs/benchmarks.md), with the train tier's
100-step rollouts and fixed update (4 epochs x 4 minibatches), both roles learning where both
may, in bf16, at two small batches of environments: kernels do not depend on the batch, and
bytes are a fixed part (the weights) plus a part per sample, so two sizes give each per
agent-step or per sample at the config's own size. The update's once-per-update work (GAE,
the shuffles, the value statistics) is shared out over its optimizer steps. The prediction of
GPU time is bytes / copy bandwidth + kernels x the cost of a kernel in a replayed graph, both
measured once on an H200 (``H200``), + the multiply-adds of warpsim's networks' kernels at the rates
the forward kernel and the gradients' kernels ran at on an H200: those kernels compute, where the rest
only moves bytes.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import re
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

from warpsim.bench.policy_tiers import FIXED_UPDATE
from warpsim.commands import json_output, torch_device
from warpsim.configs import NAMED_CONFIGS
from warpsim.files import write_output
from warpsim.source_commit import source_commit
from warpsim.train import TrainConfig, Trainer, compiled

H200 = {"copy_bytes_per_second": 4.3e12, "seconds_per_kernel": 0.95e-6,
        "forward_multiply_adds_per_second": 220_000 * (2 * (80 * 64 + 64 * 64) + 43 * 64) / (0.1071e-3 * 2 / 2.125),
        "gradient_multiply_adds_per_second": 880_000 * (2 * (80 * 64 + 64 * 64) + 43 * 64 + 43 * 64
                                                        + 2 * (80 * 64 + 2 * 64 * 64)) / 2.3966e-3}
"""One NVIDIA H200: a device-to-device copy's bytes read and written per second (4.3 TB/s), the
cost of one small kernel in a replayed CUDA graph (benchmarks/iteration_profile.py, 0.95-0.98 us),
and the multiply-adds per second (``network_multiply_adds``) of the networks' kernels at train-ref,
from the CUDA kernels' own times in torch's profiler at warpsim 786d1b8
(benchmarks/results/train-speed/profile-gradient-kernels-train-ref-nvidia-h200.json): the forward
kernel's 220,000 agents of a rollout step in 0.1008 ms (4.6e13), the gradients' kernels' 880,000
samples of an optimizer step in 2.397 ms (1.9e13)."""
MEASURED = {("train-ref", "off"): {"rollout_ms": 149.0, "update_ms": 697.0, "commit": "9c79ab3"},
            ("train-ref", "on"): {"rollout_ms": 65.6, "update_ms": 405.0, "commit": "37f6da5"},
            ("grid", "on"): {"rollout_ms": 17.0, "update_ms": 20.1, "commit": "37f6da5"},
            ("train-ref", "kernels"): {"rollout_ms": 65.4, "update_ms": 436.7, "commit": "786d1b8"}}
"""The H200 records (benchmarks/results/nvidia-h200.json and train-speed/nvidia-h200.json; at 786d1b8 the
log train-speed/session-786d1b8-nvidia-h200.log) of one 100-step iteration, eager networks, the fused path or
the fused path with gradient kernels, in CUDA graphs: the rollout and the update in milliseconds, and the
commit measured."""
ROLLOUT_STEPS = 100
"""The train tier's rollout (warpsim bench --steps)."""
SMALL_BATCHES = (2, 4)
"""The environments the two counts are made at."""
FREE = {"view", "_unsafe_view", "reshape", "transpose", "t", "permute", "expand", "select", "slice", "unsqueeze",
        "squeeze", "split", "split_with_sizes", "unbind", "chunk", "narrow", "as_strided", "detach", "alias",
        "lift_fresh", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "_local_scalar_dense",
        "is_nonzero", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "unfold", "view_as_real",
        "_reshape_alias", "diagonal", "movedim", "flatten", "unflatten", "expand_as", "view_as", "tensor_split"}
"""Operations that launch no kernel: views, allocations and reads of metadata."""
EXTERN_KERNELS = {"mm", "bmm", "addmm", "baddbmm", "matmul", "linear", "actor_critic", "actor_critic_backward"}
"""Operations a compiled region calls as they are, inductor fusing nothing into them: the matrix products
and warpsim's own kernels of the networks (``fused_forward.actor_critic`` and its gradients). Each moves
its operands, its inputs and its outputs; but see ``OWN_LAUNCHERS``."""
NETWORK_KERNELS = {"actor_critic", "actor_critic_backward"}
"""warpsim's networks' kernels, whose multiply-adds are counted (``network_multiply_adds``)."""
OWN_LAUNCHERS = {"actor_critic_backward"}
"""warpsim's operations that launch several kernels on a GPU (``fused_forward.launch_backward``): counted
as that launcher runs them, its Triton kernel's launches recorded (``RecordedKernel``) and its torch
operations counted, rather than as one kernel of its operands."""
GATHERS = {"index", "index_select", "gather", "take", "embedding"}
"""Operations that read of their first input only the rows they gather (a minibatch of the rollout)."""
LAUNCH = re.compile(r"^\s+(?:\w+ = )?(extern_kernels\.\w+|\w+\.run|cpp_fused_\w+|torch\.ops\.\w+\.\w+\.default)\(",
                    re.MULTILINE)
"""A launch in inductor's wrapper code: a matrix product, a Triton kernel, a C++ kernel or an operation
called as it is (such as warpsim's own kernel)."""


def touched_bytes(tensor: torch.Tensor) -> int:
    """Bytes an operation reads or writes of ``tensor``: each element once, an expanded one once."""
    if tensor.device.type == "meta":
        return 0
    elements = tensor.numel()
    if any(stride == 0 for stride, size in zip(tensor.stride(), tensor.shape) if size > 1):
        elements = min(elements, tensor.untyped_storage().nbytes() // tensor.element_size())
    return elements * tensor.element_size()


def tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [tensor for item in value for tensor in tensors(item)]
    if isinstance(value, dict):
        return [tensor for item in value.values() for tensor in tensors(item)]
    return []


def network_multiply_adds(name: str, args: tuple) -> int:
    """The multiply-adds of warpsim's networks' kernels on these arguments: ``actor_critic``'s forward pass
    (each trunk's layers, then both heads), or ``actor_critic_backward``'s gradients as its whole-trunk
    launches compute them (the trunks again, the features' gradients and each head's, each layer's weight's
    and the gradients below each further layer). Every row of the observations as the kernels take them,
    their padding included."""
    operands = args[2:] if name == "actor_critic_backward" else args
    observations, weight, hidden_weights, policy_weight, shared = (operands[index] for index in (0, 1, 3, 9, 13))
    runs, rows, inputs = observations.shape
    hidden, further, outputs = weight.shape[1], hidden_weights.shape[1], policy_weight.shape[1]
    trunk, heads, trunks = inputs * hidden + further * hidden * hidden, (outputs + 1) * hidden, 1 if shared else 2
    per_row = trunks * trunk + heads
    if name == "actor_critic_backward":
        per_row += heads + trunks * (trunk + further * hidden * hidden)
    return runs * rows * per_row


@dataclass
class Tally:
    kernels: int = 0
    bytes: int = 0
    extern_bytes: int = 0
    network_multiply_adds: int = 0
    """Of warpsim's networks' kernels (``network_multiply_adds``)."""
    gradient_multiply_adds: int = 0
    """Of those, the gradients' kernels'."""
    launched_within: int = 0
    """Kernels that operations called as they are launch beyond one each (``OWN_LAUNCHERS``)."""
    by_op: collections.Counter = field(default_factory=collections.Counter)

    def add(self, other: Tally) -> None:
        self.kernels += other.kernels
        self.bytes += other.bytes
        self.extern_bytes += other.extern_bytes
        self.network_multiply_adds += other.network_multiply_adds
        self.gradient_multiply_adds += other.gradient_multiply_adds
        self.launched_within += other.launched_within
        self.by_op.update(other.by_op)


class RecordedKernel:
    """Stands for one of the gradients' Triton kernels (``actor_critic_backward_kernel``) while their
    launcher runs on the CPU: each launch counts one kernel, whose programs of each block of inputs read
    the observations, the head's gradients and the trunk's and head's weights once, and which writes its
    partial sums: of one layer's weight and bias (``fused_actor_critic_backward``) or of the whole
    trunk's and its head's (``fused_trunk_backward``)."""

    def __init__(self, kernel, tally: Tally):
        self.arg_names, self.tally = kernel.arg_names, tally

    def __getitem__(self, grid: tuple[int, int, int]):
        def launch(*args, **constants) -> None:
            named = dict(zip(self.arg_names, args))
            trunk_and_head = ["weight_ptr", "bias_ptr", "hidden_weights_ptr", "hidden_biases_ptr", "head_weight_ptr"]
            value = ["value_weight_ptr", "value_gradient_ptr"] if constants["WITH_VALUE"] else []
            read = ["observations_ptr", *trunk_and_head, "head_gradient_ptr", *value]
            programs, runs, input_blocks = grid
            if "target_out" in named:  # one layer's weight and bias
                summed = named["target_out"] * named["target_in"] + named["target_out"]
            else:  # the trunk's, its head's (its bias: OUTPUTS) and, with the value, the value's column's
                summed = sum(named[name].numel() for name in trunk_and_head) // runs + constants["OUTPUTS"]
                summed += named["value_weight_ptr"].numel() // runs + 1 if value else 0
            self.tally.kernels += 1
            self.tally.bytes += input_blocks * sum(touched_bytes(named[name]) for name in read) \
                + runs * programs * summed * 4
            self.tally.by_op["actor_critic_backward_kernel"] += 1
        return launch


def storage_of(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage().data_ptr()


class Counter(TorchDispatchMode):
    """Counts kernels and bytes of the aten operations run inside it (``tally``), and the most bytes
    any of them read of each storage (``reads``, by ``storage_of``)."""

    def __init__(self):
        super().__init__()
        self.tally = Tally()
        self.reads: dict[int, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if name in NETWORK_KERNELS:
            computed = network_multiply_adds(name, args)
            self.tally.network_multiply_adds += computed
            if name == "actor_critic_backward":
                self.tally.gradient_multiply_adds += computed
        if name in OWN_LAUNCHERS:
            launched = launcher_tally(args)
            self.tally.add(launched)
            self.tally.extern_bytes += launched.bytes
            self.tally.launched_within += launched.kernels - 1
        elif name not in FREE:
            inputs = tensors(args) + tensors(kwargs)
            read = [touched_bytes(t) for t in inputs]
            if name in GATHERS and inputs:  # the rows gathered, not the whole source
                read[0] = min(read[0], sum(touched_bytes(t) for t in tensors(result)))
            for tensor, count in zip(inputs, read):
                self.reads[storage_of(tensor)] = max(self.reads.get(storage_of(tensor), 0), count)
            moved = sum(read) + sum(touched_bytes(t) for t in tensors(result))
            self.tally.kernels += 1
            self.tally.bytes += moved
            self.tally.by_op[name] += 1
            if name in EXTERN_KERNELS:
                self.tally.extern_bytes += moved
        return result


def launcher_tally(args: tuple) -> Tally:
    """The kernels and bytes of ``fused_forward.launch_backward`` on these arguments on a GPU: its Triton
    kernel's launches recorded, its torch operations counted. Its partial sums are as many as at a real
    size, where every run has more blocks of rows than programs: a fixed part, not one per block."""
    from unittest import mock

    from warpsim.train import actor_critic_backward_kernel, fused_forward

    counter = Counter()
    with contextlib.ExitStack() as patched:
        for name in ("fused_actor_critic_backward", "fused_trunk_backward"):
            kernel = getattr(actor_critic_backward_kernel, name)
            patched.enter_context(mock.patch.object(actor_critic_backward_kernel, name,
                                                    RecordedKernel(kernel, counter.tally)))
        with counter:
            runs = args[2].shape[0]
            fused_forward.launch_backward(*args, programs=max(1, fused_forward.PARTIAL_SUMS // runs))
    return counter.tally


class CountedRegions:
    """While entered, every ``compiled.Compiled`` call adds its region's kernels and bytes to the
    active counter, which is paused while the region runs; a region is analysed at its first call."""

    def __init__(self, counter: Counter):
        self.counter = counter
        self.regions: dict[tuple, Tally] = {}
        self._original = compiled.Compiled.__call__

    def __enter__(self) -> CountedRegions:
        regions, original, counter = self.regions, self._original, self.counter

        def call(wrapper, *args):
            key = (id(wrapper), tuple(tuple(t.shape) for t in tensors(args)))
            with _disable_current_modes():
                if key not in regions:
                    regions[key] = analyse(wrapper, args)
                result = original(wrapper, *args)
            counter.tally.add(regions[key])
            return result

        compiled.Compiled.__call__ = call  # type: ignore[method-assign]
        return self

    def __exit__(self, *exception) -> None:
        compiled.Compiled.__call__ = self._original  # type: ignore[method-assign]


def analyse(wrapper: compiled.Compiled, args: tuple) -> Tally:
    """A compiled region's launches (from inductor's wrapper code) and bytes (inductor's count, or
    what it reads of its inputs and its outputs) plus the operands of the kernels it calls, at these
    arguments' shapes."""
    from torch._inductor import metrics
    from torch._inductor.utils import run_and_get_code

    eager = Counter()
    with eager:
        outputs = wrapper.function(*args)  # the operands of the kernels it calls, counted eagerly
    metrics.reset()
    _, codes = run_and_get_code(wrapper.compiled, *args)
    launches = [launch for code in codes for launch in LAUNCH.findall(code)]
    tally = Tally(kernels=len(launches) + eager.tally.launched_within, extern_bytes=eager.tally.extern_bytes,
                  network_multiply_adds=eager.tally.network_multiply_adds,
                  gradient_multiply_adds=eager.tally.gradient_multiply_adds)
    tally.by_op.update("fused" if launch.endswith(".run") or launch.startswith("cpp_fused") else "extern"
                       for launch in launches)
    if metrics.num_bytes_accessed:
        tally.bytes = int(metrics.num_bytes_accessed) + eager.tally.extern_bytes
    else:  # each input as much as its most reading operation reads of it: a minibatch's rows of the rollout
        read = sum(min(touched_bytes(t), eager.reads.get(storage_of(t), 0)) for t in tensors(args))
        tally.bytes = read + sum(touched_bytes(t) for t in tensors(outputs)) + eager.tally.extern_bytes
    return tally


def uncounted(function):
    """``function``, run with the counters paused."""
    def run(*args, **kwargs):
        with _disable_current_modes():
            return function(*args, **kwargs)
    return run


PATHS = {"off": dict(compile="off"), "on": dict(compile="on"), "kernels": dict(compile="on", gradient_kernels=True)}
"""The trainer's paths counted, by name: eager (the baseline), fused, and fused with the update's networks
and gradients as warpsim's kernels (``TrainConfig.gradient_kernels``)."""


def trainer_for(name: str, num_envs: int, path: str, device: str) -> Trainer:
    named = NAMED_CONFIGS[name]
    backend = "cuda" if device.startswith("cuda") else "numpy"
    return Trainer(TrainConfig(env=named.env, env_params=dict(named.params), num_envs=num_envs,
                               rollout_steps=ROLLOUT_STEPS,
                               backend=backend, precision="bf16", graphs="off", **PATHS[path],
                               seed=0, **FIXED_UPDATE))


def count(name: str, num_envs: int, path: str, device: str) -> dict:
    """One rollout and one update of the config at ``num_envs``, counted after a first iteration (which
    compiles): kernels per environment step and per optimizer step, and the bytes of each."""
    trainer = trainer_for(name, num_envs, path, device)
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
            "rollout_ops": rollout.tally.by_op, "agents": trainer.env.num_agents * num_envs,
            "update_kernels": update.tally.kernels / optimizer_steps,
            "update_bytes": update.tally.bytes / optimizer_steps,
            "update_multiply_adds": update.tally.network_multiply_adds / optimizer_steps,
            "update_gradient_multiply_adds": update.tally.gradient_multiply_adds / optimizer_steps,
            "update_ops": update.tally.by_op,
            "samples": sum(trainer.samples_per_role) * trainer.runs / trainer.minibatches}


def at_size(small: dict, large: dict, key: str, units: str, real_units: float) -> float:
    """Bytes per unit at ``real_units``, from two counts: a fixed part (weights) and a part per unit."""
    slope = (large[key] - small[key]) / (large[units] - small[units])
    return slope + (small[key] - slope * small[units]) / real_units


def model(name: str, path: str, device: str) -> dict:
    """The config's figures at its own size, from counts at two small ones, and the predicted GPU time."""
    named = NAMED_CONFIGS[name]
    small, large = (count(name, num_envs, path, device) for num_envs in SMALL_BATCHES)
    real_agents = large["agents"] * named.num_envs / SMALL_BATCHES[1]
    real_samples = large["samples"] * named.num_envs / SMALL_BATCHES[1]
    rollout_bytes = at_size(small, large, "rollout_bytes", "agents", real_agents)
    update_bytes = at_size(small, large, "update_bytes", "samples", real_samples)
    rollout_multiply_adds = large["rollout_multiply_adds"] / large["agents"]
    update_multiply_adds = large["update_multiply_adds"] / large["samples"]
    gradient_multiply_adds = large["update_gradient_multiply_adds"] / large["samples"]
    optimizer_steps = 4 * 4
    rollout_seconds = ROLLOUT_STEPS * (large["rollout_kernels"] * H200["seconds_per_kernel"]
                                       + rollout_bytes * real_agents / H200["copy_bytes_per_second"]
                                       + rollout_multiply_adds * real_agents / H200["forward_multiply_adds_per_second"])
    update_seconds = optimizer_steps * (large["update_kernels"] * H200["seconds_per_kernel"]
                                        + update_bytes * real_samples / H200["copy_bytes_per_second"]
                                        + (update_multiply_adds - gradient_multiply_adds) * real_samples
                                        / H200["forward_multiply_adds_per_second"]
                                        + gradient_multiply_adds * real_samples
                                        / H200["gradient_multiply_adds_per_second"])
    return {
        "config": name, "path": path, **PATHS[path], "device": device, "precision": "bf16",
        "warpsim_commit": source_commit(),
        "rollout": {"kernels_per_step": large["rollout_kernels"], "bytes_per_agent_step": rollout_bytes,
                    "network_multiply_adds_per_agent_step": rollout_multiply_adds,
                    "ops": dict(large["rollout_ops"].most_common(12)), "predicted_ms": 1e3 * rollout_seconds},
        "update": {"kernels_per_step": large["update_kernels"], "bytes_per_sample": update_bytes,
                   "network_multiply_adds_per_sample": update_multiply_adds,
                   "gradient_multiply_adds_per_sample": gradient_multiply_adds,
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


def report(result: dict) -> str:
    rollout, update = result["rollout"], result["update"]
    path = {"off": "eager", "on": "fused", "kernels": "fused, gradient kernels"}[result["path"]]
    lines = [f"{result['config']}, {path} ({result['device']}):",
             f"  rollout policy step: {rollout['kernels_per_step']:.1f} kernels per step, "
             f"{rollout['bytes_per_agent_step']:,.0f} B per agent-step"
             f"{multiply_adds(rollout['network_multiply_adds_per_agent_step'], 'agent-step')}; predicted "
             f"{rollout['predicted_ms']:.0f} ms per 100-step rollout on an H200",
             f"  update: {update['kernels_per_step']:.1f} kernels per optimizer step, "
             f"{update['bytes_per_sample']:,.0f} B per sample"
             f"{multiply_adds(update['network_multiply_adds_per_sample'], 'sample')}; predicted "
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
                             "kernels (kernels), or all three (default)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", type=torch_device)
    parser.add_argument("--json", type=json_output("cost model figures"), help="also write every figure to this file")
    args = parser.parse_args()
    paths = list(PATHS) if args.path == "all" else [args.path]
    records = {}
    for name in args.config or ["train-ref"]:
        results = {}
        for path in paths:
            results[path] = model(name, path, args.device)
            print(report(results[path]), flush=True)
        # The last path's figures (with gradient kernels when all were counted), the others beside them.
        records[name] = {**results[paths[-1]], "baseline": results.get("off"), "fused": results.get("on")}
    if args.json:
        figures = next(iter(records.values())) if len(records) == 1 else records
        write_output(args.json, json.dumps(figures, indent=1).encode(), "cost model figures")


if __name__ == "__main__":
    main()
