"""The sim tier of docs/benchmarks.md: step + observations + rewards + auto-reset.

Random actions are drawn once, on the device, and stay in the action buffer; the
timed loop is nothing but ``env.step()``. Start-up (allocation, kernel compilation
and the first launches) is timed apart; then ``repeats`` timed runs of ``steps``
steps each, synchronised before the clock is read, give a median and a spread.

With ``max_seconds`` (the default on the numpy backend, see DEFAULT_MAX_SECONDS),
E is scaled down until the warm-up and timed steps fit in that time: the largest of
1, 2, 4, ... (or the requested E) whose measured step time fits. Records keep the
requested and the run E; compare them per agent-step. Every record carries the
physical floor of its step (:mod:`warpsim.bench.floor`) and names what produced it: the
git commit of the warpsim checkout (``warpsim_commit``) and the versions of Python, the
packages and the CUDA driver.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import torch

from warpsim.actions import RandomActions
from warpsim.bench.floor import UNKNOWN, floor_fields
from warpsim.configs import BenchConfig
from warpsim.device import THREADS_PER_BLOCK, cuda_driver_version, device_name, resolve_placement, simulator_enabled
from warpsim.environment import Environment
from warpsim.errors import InvalidValueError, RunFileError
from warpsim.files import make_directory, replace_atomically, usable_directory
from warpsim.graph import EAGER
from warpsim.registry import make
from warpsim.source_commit import source_commit
from warpsim.validation import require_int

Progress = Callable[[str], None]
"""Receives one line of progress, e.g. :func:`print_progress`."""

DEFAULT_MAX_SECONDS = {"numpy": 60.0}
"""Time budget of one run per backend when none is given: the CPU baseline is scaled
down to about a minute (docs/benchmarks.md); GPU runs take the E they are given."""


def run_sim(config: BenchConfig, backend: str = "auto", steps: int = 100, repeats: int = 5,
            warmup_steps: int = 10, seed: int = 0, max_seconds: float | None = None,
            progress: Progress | None = None, graphs: bool = False) -> dict:
    """Times the sim tier of ``config``; returns one result record (see docs/benchmarks.md).

    ``max_seconds`` (None: DEFAULT_MAX_SECONDS of the backend, ``math.inf``: no limit)
    bounds the warm-up and timed steps by scaling E down (see the module docstring).
    With ``graphs`` a repeat replays the ``steps`` steps captured as one CUDA graph
    (``Environment.graph``); the record's ``launches`` says which ran.
    """
    check_graphs(graphs, backend)
    steps, repeats, warmup_steps = (require_int(name, value, 1) for name, value in
                                    (("steps", steps), ("repeats", repeats), ("warmup_steps", warmup_steps)))
    if max_seconds is not None and not max_seconds > 0:
        raise InvalidValueError(
            f"max_seconds={max_seconds!r} is not allowed; give a number of seconds > 0 (inf: no limit)")
    if max_seconds is None:
        max_seconds = DEFAULT_MAX_SECONDS.get(resolve_placement(backend).backend, math.inf)
    num_envs, steps, warmup_steps = fit_to_time(
        config.num_envs, lambda e: _seconds_per_step(config, e, backend, seed),
        steps, repeats, warmup_steps, max_seconds, progress)
    started = time.perf_counter()
    env = _ready_env(config, num_envs, backend, seed)
    startup = time.perf_counter() - started
    for _ in range(warmup_steps):
        env.step()
    graph = env.graph(steps) if graphs else None
    if graph is not None:
        graph.replay()  # the capture
    synchronize(env)

    rates, host_seconds = [], []
    for repeat in range(repeats):
        begin = time.perf_counter()
        if graph is not None:
            graph.replay()
        else:
            for _ in range(steps):
                env.step()
        host_seconds.append((time.perf_counter() - begin) / steps)
        synchronize(env)
        rates.append(steps * env.num_envs / (time.perf_counter() - begin))
        if progress:
            progress(f"repeat {repeat + 1}/{repeats}: {rates[-1] * env.num_agents:.3e} agent-steps/s")
    return make_record(config, env, rates, startup, steps, repeats, warmup_steps, max_seconds,
                       launches=graph.launches if graph else EAGER, host_seconds=host_seconds)


def check_graphs(graphs: bool, backend: str) -> None:
    """Refuses timing CUDA graphs where none can be captured (the numpy backend, the simulator)."""
    if not isinstance(graphs, bool):
        raise InvalidValueError(f"graphs={graphs!r} is not allowed; give True (CUDA graphs) or False (eager)")
    if graphs and (resolve_placement(backend).backend != "cuda" or simulator_enabled()):
        raise InvalidValueError(f"timing CUDA graphs with backend={backend!r} is not possible: they need the cuda "
                                f"backend on a GPU (here steps would run eagerly); time eager launches (graphs off)")


def fit_to_time(requested_envs: int, seconds_per_step: Callable[[int], float], steps: int, repeats: int,
                warmup_steps: int, max_seconds: float, progress: Progress | None = None,
                least_envs: int = 1) -> tuple[int, int, int]:
    """``(E, steps, warmup_steps)`` whose warm-up and timed steps take at most about ``max_seconds``.

    ``seconds_per_step(E)`` measures one step of E environments. E is the largest of
    L, 2L, 4L, ... (L = ``least_envs``, all capped at the requested E) whose step fits; steps
    are cut only when even L environments do not fit.
    """
    if math.isinf(max_seconds):
        return requested_envs, steps, warmup_steps
    total_steps = warmup_steps + repeats * steps
    least_envs = min(least_envs, requested_envs)
    fitted, num_envs = None, least_envs
    while True:
        step_seconds = seconds_per_step(num_envs)
        if step_seconds * total_steps > max_seconds:
            break
        fitted = num_envs
        if num_envs == requested_envs:
            break
        num_envs = min(2 * num_envs, requested_envs)
    if fitted is None:
        scale = max_seconds / (step_seconds * total_steps)
        result = (least_envs, max(1, int(steps * scale)), max(1, int(warmup_steps * scale)))
    else:
        result = (fitted, steps, warmup_steps)
    if progress and result[:2] != (requested_envs, steps):
        cut = "" if result[1] == steps else f", {result[1]} steps per repeat (of {steps})"
        progress(f"scaled down to E={result[0]} (of {requested_envs}){cut} to fit in {max_seconds:g} s")
    return result


def _seconds_per_step(config: BenchConfig, num_envs: int, backend: str, seed: int, steps: int = 3) -> float:
    env = _ready_env(config, num_envs, backend, seed)
    env.step()  # the first steps after allocation also pay for the memory's first touch
    synchronize(env)
    begin = time.perf_counter()
    for _ in range(steps):
        env.step()
    synchronize(env)
    return (time.perf_counter() - begin) / steps


def _ready_env(config: BenchConfig, num_envs: int, backend: str, seed: int) -> Environment:
    """The environment with random actions in its action buffer, stepped once (kernels compiled)."""
    env = make(config.env, num_envs, backend=backend, seed=seed, checked=False, **config.params)
    generator = torch.Generator(device=env.device).manual_seed(seed)
    env.actions.copy_(RandomActions(env.spec, env.device)(tuple(env.actions.shape[:2]), generator))
    env.step()
    synchronize(env)
    return env


def synchronize(env: Environment) -> None:
    if env.device.type == "cuda":
        torch.cuda.synchronize(env.device)


def spread(values: list[float]) -> dict:
    """The median, least and most of timed values."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def make_record(config: BenchConfig, env: Environment, rates: list[float], startup: float, steps: int,
                repeats: int, warmup_steps: int, max_seconds: float, tier: str = "sim",
                precision: str = "fp32", launches: str = EAGER, host_seconds: list[float] | None = None) -> dict:
    """The result record; ``host_seconds`` per step, if given, is the time until the host had launched
    a repeat's work (before it waits for the device): ``host_us_per_step``."""
    params = env.params
    mapping = (f"one thread per agent, {THREADS_PER_BLOCK} threads per block"
               if env.backend == "cuda" else "NumPy, vectorised over environments and agents")
    env_rates = spread(rates)
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "tool": "warpsim",
        "config": config.name,
        "tier": tier,
        "device": device_name(env.placement),
        "backend": env.backend,
        "precision": precision,
        "launches": launches,
        "env": env.display_name,
        "requested_num_envs": config.num_envs,
        "num_envs": env.num_envs,
        "num_agents": env.num_agents,
        "observation": env.spec.observation_label or UNKNOWN,
        "thread_mapping": mapping,
        "params": dataclasses.asdict(params),
        "warpsim_commit": source_commit(),
        "versions": _versions(),
        "max_seconds": None if math.isinf(max_seconds) else max_seconds,
        "warmup_steps": warmup_steps,
        "repeats": repeats,
        "steps_per_repeat": steps,
        "startup_seconds": startup,
        "env_steps_per_second": env_rates,
        "agent_steps_per_second": spread([rate * env.num_agents for rate in rates]),
        "floor": floor_fields(env, env_rates["median"]),
        **({"host_us_per_step": spread([1e6 * seconds for seconds in host_seconds])} if host_seconds else {}),
    }


def _versions() -> dict:
    """Python's, the installed packages' (None: not installed) and the CUDA driver's (None: no GPU)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for package in ("warpsim", "numba", "numba-cuda", "torch", "numpy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    versions["cuda_driver"] = cuda_driver_version()
    return versions


def device_slug(record: dict) -> str:
    """File name stem for a device, e.g. ``nvidia-h100-80gb-hbm3`` or ``cpu-amd-epyc-7b13``: a GPU's own
    name for a backend that runs on CUDA (warpsim's ``cuda``, a peer's, e.g. ``jax-cuda``)."""
    name = record["device"] if "cuda" in record["backend"] else f"cpu {record['device']}"
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


NOT_SAVED = "records were printed only; give --results-dir DIR to append them to DIR/<device>.json"
"""What a benchmark says where it was given no ``--results-dir``: it saves nothing, so that a run from a checkout
changes none of its committed records."""


def keep_result(record: dict, results_dir: Path | None) -> Path | None:
    """``append_result`` where a results directory was given (a benchmark's ``--results-dir``); None where not."""
    return None if results_dir is None else append_result(record, results_dir)


def saved_note(results_dir: Path | None, paths: list[Path | None]) -> str:
    """The line that ends a benchmark: the files its records (``keep_result``'s ``paths``) were appended to, or
    how to save them (``NOT_SAVED``)."""
    if results_dir is None:
        return NOT_SAVED
    files = sorted({str(path) for path in paths if path is not None})
    return f"records appended to {', '.join(files)}" if files else "no record to append: none ran"


def append_result(record: dict, results_dir: Path) -> Path:
    """Appends ``record`` to ``<results_dir>/<device-slug>.json`` (a JSON list), atomically."""
    path = usable_directory(results_dir, "results directory") / f"{device_slug(record)}.json"
    make_directory(path.parent, "results directory")
    try:
        records = json.loads(path.read_text()) if path.exists() else []
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RunFileError(f"results file {path} cannot be read ({str(error).splitlines()[0]}); move it away "
                           f"or give another --results-dir") from None
    if not isinstance(records, list):
        raise RunFileError(f"results file {path} holds a {type(records).__name__}, not a list of records")
    records.append(record)
    text = json.dumps(records, indent=1) + "\n"
    replace_atomically(path, text.encode(), "results file")
    return path


def summary(record: dict) -> str:
    agent = record["agent_steps_per_second"]["median"]
    env_rate = record["env_steps_per_second"]["median"]
    scaled = "" if record["num_envs"] == record["requested_num_envs"] else f" (of {record['requested_num_envs']})"
    observation = "" if record["observation"] == UNKNOWN else f" {record['observation']}"  # none declared
    return (f"{record['tier']} tier, {record['env']} E={record['num_envs']}{scaled} N={record['num_agents']}"
            f"{observation} on {record['backend']} ({record['device']}, {record['precision']}, "
            f"{record.get('launches', EAGER)} launches{_networks(record)}): "
            f"{agent:.3e} agent-steps/s "
            f"({env_rate:.3e} env-steps/s), median of {record['repeats']} x {record['steps_per_repeat']} steps; "
            f"start-up {record['startup_seconds']:.1f} s" + _host_time(record))


def _networks(record: dict) -> str:
    """How a policy tier ran the networks, where not eagerly: fused, and with gradient kernels (the loss in them)."""
    if not record.get("compiled"):
        return ""
    update = record.get("update", {})
    kernels = (" and gradient kernels with the loss" if update.get("loss_kernels")
               else " and gradient kernels" if update.get("gradient_kernels") else "")
    return ", fused networks" + kernels


def _host_time(record: dict) -> str:
    host = record.get("host_us_per_step")
    phases = (f"; rollout {record['rollout_ms']['median']:.3g} ms, update {record['update_ms']['median']:.3g} ms "
              f"per iteration" if "update_ms" in record else "")
    return (f"; host {host['median']:.1f} us per step" if host else "") + phases


def print_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
