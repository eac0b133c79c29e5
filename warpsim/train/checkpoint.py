"""Checkpoints: written atomically, checked against the environment they are used with."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from warpsim.environment import Environment
from warpsim.errors import InvalidValueError, RunFileError

FORMAT = 1
FILE_NAME = "checkpoint.pt"


def signature(env: Environment) -> dict:
    """What a policy's shapes depend on: the environment, its observation and action sizes, its roles."""
    spec = env.spec
    return {"env": env.name, "observation_size": spec.observation_size,
            "action_levels": list(spec.action_levels), "role_names": list(spec.role_names)}


def check_compatible(checkpoint: dict, env: Environment, source: Path | str) -> None:
    """Raises ValueError when a checkpoint's policies do not fit ``env``."""
    expected, found = signature(env), checkpoint["signature"]
    differences = [f"{key} {found[key]!r} there, {expected[key]!r} here"
                   for key in expected if found.get(key) != expected[key]]
    if differences:
        raise InvalidValueError(f"checkpoint {source} was trained on another environment or shape: "
                         f"{'; '.join(differences)}")


def save(path: Path, payload: dict) -> None:
    """Writes ``payload`` to ``path`` through a temporary file, so a crash leaves the old one whole."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    torch.save({"format": FORMAT, **payload}, partial)
    os.replace(partial, path)


def load(path: Path | str) -> dict:
    """A checkpoint file, or the one in a run directory; tensors on the CPU."""
    path = Path(path)
    if path.is_dir():
        path = path / FILE_NAME
    if not path.is_file():
        raise RunFileError(f"no checkpoint at {path}; give a run directory or a {FILE_NAME} file")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:
        raise RunFileError(f"{path} is not a readable warpsim checkpoint: {error}") from None
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != FORMAT:
        raise RunFileError(f"{path} is not a warpsim checkpoint of format {FORMAT}")
    checkpoint["path"] = str(path)
    return checkpoint

