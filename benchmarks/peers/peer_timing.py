"""What every peer script shares: its command line, the timing loop and the JSON it prints.

Standard library only: each peer script runs in its tool's own virtual environment,
where warpsim is not installed. A script prints exactly one JSON object on stdout,
also when its tool cannot run (``status`` then says why), and exits 0 in both cases.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import traceback


class OverBudget(Exception):
    """A run would not finish within ``--max-seconds``."""


def taggers_and_runners(num_agents: int) -> tuple[int, int]:
    """Splits N agents 1:10 like warpsim's configs: 110 = 10 + 100, 25 = 2 + 23 (at least one of each)."""
    if num_agents < 2:
        raise ValueError(f"--num-agents={num_agents} is not allowed; give at least 2 (one tagger, one runner)")
    taggers = min(num_agents - 1, max(1, round(num_agents / 11)))
    return taggers, num_agents - taggers


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--num-agents", type=int, required=True,
                        help="agents per environment (the tag scripts split them 1:10, taggers to runners)")
    parser.add_argument("--num-envs", default="1",
                        help="environments stepped together; a comma list is swept and the fastest reported")
    parser.add_argument("--steps", type=int, default=20, help="steps per timed repeat")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (median, min and max reported)")
    parser.add_argument("--warmup-steps", type=int, default=5, help="untimed steps before the first repeat")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=120.0,
                        help="time budget of one batch size's warm-up and timed steps")
    args = parser.parse_args()
    try:
        args.num_envs = [int(value) for value in args.num_envs.split(",")]
    except ValueError:
        parser.error(f"--num-envs={args.num_envs!r} is not allowed; give integers >= 1 separated by commas")
    for name in ("num_agents", "steps", "repeats", "warmup_steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')}={getattr(args, name)} is not allowed; give an integer >= 1")
    if min(args.num_envs) < 1:
        parser.error(f"--num-envs={args.num_envs} is not allowed; every batch size must be >= 1")
    return args


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def cpu_name() -> str:
    """The CPU model, read the way warpsim names a CPU device."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def time_steps(step, num_envs: int, num_agents: int, args: argparse.Namespace, wait=None) -> dict:
    """Warms up, then times ``args.repeats`` runs of ``args.steps`` calls of ``step``.

    Steps per repeat are cut (to 1 at least) when the warm-up's pace says the runs
    would not fit in ``--max-seconds``, as warpsim's bench cuts them for one
    environment; a batch too slow even for that raises OverBudget. ``wait``, for a tool
    that launches its work asynchronously (JAX), is called with what ``step`` returned
    and returns once that work is done: after each warm-up step, so the pace is real,
    and at the end of each repeat, before the clock is read (as warpsim's bench
    synchronises the GPU).
    """
    wait = wait or (lambda _launched: None)
    begin = time.perf_counter()
    for done in range(1, args.warmup_steps + 1):
        wait(step())
        warmup_seconds = time.perf_counter() - begin
        if warmup_seconds > args.max_seconds:
            raise OverBudget(f"E={num_envs}: {done} warm-up steps took {warmup_seconds:.0f} s, more than "
                             f"--max-seconds={args.max_seconds:g}")
    seconds_per_step = warmup_seconds / args.warmup_steps
    steps = min(args.steps, int((args.max_seconds - warmup_seconds) / (seconds_per_step * args.repeats)))
    if steps < 1:
        raise OverBudget(f"E={num_envs} takes {seconds_per_step:.3g} s a step: warm-up and {args.repeats} "
                         f"repeats of one step need about {warmup_seconds + seconds_per_step * args.repeats:.0f} s, "
                         f"more than --max-seconds={args.max_seconds:g}")
    env_rates = []
    for _ in range(args.repeats):
        begin = time.perf_counter()
        for _ in range(steps):
            launched = step()
        wait(launched)
        env_rates.append(steps * num_envs / (time.perf_counter() - begin))
    return {"num_envs": num_envs, "steps": steps,
            "env_steps_per_second": spread(env_rates),
            "agent_steps_per_second": spread([rate * num_agents for rate in env_rates])}


def torch_device(torch, result: dict) -> tuple[str, object]:
    """Where a PyTorch tool runs, as JAX picks for a JAX tool: the GPU where torch sees one, else the CPU.

    Fills in ``result``'s device and backend, and returns the device's name for the tool and the
    ``wait`` of :func:`time_steps` (a GPU's queue is waited for before the clock is read).
    """
    if torch.cuda.is_available():
        result.update(device=torch.cuda.get_device_name(), backend="torch-cuda")
        return "cuda", lambda _launched: torch.cuda.synchronize()
    result["backend"] = "torch-cpu"
    return "cpu", None


def failure_status(error: BaseException) -> str:
    """``status`` for an error: memory, time, missing tool (or backend), else the error itself.

    PyTorch reports a CPU allocation failure as a RuntimeError ("DefaultCPUAllocator:
    can't allocate memory"), hence the look at the message.
    """
    if isinstance(error, ModuleNotFoundError):
        return f"missing tool: {error}"
    if isinstance(error, MemoryError) or "alloc" in str(error).lower() or "out of memory" in str(error).lower():
        return f"memory: {type(error).__name__}: {error}"
    if isinstance(error, OverBudget):
        return f"time: {error}"
    return f"error: {type(error).__name__}: {error}"


def main(tool: str, measure, env: str = "tag environment") -> None:
    """Runs ``measure(args, result)`` and prints ``result`` as one JSON line; ``env`` names what it times.

    ``measure`` fills in ``result`` (tool_version, env, params, ... and the rates) and
    may raise; the error then becomes ``status``.
    """
    args = parse_args(f"Times the sim step of {tool}'s {env} (one JSON object on stdout).")
    result = {"tool": tool, "device": cpu_name(), "num_agents": args.num_agents,
              "requested_num_envs": max(args.num_envs), "steps": args.steps, "repeats": args.repeats,
              "warmup_steps": args.warmup_steps, "max_seconds": args.max_seconds,
              "versions": {"python": platform.python_version()}, "status": "ok"}
    try:
        measure(args, result)
    except Exception as error:  # noqa: BLE001 - any failure of the tool is reported, not raised
        result["status"] = failure_status(error)
        traceback.print_exc(file=sys.stderr)
    print(json.dumps(result))
    sys.stdout.flush()


def best_of_batch_sizes(make_step, args: argparse.Namespace, result: dict, wait=None) -> None:
    """Times each batch size of ``--num-envs``, smallest first; ``result`` gets the fastest per agent-step.

    ``make_step(num_envs)`` builds the environment with its actions drawn once and
    returns the function that steps it (``wait``: as in :func:`time_steps`). Every size
    tried is listed under ``batch_sweep``; the sweep stops at the first size that runs
    out of time or memory, as every larger one would too.
    """
    sweep, best = [], None
    result["batch_sweep"] = sweep
    for num_envs in sorted(set(args.num_envs)):
        begin = time.perf_counter()
        try:
            step = make_step(num_envs)
            startup = time.perf_counter() - begin
            timing = time_steps(step, num_envs, args.num_agents, args, wait)
        except (OverBudget, MemoryError, RuntimeError) as error:
            sweep.append({"num_envs": num_envs, "status": failure_status(error)})
            if best is None:
                raise
            break
        timing["startup_seconds"] = startup
        sweep.append({"num_envs": num_envs, "status": "ok", "steps": timing["steps"],
                      "agent_steps_per_second": timing["agent_steps_per_second"]["median"]})
        if best is None or timing["agent_steps_per_second"]["median"] > best["agent_steps_per_second"]["median"]:
            best = timing
    result.update(best)


def single_env(args: argparse.Namespace, tool: str) -> None:
    """Refuses a batch size other than 1 for a tool whose environment is one world.

    Stepping several such worlds is a Python loop over them: the same rate per world.
    """
    if args.num_envs != [1]:
        raise ValueError(f"--num-envs={','.join(map(str, args.num_envs))} is not allowed for {tool}: "
                         f"its environment steps one world; give 1")
