"""Two ways to run R networks of one shape at once, timed: warpsim's stacked layers
(``RunPolicies``: one ``torch.baddbmm`` per layer) against ``torch.func.stack_module_state``
with ``vmap`` over ``functional_call`` of R ``ActorCritic`` networks.

    python benchmarks/stacked_networks.py                  # tag-small's tagger networks, R = 8, on the CPU
    python benchmarks/stacked_networks.py --runs 16 --batch 4096 --hidden 128 --device cuda

Each way runs a forward and a backward pass of the same loss on the same inputs; the
script prints the median time of each and whether the outputs agree.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch
from torch.func import functional_call, stack_module_state

import warpsim
from warpsim.commands import positive_int, torch_device
from warpsim.train import TrainConfig
from warpsim.train.policy import RolePolicies
from warpsim.train.presets import PRESETS
from warpsim.train.run_policies import RunPolicies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=positive_int, default=8)
    parser.add_argument("--batch", type=positive_int, default=512, help="samples per run (a minibatch; default 512)")
    parser.add_argument("--hidden", type=positive_int, default=64)
    parser.add_argument("--device", default="cpu", type=torch_device)
    parser.add_argument("--repeats", type=positive_int, default=200)
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    torch.set_num_threads(1)
    preset = PRESETS["tag-small"]
    config = TrainConfig(env=preset["env"], env_params=preset["env_params"], hidden_size=args.hidden,
                         stack_observations=preset["stack_observations"])
    spec = warpsim.make(config.env, 1, backend="numpy", **config.env_params).spec
    inputs = spec.observation_size * preset["stack_observations"]
    runs = [RolePolicies.for_config(config, spec, list(spec.role_names)) for _ in range(args.runs)]
    stacked = RunPolicies(runs).to(device).network("tagger")
    networks = [policies.network("tagger").to(device) for policies in runs]
    parameters, buffers = stack_module_state(networks)  # copies: the two ways train apart
    template = networks[0]

    def one(parameters, buffers, observations):
        return functional_call(template, (parameters, buffers), (observations,))

    vmapped = torch.vmap(one)
    observations = torch.randn(args.runs, args.batch, inputs, device=device)

    def timed(step) -> float:
        times = []
        for _ in range(args.repeats):
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            started = time.perf_counter()
            step()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - started)
        return statistics.median(times[args.repeats // 10:])

    def stacked_step():
        logits, value = stacked(observations)
        (logits.square().mean() + value.square().mean()).backward()

    def vmap_step():
        logits, value = vmapped(parameters, buffers, observations)
        (logits.square().mean() + value.square().mean()).backward()

    for tensor in parameters.values():
        tensor.requires_grad_(True)
    with torch.no_grad():
        agree = torch.allclose(stacked(observations)[0], vmapped(parameters, buffers, observations)[0], atol=1e-5)
    baddbmm, vmap = timed(stacked_step), timed(vmap_step)
    print(f"R={args.runs}, {args.batch} samples per run, {inputs} inputs, hidden {args.hidden} x 2, "
          f"{args.device}: stacked baddbmm {baddbmm * 1e3:.3f} ms, vmap {vmap * 1e3:.3f} ms per forward and "
          f"backward ({vmap / baddbmm:.2f}x); outputs agree: {agree}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
