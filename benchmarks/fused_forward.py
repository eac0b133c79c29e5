"""The networks at a config's real size: the fused kernels (``fused_forward.actor_critic`` and its
gradients) against the eager forward and autograd under bf16 autocast, per environment step, with
what the forward kernel moves.

    python benchmarks/fused_forward.py [--config train-ref] [--hidden-size 64] [--repeats 50] [--results-dir DIR]

Every role's networks of one run, initialised as training initialises them, play their role's
agents of the config's ``num_envs`` environments on random bfloat16 observations: the eager
forward (two MLPs as batched products, each layer's activations written and read back) and the
kernel (each block of rows read from memory once, only the outputs written). Times are the median of
``--repeats`` steps, each timed alone; on a GPU by CUDA events around its kernels, with the host's queuing of
them hidden as a replayed CUDA graph hides it (``timed``); on a CPU the kernel's form is the
eager computation, so only the Python path is exercised. The kernel's bytes are its operands
(observations, weights, outputs); its bandwidth is those over its time. On a GPU the kernel is
also timed alone at each launch shape (rows and warps per program). The update's side is timed
as a forward pass with gradients and a backward pass from random gradients of the outputs, the
eager networks' (autograd) against the kernels' (``launch_backward``, also at each of its launch
shapes on a GPU, and at numbers of programs that are multiples of its SMs). Autograd's products whose rows are
not aligned (the first layers, the policy head) are timed as they are and padded (``product_alignment_times``). The discrete roles' rollout step is timed
with their actions sampled in the kernel and sampled after it in torch (``sampling_times``), and their update's loss
and gradients computed in the gradients' kernels, and in a forward kernel of its own before them, against the kernels
apart (``loss_times``). The record
(device, config, commit) is summarised on a few lines, and with --results-dir DIR appended to
DIR/<device>.json.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import statistics
import sys
import time

import torch

from warpsim.bench.runner import keep_result, saved_note
from warpsim.commands import add_results_dir, positive_int, torch_device
from warpsim.configs import NAMED_CONFIGS
from warpsim.device import device_name, resolve_placement
from warpsim.registry import make
from warpsim.roles import roles_of
from warpsim.source_commit import source_commit
from warpsim.train import categorical_terms, fused_backward, fused_forward, fused_loss
from warpsim.train.action_heads import CategoricalHeads, roles_noise
from warpsim.train.config import TrainConfig
from warpsim.train.fused_backward import TrunkLaunch
from warpsim.train.policy import RolePolicies
from warpsim.train.run_policies import RunPolicies

LAUNCH_SHAPES = [(16, 4, 2, True), (32, 4, 2, True), (64, 4, 1, True), (64, 4, 2, True), (64, 4, 3, True),
                 (64, 8, 2, True), (128, 4, 2, True), (128, 8, 2, True), (64, 4, 1, False)]
"""(rows, warps, stages, aligned rows) per program at which a GPU times the kernel alone; the last is the launch
before rows were aligned (``fused_forward.ROW_ALIGNMENT``)."""
BACKWARD_LAUNCH_SHAPES = [(16, 4, True, 1, True, None), (16, 8, True, 1, True, None), (32, 8, True, 1, True, None),
                          (32, 8, True, 2, True, None), (32, 16, True, 1, True, None), (32, 8, True, 1, True, 128),
                          (16, 8, True, 1, True, 128), (16, 4, False, 1, True, None), (32, 4, False, 1, True, None),
                          (32, 8, False, 1, True, None), (32, 8, False, 2, True, None), (32, 8, True, 1, False, None)]
"""(rows, warps, whole trunks, stages, aligned rows, registers a thread is held to) per program at which a GPU times
the gradients' kernels alone: a whole trunk's gradients a launch (at width 64, the actor's and the critic's: 238 and
210 registers by 4 warps at 16 rows, two programs an SM; 161 and 124 by 8, one and two; 178 and 128 by 8 at 32
rows, the default, one and two; by 16 at 32 rows 128 with 72 bytes of spills and 98, twice the warps of an SM's
one program; held to 128 by 8 at 32 rows, two programs an SM, with 192 bytes of spills and none, and at 16 rows with
24 and none; ptxas, sm_90) or a layer's (``launch_backward``'s ``whole_trunks``); the last the default before rows
were aligned. A block of 32 rows by 8 warps issues 120 machine instructions a row in the actor's program, 16 by 8
held to 128 registers 162, 32 by 8 held so 133: which keeps an SM the busier, only a GPU tells."""


LOSS_LAUNCH_SHAPES = [
    (TrunkLaunch(16, 4, None), TrunkLaunch(16, 4, None)), (TrunkLaunch(16, 4, None), TrunkLaunch(32, 8, 128)),
    (TrunkLaunch(32, 8, None), TrunkLaunch(32, 8, 128)), (TrunkLaunch(16, 8, None), TrunkLaunch(16, 8, None)),
    (TrunkLaunch(32, 8, 168), TrunkLaunch(32, 8, 128))]
"""(the actor's program, the critic's) at which a GPU times the gradients' kernels computing the loss
(``fused_loss.launch``): the default first (``fused_loss.ACTOR_LAUNCH``, ``CRITIC_LAUNCH``), then the critic's at 32
rows by 8 warps held to 128 registers (two programs an SM of twice the warps, 147 instructions a row against 125),
both at the shape of the gradients' kernels without the loss (the actor's one program an SM), both at 16 rows by 8
warps (one program, fewer registers), and the actor's held to 168 registers (120 bytes of spills; ptxas, sm_90, at
train-ref's shapes)."""


def timed(step, repeats: int, device: torch.device) -> float:
    """Median seconds of ``step()`` over ``repeats`` calls after one to warm up (compiles). On a GPU, the time
    its kernels take: each call is queued behind a spinning kernel that outlasts the host's queuing of it, so
    that the host's Python and launches (which a training rollout, a replayed CUDA graph, does not pay) count
    only where the device would wait for them."""
    step()
    seconds, spin = [], 0
    if device.type == "cuda":
        started = time.perf_counter()
        step()
        torch.cuda.synchronize()
        spin = int(2 * (time.perf_counter() - started) * spin_cycles_per_second())
    for _ in range(repeats):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(spin)
            start.record()
            step()
            end.record()
            end.synchronize()
            seconds.append(start.elapsed_time(end) / 1e3)
        else:
            started = time.perf_counter()
            step()
            seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


@functools.cache
def spin_cycles_per_second(cycles: int = 10_000_000) -> float:
    """The rate of ``torch.cuda._sleep``'s spinning kernel on this GPU, in cycles a second."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(cycles)
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    end.synchronize()
    return cycles / (start.elapsed_time(end) / 1e3)


def unaligned(arguments: tuple, inputs: int, observations_at: int = 0) -> tuple:
    """``actor_critic``'s (or its gradients') arguments with the observations, at ``observations_at``, and the
    trunks' first weights cut back to ``inputs`` entries a row, contiguous: the operands before rows were
    aligned."""
    cut = {observations_at, observations_at + 1, observations_at + 5}
    return tuple(value[..., :inputs].contiguous() if index in cut and value.numel() else value
                 for index, value in enumerate(arguments))


def launch_shape_times(operands: list[tuple], backward_operands: list[tuple], inputs: list[int], repeats: int,
                       device: torch.device) -> tuple[list[dict], list[dict]]:
    """The forward kernel's time at each of ``LAUNCH_SHAPES`` on every role's ``operands`` (``actor_critic``'s
    arguments, their rows aligned; each role's observation has ``inputs`` entries), and the gradients' kernels'
    at each of ``BACKWARD_LAUNCH_SHAPES`` on ``backward_operands``."""
    # cut once, so that the times are the kernels' alone
    as_they_were = [unaligned(arguments, size) for arguments, size in zip(operands, inputs)]
    backward_as_they_were = [unaligned(arguments, size, 2) for arguments, size in zip(backward_operands, inputs)]

    def forward(block_rows: int, warps: int, stages: int, aligned: bool) -> None:
        for arguments in operands if aligned else as_they_were:
            fused_forward.launch(*arguments, block_rows=block_rows, warps=warps, stages=stages)

    def backward(block_rows: int, warps: int, whole_trunks: bool, stages: int, aligned: bool,
                 max_registers: int | None) -> None:
        for arguments in backward_operands if aligned else backward_as_they_were:
            fused_backward.launch_backward(*arguments, block_rows=block_rows, warps=warps, whole_trunks=whole_trunks,
                                          stages=stages, max_registers=max_registers)

    forward_times = [{"block_rows": block_rows, "warps": warps, "stages": stages, "aligned": aligned,
                      "ms": 1e3 * timed(functools.partial(forward, block_rows, warps, stages, aligned), repeats,
                                        device)}
                     for block_rows, warps, stages, aligned in LAUNCH_SHAPES]
    backward_times = [{"block_rows": block_rows, "warps": warps, "whole_trunks": whole_trunks, "stages": stages,
                       "aligned": aligned, "max_registers": max_registers,
                       "ms": 1e3 * timed(functools.partial(backward, block_rows, warps, whole_trunks, stages, aligned,
                                                           max_registers), repeats, device)}
                      for block_rows, warps, whole_trunks, stages, aligned, max_registers in BACKWARD_LAUNCH_SHAPES]
    return forward_times, backward_times


PROGRAM_WAVES = (2, 4, 8)
"""Programs of the gradients' kernels per run, as multiples of the GPU's SMs, at which a GPU times them beside the
default (``fused_backward.PARTIAL_SUMS``, 512 over the runs: on an H200's 132 SMs the actor's last wave is 88% full,
one program an SM)."""


def program_count_times(backward_operands: list[tuple], multiprocessors: int, repeats: int,
                        device: torch.device) -> list[dict]:
    """The gradients' kernels at their default shape on ``backward_operands`` (one run's), with the default number
    of programs (``programs`` None) and with each of ``PROGRAM_WAVES`` times ``multiprocessors``."""
    def backward(programs: int | None) -> None:
        for arguments in backward_operands:
            fused_backward.launch_backward(*arguments, programs=programs)

    return [{"programs": programs, "ms": 1e3 * timed(functools.partial(backward, programs), repeats, device)}
            for programs in (None, *(waves * multiprocessors for waves in PROGRAM_WAVES))]


def product_alignment_times(networks: list, inputs: list[torch.Tensor], repeats: int,
                            device: torch.device) -> list[dict]:
    """The products of autograd's update (the fused path without gradient kernels) whose operands' rows are not
    aligned, each timed forward and backward under bf16 autocast, rows as they are and padded with zeros
    (``fused_forward.aligned_rows``): the first layers (the observations times both trunks' first weights, one
    product as the fused update runs them) and the policy head (its outputs padded too). A matrix library's
    fast kernels want rows of 16 bytes; where padding makes these faster, the fused update should pad."""
    generator = torch.Generator(device).manual_seed(1)
    cases = []
    for network, batch in zip(networks, inputs):
        firsts = [trunk[0] for trunk in (network.trunk, network.value_trunk) if trunk is not None]
        first_gradient = torch.randn((*batch.shape[:2], sum(layer.weight.shape[1] for layer in firsts)),
                                     device=device, generator=generator)
        head = network.policy_head
        features = torch.randn((*batch.shape[:2], head.weight.shape[2]), device=device, generator=generator,
                               requires_grad=True)
        head_gradient = torch.randn((*batch.shape[:2], head.weight.shape[1]), device=device, generator=generator)
        cases.append((batch, firsts, first_gradient, head, features, head_gradient))

    def first_layers(aligned: bool) -> None:
        for batch, firsts, gradient, *_ in cases:
            weight = torch.cat([layer.weight for layer in firsts], 1)
            observations, weight = (fused_forward.aligned_rows(batch), fused_forward.aligned_rows(weight)) \
                if aligned else (batch, weight)
            with torch.autocast(device.type, dtype=torch.bfloat16, cache_enabled=False):
                both = torch.baddbmm(torch.cat([layer.bias for layer in firsts], 1).unsqueeze(1), observations,
                                     weight.transpose(1, 2))
            torch.autograd.grad(both, [parameter for layer in firsts for parameter in layer.parameters()], gradient)

    def policy_head(aligned: bool) -> None:
        for *_, head, features, gradient in cases:
            outputs = head.weight.shape[1]
            missing = -outputs % fused_forward.ROW_ALIGNMENT if aligned else 0
            weight = torch.nn.functional.pad(head.weight, (0, 0, 0, missing))
            bias = torch.nn.functional.pad(head.bias, (0, missing))
            with torch.autocast(device.type, dtype=torch.bfloat16, cache_enabled=False):
                logits = torch.baddbmm(bias.unsqueeze(1), features, weight.transpose(1, 2))[..., :outputs]
            torch.autograd.grad(logits, [features, head.weight, head.bias], gradient)

    return [{"products": name, "aligned": aligned,
             "ms": 1e3 * timed(functools.partial(products, aligned), repeats, device)}
            for name, products in (("first layers", first_layers), ("policy head", policy_head))
            for aligned in (False, True)]


def measure(config_name: str, num_envs: int, repeats: int, device: torch.device, hidden_size: int) -> dict:
    named = NAMED_CONFIGS[config_name]
    env = make(named.env, 1, backend="numpy", **named.params)
    roles = roles_of(env.spec, torch.device("cpu"))
    names = [role.name for role in roles]
    torch.manual_seed(0)
    settings = TrainConfig(env=named.env, hidden_size=hidden_size)
    policies = RunPolicies([RolePolicies.for_config(settings, env.spec, names)]).to(device)
    generator = torch.Generator(device).manual_seed(0)
    inputs = [torch.randn((1, num_envs * role.count, env.spec.observation_size_of(role.name)), device=device,
                          generator=generator).to(torch.bfloat16) for role in roles]
    networks = [policies.network(name) for name in names]

    def eager() -> None:
        with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, cache_enabled=False):
            for network, batch in zip(networks, inputs):
                network(batch)

    def fused() -> None:
        with torch.no_grad():
            for network, batch in zip(networks, inputs):
                network.fused(batch)

    with torch.no_grad():
        operands = [network.fused_operands(batch) for network, batch in zip(networks, inputs)]
        outputs = [network.fused(batch) for network, batch in zip(networks, inputs)]
    moved = sum(tensor.numel() * tensor.element_size() for arguments in operands for tensor in arguments
                if isinstance(tensor, torch.Tensor)) + sum(
        tensor.numel() * tensor.element_size() for pair in outputs for tensor in pair)
    eager_seconds, fused_seconds = timed(eager, repeats, device), timed(fused, repeats, device)
    agents = sum(batch.shape[1] for batch in inputs)
    sampling = sampling_times(policies, names, inputs, generator, repeats, device)
    parameters = [list(network.parameters()) for network in networks]
    gradients = [tuple(torch.randn(output.shape, device=device, generator=generator) for output in pair)
                 for pair in outputs]

    def eager_learning() -> None:
        for network, batch, weights, (policy_gradient, value_gradient) in zip(networks, inputs, parameters, gradients):
            with torch.autocast(device.type, dtype=torch.bfloat16, cache_enabled=False):
                policy, value = network(batch)
            torch.autograd.grad((policy.float(), value), weights, (policy_gradient, value_gradient))

    def fused_learning() -> None:
        for network, batch, weights, output_gradients in zip(networks, inputs, parameters, gradients):
            torch.autograd.grad(network.fused(batch), weights, output_gradients)

    eager_learning_seconds, fused_learning_seconds = (timed(eager_learning, repeats, device),
                                                      timed(fused_learning, repeats, device))
    with torch.no_grad():
        # the kernel's own outputs' gradients: without a Gaussian's log standard deviations, in its dtype
        backward_operands = [
            (gradient[0][..., :arguments[9].shape[1]].to(fused_forward.policy_dtype(arguments[9])).contiguous(),
             gradient[1], *arguments) for gradient, arguments in zip(gradients, operands)]

    alignment = product_alignment_times(networks, inputs, repeats, device)
    loss = loss_times(policies, names, inputs, generator, repeats, device, hidden_size, settings.hidden_layers)
    # the kernels alone at each launch shape, on a GPU: the defaults' choice, measured
    shapes, backward_shapes = launch_shape_times(operands, backward_operands, [batch.shape[-1] for batch in inputs],
                                                 repeats, device) if device.type == "cuda" else ([], [])
    program_counts = program_count_times(
        backward_operands, torch.cuda.get_device_properties(device).multi_processor_count, repeats,
        device) if device.type == "cuda" else []
    return {"config": config_name, "num_envs": num_envs, "hidden_size": hidden_size, "agents": agents,
            "eager_ms": 1e3 * eager_seconds, "fused_ms": 1e3 * fused_seconds, "speedup": eager_seconds / fused_seconds,
            "fused_bytes_per_agent": moved / agents, "fused_bytes_per_second": moved / fused_seconds,
            "default_block_rows": fused_forward.BLOCK_ROWS, "default_stages": fused_forward.STAGES,
            "launch_shapes": shapes,
            "eager_learning_ms": 1e3 * eager_learning_seconds, "fused_learning_ms": 1e3 * fused_learning_seconds,
            "learning_speedup": eager_learning_seconds / fused_learning_seconds,
            "default_backward_block_rows": fused_backward.BACKWARD_BLOCK_ROWS,
            "default_whole_trunks": fused_backward.whole_trunks_fit(hidden_size, settings.hidden_layers),
            "backward_launch_shapes": backward_shapes, "backward_program_counts": program_counts,
            "product_alignment": alignment, "sampling": sampling, "loss": loss}


def sampling_times(policies: RunPolicies, names: list[str], inputs: list[torch.Tensor], generator: torch.Generator,
                   repeats: int, device: torch.device) -> dict | None:
    """The discrete roles' rollout step, as the rollout runs it (the networks' kernel sampling their policy,
    ``fused_sampling.actor_critic_sample``) and as the kernel's outputs sampled after it in torch
    (``categorical_terms.sample``); None where no role's actions are discrete."""
    discrete = []
    for name, batch in zip(names, inputs):
        head = policies.heads[name]
        if isinstance(head, CategoricalHeads):
            draws = roles_noise([head], [batch.shape[1]], generator, device)[0]
            discrete.append((policies.network(name), batch, list(head.action_levels), list(draws)))
    if not discrete:
        return None

    def in_kernel() -> None:
        with torch.no_grad():
            for network, batch, levels, draws in discrete:
                network.fused_sample(batch, draws, levels)

    def after_kernel() -> None:
        with torch.no_grad():
            for network, batch, levels, draws in discrete:
                categorical_terms.sample(network.fused(batch)[0][0], draws, levels)

    return {"in_kernel_ms": 1e3 * timed(in_kernel, repeats, device),
            "after_kernel_ms": 1e3 * timed(after_kernel, repeats, device)}


def loss_times(policies: RunPolicies, names: list[str], inputs: list[torch.Tensor], generator: torch.Generator,
               repeats: int, device: torch.device, hidden_size: int, layers: int) -> dict | None:
    """The update's loss and gradients of the discrete roles whose networks ``fused_loss`` takes, each role's rows as
    a minibatch: computed in the gradients' kernels (``fused_loss.ppo_loss_gradients``, ``gradient_kernels='loss'``)
    against the kernels that the update runs without it (the networks' forward kernel, the loss's kernels of
    discrete actions both ways and the gradients' kernels; the loss's own arithmetic between them, which the compiled
    step fuses into a few kernels, left out); on a GPU the former also at each of ``LOSS_LAUNCH_SHAPES``, and the loss
    computed in a forward kernel of its own instead (``loss_in_forward_ms``). None where no role's are taken."""
    cases = []
    for name, batch in zip(names, inputs):
        head, network = policies.heads[name], policies.network(name)
        if not (isinstance(head, CategoricalHeads)
                and fused_loss.takes(list(head.action_levels), network.value_trunk is None, hidden_size, layers)):
            continue
        rows, levels = batch.shape[1], list(head.action_levels)
        picks = torch.randperm(rows, device=device, generator=generator)[None]
        actions = torch.stack([torch.randint(0, level, (1, rows), device=device, generator=generator,
                                             dtype=torch.int32) for level in levels], -1)
        columns = torch.randn((4, 1, rows), device=device, generator=generator)
        coefficients = torch.tensor([[0.2, 0.0, 0.5, 0.01]], device=device)
        cases.append((network.fused_operands(batch), picks, actions, columns, coefficients, levels))
    if not cases:
        return None

    def in_kernels() -> None:
        for (observations, *weights, _), picks, actions, columns, coefficients, levels in cases:
            fused_loss.ppo_loss_gradients(observations, picks, actions, *columns, coefficients, levels[0], False,
                                          *weights)

    def apart() -> None:
        for (observations, *weights), picks, actions, columns, _, levels in cases:
            operands = (observations[:, picks[0]], *weights)  # the minibatch's rows gathered, as without the loss
            policy, values = fused_forward.actor_critic(*operands)
            logits = policy[..., :operands[9].shape[1]]
            categorical_terms.categorical_terms(logits, actions, levels)
            gradient = categorical_terms.categorical_terms_backward(columns[0], columns[1], logits, actions, levels)
            fused_backward.actor_critic_backward(gradient[..., :logits.shape[-1]], columns[2], *operands)

    with torch.no_grad():
        return {"in_kernels_ms": 1e3 * timed(in_kernels, repeats, device),
                "apart_ms": 1e3 * timed(apart, repeats, device),
                "in_forward_ms": loss_in_forward_ms(cases, repeats, device) if device.type == "cuda" else None,
                "launch_shapes": loss_launch_shape_times(cases, repeats, device) if device.type == "cuda" else []}


def _launch_loss(cases: list[tuple], **options) -> None:
    """``fused_loss.launch`` with these ``options`` on each of ``cases``: (``fused_operands``, the minibatch's rows of
    those observations int64[1, B], actions int32[1, B, A], columns float32[4, 1, B] (the log-probabilities when
    sampled, the advantages, the values, the returns), coefficients float32[1, 4], levels) of each role."""
    for (observations, *weights, _), picks, actions, columns, coefficients, levels in cases:
        fused_loss.launch(observations, picks, actions, *columns, coefficients, levels[0], False, *weights, **options)


def loss_launch_shape_times(cases: list[tuple], repeats: int, device: torch.device) -> list[dict]:
    """The gradients' kernels computing the loss (``fused_loss.launch``) at each of ``LOSS_LAUNCH_SHAPES``, on
    ``cases`` (as ``_launch_loss`` takes them)."""
    return [{"actor": actor._asdict(), "critic": critic._asdict(),
             "ms": 1e3 * timed(functools.partial(_launch_loss, cases, actor=actor, critic=critic, in_forward=False),
                               repeats, device)}
            for actor, critic in LOSS_LAUNCH_SHAPES]


def loss_in_forward_ms(cases: list[tuple], repeats: int, device: torch.device) -> float:
    """The loss computed in a forward kernel of its own, then the gradients' kernels reading its gradients
    (``fused_loss.launch`` ``in_forward``), on ``cases`` (as ``_launch_loss`` takes them)."""
    return 1e3 * timed(functools.partial(_launch_loss, cases, in_forward=True), repeats, device)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=sorted(NAMED_CONFIGS), default="train-ref")
    parser.add_argument("--num-envs", type=positive_int, help="default: the config's own")
    parser.add_argument("--repeats", type=positive_int, default=50)
    parser.add_argument("--hidden-size", type=positive_int, default=TrainConfig.hidden_size,
                        help="the networks' width (tag-chase's presets: 128)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", type=torch_device)
    add_results_dir(parser)
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    result = measure(args.config, args.num_envs or NAMED_CONFIGS[args.config].num_envs, args.repeats, device,
                     args.hidden_size)
    backend = "cuda" if device.type == "cuda" else "numpy"
    name = device_name(resolve_placement(backend, device.index if device.type == "cuda" else None))
    record = {"tool": "warpsim", "benchmark": "fused_forward", "date": datetime.date.today().isoformat(),
              "device": name, "backend": backend, **result, "warpsim_commit": source_commit()}
    path = keep_result(record, args.results_dir)
    print(f"{args.config} on {name}, {result['agents']} agents a step: eager {result['eager_ms']:.3f} ms, fused "
          f"{result['fused_ms']:.3f} ms ({result['speedup']:.1f}x), the kernel moving "
          f"{result['fused_bytes_per_agent']:.0f} B per agent at {result['fused_bytes_per_second'] / 1e9:.0f} GB/s")
    for shape in result["launch_shapes"]:
        print(f"  the kernel alone, {shape['block_rows']} rows by {shape['warps']} warps a program, "
              f"{shape['stages']} stages, rows {'aligned' if shape['aligned'] else 'unaligned'}: {shape['ms']:.3f} ms")
    print(f"  forward and backward: eager {result['eager_learning_ms']:.3f} ms, fused "
          f"{result['fused_learning_ms']:.3f} ms ({result['learning_speedup']:.1f}x)")
    for shape in result["backward_launch_shapes"]:
        held = f", held to {shape['max_registers']} registers" if shape["max_registers"] else ""
        print(f"  the gradients' kernels alone, {'a whole trunk' if shape['whole_trunks'] else 'a layer'} a launch, "
              f"{shape['block_rows']} rows by {shape['warps']} warps a program, {shape['stages']} stages{held}, rows "
              f"{'aligned' if shape['aligned'] else 'unaligned'}: {shape['ms']:.3f} ms")
    for count in result["backward_program_counts"]:
        print(f"  the gradients' kernels alone, {count['programs'] or 'the default number of'} programs: "
              f"{count['ms']:.3f} ms")
    for products in ("first layers", "policy head"):
        unaligned_ms, aligned_ms = (case["ms"] for case in result["product_alignment"]
                                    if case["products"] == products)
        print(f"  autograd's {products}, forward and backward: rows as they are {unaligned_ms:.3f} ms, aligned "
              f"{aligned_ms:.3f} ms")
    if result["sampling"]:
        print(f"  the discrete roles' step, sampled in the kernel {result['sampling']['in_kernel_ms']:.3f} ms, after "
              f"it in torch {result['sampling']['after_kernel_ms']:.3f} ms")
    if result["loss"]:
        print(f"  their update's loss and gradients, in the gradients' kernels {result['loss']['in_kernels_ms']:.3f} "
              f"ms, their kernels apart {result['loss']['apart_ms']:.3f} ms")
        if result["loss"]["in_forward_ms"] is not None:
            print("    in a forward kernel of its own, then the gradients' kernels "
                  f"{result['loss']['in_forward_ms']:.3f} ms")
        for shape in result["loss"]["launch_shapes"]:
            actor, critic = (f"{part['block_rows']} rows x {part['warps']} warps"
                             + (f" held to {part['max_registers']} registers" if part["max_registers"] else "")
                             for part in (shape["actor"], shape["critic"]))
            print(f"    the actor's programs {actor}, the critic's {critic}: {shape['ms']:.3f} ms")
    print(saved_note(args.results_dir, [path]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
