"""Other tools' environments, timed side by side with warpsim (optional extras).

Each peer has a script in ``benchmarks/peers/`` for its tag environment (WarpDrive's CPU
TagContinuous, VMAS, MPE2 and JaxMARL simple_tag) and some for MPE's simple_spread (VMAS
and JaxMARL). A script runs in its tool's own Python environment, times the sim step and
prints one JSON object. This module runs such a script with a given Python executable,
under a timeout, and turns its output into a sim-tier record like those of
:mod:`warpsim.bench.runner` (``tool`` tells them apart), ready for ``runner.append_result``.
See ``benchmarks/peers/README.md`` for creating the environments.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from warpsim.configs import NAMED_CONFIGS
from warpsim.errors import InvalidValueError
from warpsim.source_commit import source_commit
from warpsim.validation import require_int

PEER_SCRIPTS = {"warpdrive": "warpdrive_cpu.py", "vmas": "vmas_tag.py", "mpe2": "mpe2_tag.py",
                "jaxmarl": "jaxmarl_tag.py"}
"""Peer name (as in ``--peer NAME=PYTHON``) -> its script of the tag environment in ``benchmarks/peers/``."""
SPREAD_PEER_SCRIPTS = {"vmas": "vmas_spread.py", "jaxmarl": "jaxmarl_spread.py"}
"""Peer name -> its script of MPE's simple_spread (``benchmarks/mpe_speed.py --peer``)."""
PEER_SCRIPTS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "peers"
"""Where the scripts are in a source checkout (they are not part of the installed package)."""
DEFAULT_TIMEOUT = 1800.0
"""Seconds before a peer's process is stopped: a VMAS sweep at N=110 takes about ten minutes on two cores."""
_RATES = ("env_steps_per_second", "agent_steps_per_second")
_COPIED = ("tool", "device", "backend", "precision", "env", "requested_num_envs", "num_envs", "num_agents",
           "observation", "thread_mapping", "params", "versions", "max_seconds", "warmup_steps", "repeats",
           "startup_seconds", "batch_sweep", *_RATES)
_NEEDED_WHEN_OK = ("tool", "device", "backend", "num_envs", "num_agents", "repeats", "steps", *_RATES)


GPU_CONFIGS = ("train-ref", "headline")
"""The named configs whose E x N peers are timed at on a GPU (``benchmarks/gpu_peers.py``): tag_continuous's."""


def taggers_and_runners(num_agents: int) -> tuple[int, int]:
    """Splits N agents 1:10 like the named configs: 110 = 10 + 100, 25 = 2 + 23 (at least one of each).

    The peer scripts split the same way (``benchmarks/peers/peer_timing.py``).
    """
    num_agents = require_int("num_agents", num_agents, 2)  # a tagger and a runner
    taggers = min(num_agents - 1, max(1, round(num_agents / 11)))
    return taggers, num_agents - taggers


def tag_params(num_agents: int) -> dict:
    """warpsim's tag_continuous parameters that the peers are compared with at N agents.

    The train-ref rules (partial observation, K=10), with runners staying in the game
    when tagged: the peers' agents never leave, so the load per step stays the same.
    """
    taggers, runners = taggers_and_runners(num_agents)
    params = dict(NAMED_CONFIGS["train-ref"].params, num_taggers=taggers, num_runners=runners,
                  runner_exits_game_after_tagged=False)
    params["num_other_agents_observed"] = min(params["num_other_agents_observed"], num_agents - 1)
    return params


def parse_peer(text: str, scripts: Mapping[str, str] = PEER_SCRIPTS) -> tuple[str, Path]:
    """``"vmas=peers-venv/vmas/bin/python"`` -> ``("vmas", Path(...))``, checked against the peers of ``scripts``;
    a bare command (``vmas=python3``) is looked up on PATH."""
    name, separator, python = text.partition("=")
    if not separator or not python:
        raise InvalidValueError(f"--peer {text!r} is not allowed; give NAME=PYTHON, e.g. "
                         f"vmas=peers-venv/vmas/bin/python (names: {', '.join(scripts)})")
    executable = Path(shutil.which(python) or python) if os.sep not in python else Path(python)
    check_peer(name, executable, scripts)
    return name, executable


def check_peer(name: str, python: Path, scripts: Mapping[str, str] = PEER_SCRIPTS) -> None:
    """Raises ValueError unless ``name`` is a peer of ``scripts`` and ``python`` an executable file."""
    if name not in scripts:
        raise InvalidValueError(f"peer {name!r} is not known; allowed: {', '.join(scripts)}")
    if not python.is_file() or not os.access(python, os.X_OK):
        raise InvalidValueError(f"peer {name!r}: Python executable {str(python)!r} does not exist or cannot be run; "
                         f"create that tool's virtual environment as benchmarks/peers/README.md shows")


def run_peer(name: str, python: Path, num_agents: int, num_envs: tuple[int, ...] = (1,), steps: int = 20,
             repeats: int = 3, warmup_steps: int = 5, max_seconds: float = 120.0,
             timeout: float = DEFAULT_TIMEOUT, scripts_dir: Path = PEER_SCRIPTS_DIR,
             scripts: Mapping[str, str] = PEER_SCRIPTS) -> dict:
    """Runs peer ``name``'s script of ``scripts`` (the tag environment's by default) with ``python``;
    returns the JSON object it printed.

    The object's ``status`` is "ok" or why it could not run. A script that runs past
    ``timeout`` seconds, crashes or prints no JSON gets a status saying so (and the
    ``tool`` name of its peer); a bad ``name`` or ``python`` raises ValueError.
    """
    check_peer(name, Path(python), scripts)
    script = Path(scripts_dir) / scripts[name]
    if not script.is_file():
        raise InvalidValueError(f"peer script {str(script)!r} not found; peers run from a warpsim source checkout "
                         f"(benchmarks/peers/)")
    command = [str(python), str(script), "--num-agents", str(num_agents),
               "--num-envs", ",".join(map(str, num_envs)), "--steps", str(steps), "--repeats", str(repeats),
               "--warmup-steps", str(warmup_steps), "--max-seconds", str(max_seconds)]
    failed = {"tool": name, "num_agents": num_agents, "requested_num_envs": max(num_envs)}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(failed, status=f"time: no result within the timeout of {timeout:g} s")
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        errors = done.stderr.strip().splitlines()
        return dict(failed, status=f"error: {script.name} exited with code {done.returncode} without a JSON "
                                   f"result; last error line: {errors[-1] if errors else '(none)'}")


def run_peer_where_it_fits(name: str, python: Path, num_agents: int, num_envs: int, **options) -> dict:
    """Runs peer ``name`` at ``num_envs`` environments, halving them while the peer runs out of memory.

    Returns the output of the first E that ran, or of the last that failed: its
    ``batch_sweep`` is led by the sizes that did not fit, and its ``requested_num_envs``
    is ``num_envs``. ``options`` are :func:`run_peer`'s.
    """
    requested = require_int("num_envs", num_envs, 1)
    did_not_fit = []
    while True:
        output = run_peer(name, python, num_agents, (num_envs,), **options)
        if not output["status"].startswith("memory") or num_envs == 1:
            break
        did_not_fit.append({"num_envs": num_envs, "status": output["status"]})
        num_envs //= 2
    return dict(output, requested_num_envs=requested, batch_sweep=did_not_fit + output.get("batch_sweep", []))


def peer_record(output: dict, config: str | None = None) -> dict:
    """A sim-tier record (the fields of ``warpsim.bench.runner`` records) from a peer script's output.

    A record whose ``status`` is not "ok" carries no rates: it says what could not run
    and why; only "ok" records belong in the results files. ``warpsim_commit`` names the
    checkout whose peer script ran, as warpsim's records name theirs.
    """
    status = output.get("status")
    if not isinstance(status, str):
        raise InvalidValueError(f"peer output has status={status!r}; expected 'ok' or the reason it could not run")
    if status == "ok":
        missing = [name for name in _NEEDED_WHEN_OK if name not in output]
        if missing:
            raise InvalidValueError(f"peer output of {output.get('tool')!r} says 'ok' but lacks {', '.join(missing)}")
    record = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "config": config, "tier": "sim", "status": status, "warpsim_commit": source_commit()}
    record.update((name, output[name]) for name in _COPIED if name in output)
    if "steps" in output:
        record["steps_per_repeat"] = output["steps"]
    return record


def ratio_table(records: list[dict]) -> str:
    """A Markdown table per N: each tool's rate and warpsim's agent-steps/s over it.

    ``records`` mixes warpsim's records (``tool`` "warpsim" or absent) and peers'
    records; a peer that could not run shows its status instead of a rate.
    """
    header = ["N", "tool", "backend", "E", "observation", "agent-steps/s", "env-steps/s", "warpsim / tool", "status",
              "device"]
    rows = []
    for num_agents in sorted({record["num_agents"] for record in records}):
        group = sorted((r for r in records if r["num_agents"] == num_agents),
                       key=lambda r: (_tool(r) != "warpsim", _tool(r)))
        warpsim = next((r for r in group if _tool(r) == "warpsim" and _ran(r)), None)
        for record in group:
            agent_rate = env_rate = ratio = "-"
            if _ran(record):
                agent_rate = f"{_median(record, 'agent_steps_per_second'):.3e}"
                env_rate = f"{_median(record, 'env_steps_per_second'):.3e}"
                if warpsim is not None and record is not warpsim:
                    speedup = _median(warpsim, "agent_steps_per_second") / _median(record, "agent_steps_per_second")
                    ratio = f"{speedup:,.1f}x"
            rows.append([str(num_agents), _tool(record), record.get("backend", "-"),
                         str(record.get("num_envs", "-")), record.get("observation", "-"), agent_rate, env_rate,
                         ratio, record.get("status", "ok"), record.get("device", "-")])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def _tool(record: dict) -> str:
    return record.get("tool", "warpsim")


def _ran(record: dict) -> bool:
    return record.get("status", "ok") == "ok"


def _median(record: dict, name: str) -> float:
    value = record[name]
    return value["median"] if isinstance(value, dict) else value
