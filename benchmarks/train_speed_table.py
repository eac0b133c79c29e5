"""One table of a GPU session's training-speed figures: what ``benchmarks/gpu_session.sh OUT train-speed``
(or ``gradient-kernels``, or ``first``) wrote under OUT, read back.

    python benchmarks/train_speed_table.py OUT [--top 10]

Prints, in Markdown, a row per ``warpsim bench`` record of a policy tier (OUT/bench/*.json): its config,
tier and path (eager, fused, fused with gradient kernels), agent-steps/s, the rollout's and the update's
milliseconds, and the cost model's prediction for the same config and path (OUT/iteration-cost.json,
``benchmarks/iteration_cost.py --json``); with the device and the commit. Then, for each profile
(OUT/profile-*.json, ``benchmarks/iteration_profile.py --json``), the ``--top`` most expensive CUDA kernels
of one rollout step and of one optimizer step.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from warpsim.commands import positive_int

POLICY_TIERS = ("sim+policy", "train")
PATH_NAMES = {"off": "eager", "on": "fused", "kernels": "fused, gradient kernels",
              "loss": "fused, the loss in the gradient kernels"}
"""The cost model's paths (``iteration_cost.PATHS``), as the table names them."""


def path_of(record: dict) -> str:
    """The trainer's path a bench record ran: ``iteration_cost.PATHS``' name for it."""
    if not record.get("compiled"):
        return "off"
    update = record.get("update", {})
    return "loss" if update.get("loss_kernels") else "kernels" if update.get("gradient_kernels") else "on"


def predictions(cost: dict) -> dict[tuple[str, str], dict]:
    """The cost model's records by (config, path), from its --json file (one config's record, with the other
    paths' beside it under ``iteration_cost.BESIDE``'s keys, or such records by config)."""
    records = [cost] if "config" in cost else list(cost.values())
    found = {}
    for record in records:
        for each in (record, record.get("baseline"), record.get("fused"), record.get("kernels")):
            if each:
                found[(each["config"], each["path"])] = each
    return found


def milliseconds(record: dict, key: str) -> str:
    return f"{record[key]['median']:.1f}" if key in record else ""


def commit(record: dict) -> str:
    source = record.get("warpsim_commit") or {}
    return source.get("commit", "?")[:7] + ("" if source.get("clean", True) else " (modified)")


def table(out: Path) -> str:
    """The figures table of the records under ``out``; a line saying what is missing where there are none."""
    records = [record for file in sorted((out / "bench").glob("*.json")) for record in json.loads(file.read_text())
               if record.get("tier") in POLICY_TIERS]
    cost_file = out / "iteration-cost.json"
    predicted = predictions(json.loads(cost_file.read_text())) if cost_file.exists() else {}
    if not records:
        return f"no records of a policy tier in {out / 'bench'}\n"
    lines = ["| config | tier | path | agent-steps/s | rollout ms | update ms | model: rollout (policy side) / "
             "update ms | device | commit |", "|---|---|---|---:|---:|---:|---|---|---|"]
    for record in records:
        path = path_of(record)
        model = predicted.get((record["config"], path))
        estimate = (f"{model['rollout']['predicted_ms']:.0f} / {model['update']['predicted_ms']:.0f}"
                    if model and record["tier"] == "train" else "")
        lines.append(f"| {record['config']} | {record['tier']} | {PATH_NAMES[path]} | "
                     f"{record['agent_steps_per_second']['median']:.3g} | {milliseconds(record, 'rollout_ms')} | "
                     f"{milliseconds(record, 'update_ms')} | {estimate} | {record['device']} | {commit(record)} |")
    return "\n".join(lines) + "\n"


def top_kernels(profile: dict, top: int) -> str:
    """The most expensive kernels of one rollout step and of one optimizer step of an iteration_profile record."""
    path = PATH_NAMES["loss" if profile.get("loss_kernels") else "kernels" if profile.get("gradient_kernels")
                      else profile["compile"]]
    lines = []
    for phase, title in (("rollout_per_step", "a rollout step"), ("update_per_optimizer_step", "an optimizer step")):
        figures = profile[phase]
        unaligned = figures.get("unaligned_gemms")  # recorded since 8776924
        loads = (f"; matrix products loading under 16 bytes at a time: {unaligned['launches']:g} launches, "
                 f"{unaligned['ms']:.3f} ms" if unaligned else "")
        lines += ["", f"{profile['config']}, {path}, {title}: {figures['kernels']:.1f} kernels, "
                      f"{figures['gpu_ms']:.3f} ms of GPU time{loads} ({profile['device']}, {commit(profile)})", "",
                  "| kernel | launches | ms |", "|---|---:|---:|"]
        lines += [f"| `{kernel['name'][:100]}` | {kernel['launches']:g} | {kernel['ms']:.4f} |"
                  for kernel in figures["top"][:top]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="a GPU session's output folder (benchmarks/gpu_session.sh OUT ...)")
    parser.add_argument("--top", type=positive_int, default=10, help="kernels listed per phase (default 10)")
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        parser.error(f"{args.out} is not a folder; give the OUT of benchmarks/gpu_session.sh OUT train-speed")
    print(table(args.out), end="")
    for file in sorted(args.out.glob("profile-*.json")):
        print(top_kernels(json.loads(file.read_text()), args.top), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
