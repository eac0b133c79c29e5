"""Checkpoints: written atomically, checked against the environment they are used with."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import torch

from warpsim.environment import Environment
from warpsim.errors import InvalidValueError, RunFileError
from warpsim.files import replace_atomically

FORMAT = 1
FILE_NAME = "checkpoint.pt"


def signature(env: Environment) -> dict:
    """What a policy's shapes depend on: the environment, its observation size (and each role's, where
    roles observe different things), its actions (levels, or the bounds of continuous ones; each role's,
    where roles act apart), its roles."""
    spec = env.spec
    continuous = {"action_bounds": [list(pair) for pair in spec.action_bounds]} if spec.continuous else {}
    by_role: dict = {"role_observation_sizes": list(spec.role_observation_sizes)} if spec.role_observation_sizes else {}
    if spec.role_action_levels:
        by_role["role_action_levels"] = [list(levels) for levels in spec.role_action_levels]
    if spec.role_action_bounds:
        by_role["role_action_bounds"] = [[list(pair) for pair in bounds] for bounds in spec.role_action_bounds]
    return {"env": env.name, "observation_size": spec.observation_size,
            "action_levels": list(spec.action_levels), "role_names": list(spec.role_names), **continuous, **by_role}


REQUIRED_KEYS = ("signature", "config", "policies")
"""What evaluating or rendering a checkpoint reads."""
RESUME_KEYS = REQUIRED_KEYS + ("iteration", "env_steps", "optimizer", "world_size", "ranks")
"""What resuming from a checkpoint reads besides."""


def check_compatible(checkpoint: dict, env: Environment, source: Path | str) -> None:
    """Raises InvalidValueError when a checkpoint's policies do not fit ``env``."""
    expected, found = signature(env), checkpoint["signature"]
    if not isinstance(found, dict):
        raise RunFileError(f"checkpoint {source} has a malformed signature ({type(found).__name__})")
    differences = [f"{key} {found.get(key)!r} there, {expected[key]!r} here"
                   for key in expected if found.get(key) != expected[key]]
    if differences:
        parameters = parameter_differences(checkpoint.get("config"), env)
        raise InvalidValueError(f"checkpoint {source} was trained on another environment or shape: "
                                f"{'; '.join(differences)}"
                                + (f" (its environment's parameters: {'; '.join(parameters)})" if parameters else ""))


def parameter_differences(config, env: Environment) -> list[str]:
    """``name=value there, value here`` for each parameter of ``env`` that differs from the one a
    checkpoint's ``config`` trained with, where both are the same environment."""
    if not isinstance(config, dict) or config.get("env") != env.name:
        return []
    given, params = config.get("env_params"), dataclasses.asdict(env.params)
    trained = {field.name: field.default for field in dataclasses.fields(env.params)
               if field.default is not dataclasses.MISSING}
    trained.update(given if isinstance(given, dict) else {})
    return [f"{name}={trained.get(name)!r} there, {value!r} here" for name, value in params.items()
            if json.dumps(trained.get(name), default=str) != json.dumps(value, default=str)]


def save(path: Path, payload: dict) -> None:
    """Writes ``payload`` to ``path`` durably through a temporary file: a crash, a power cut
    or a full disk leaves the previous checkpoint whole."""
    buffer = io.BytesIO()  # whole in memory first: torch reports a full disk as an internal RuntimeError
    torch.save({"format": FORMAT, **payload}, buffer)
    replace_atomically(path, buffer.getvalue(), "checkpoint")


def load(path: Path | str, needs: tuple[str, ...] = REQUIRED_KEYS) -> dict:
    """A checkpoint file, or the one in a run directory; tensors on the CPU.

    Every problem is a RunFileError naming the file: missing, empty, truncated or not a
    checkpoint at all, another format, or without the entries ``needs``.
    """
    path = Path(path)
    if path.is_dir():
        path = path / FILE_NAME
    if not path.is_file():
        raise RunFileError(f"no checkpoint at {path}; give a run directory or a {FILE_NAME} file")
    if path.stat().st_size == 0:
        raise RunFileError(f"checkpoint {path} is empty (0 bytes): it was never written whole; "
                           f"nothing can be resumed or evaluated from it")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many kinds, none of them useful to a user
        raise RunFileError(f"checkpoint {path} cannot be read: it is truncated, corrupt or not a warpsim "
                           f"checkpoint ({_first_line(error)})") from None
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != FORMAT:
        raise RunFileError(f"{path} is not a warpsim checkpoint of format {FORMAT}")
    missing = [key for key in needs if key not in checkpoint]
    if missing:
        raise RunFileError(f"checkpoint {path} lacks {', '.join(missing)}: it is incomplete or was altered")
    checkpoint["path"] = str(path)
    return checkpoint


def load_into(module, state: dict, what: str, source: Path | str) -> None:
    """``module.load_state_dict(state)`` with one line naming the checkpoint when it does not fit."""
    try:
        module.load_state_dict(state)
    except (RuntimeError, ValueError, KeyError, TypeError) as error:
        raise RunFileError(f"checkpoint {source}: its {what} do not fit ({_first_line(error)})") from None


def _first_line(error: BaseException) -> str:
    """The first sentence of a (torch) message; just the error's kind where it is advice on weights_only."""
    text = str(error).strip()
    first = text.splitlines()[0].split(". ")[0] if text else ""
    if not first or "weights_only" in text.lower() or "weights only" in text.lower():
        return type(error).__name__
    return first[:200]
