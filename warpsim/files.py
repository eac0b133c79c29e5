"""Files that survive a crash, a power cut or a full disk: whole or not at all.

A file is replaced through a temporary ``<name>.partial`` beside it: written, flushed and
fsynced, renamed over the old one, and the directory fsynced so the rename itself is
durable. A failed write removes the temporary file and leaves the old one as it was.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from warpsim.errors import InvalidValueError, RunFileError


def describe_os_error(error: OSError) -> str:
    """``No space left on device`` rather than ``[Errno 28] No space left on device: '...'``."""
    return error.strerror or str(error) or type(error).__name__


def read_json(path: Path, what: str) -> Any:
    """The JSON value in ``path``; a RunFileError saying why it cannot be read as ``what``."""
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        reason = describe_os_error(error) if isinstance(error, OSError) else str(error).splitlines()[0]
        raise RunFileError(f"{path} cannot be read as {what}: {reason}") from None


def fsync_directory(path: Path) -> None:
    """Makes a rename or a new file in ``path`` durable (where the platform allows it)."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return  # e.g. a platform without directory descriptors: the rename is still atomic
    try:
        os.fsync(descriptor)
    except OSError:
        pass  # some filesystems refuse fsync on a directory
    finally:
        os.close(descriptor)


def replace_atomically(path: Path | str, data: bytes, what: str, kept: str | None = None) -> None:
    """Writes ``data`` to ``path`` through ``<path>.partial``; durable once it returns.

    On failure the partial file is removed and a RunFileError names ``what`` and ``path``;
    ``kept`` says what is left (default: the previous file is intact, if there was one).
    """
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    try:
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            remaining = memoryview(data)
            while remaining:
                remaining = remaining[os.write(descriptor, remaining):]
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(partial, path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        if kept is None:
            kept = f"the previous {what} is intact" if path.exists() else f"no {what} was written"
        raise RunFileError(f"cannot write {what} {path}: {describe_os_error(error)}; {kept}") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)


def write_output(path: Path | str, data: bytes, what: str) -> Path:
    """Creates the directory of an output file (checked by ``output_file``) and replaces the file atomically."""
    path = Path(path)
    make_directory(path.parent, f"directory of the {what}")
    replace_atomically(path, data, what)
    return path


def usable_directory(path: Path | str, what: str) -> Path:
    """Checks that ``path`` is, or can be made, a writable directory; creates nothing."""
    text = str(path)
    if not text.strip():
        raise RunFileError(f"the {what} is an empty path; give a directory, e.g. runs/my-run")
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise RunFileError(f"{what} {path} is a file, not a directory; give a directory")
    existing = path
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise RunFileError(f"{what} {path} lies under {existing}, which is a file; give a directory")
    if existing.exists() and not os.access(existing, os.W_OK | os.X_OK):
        raise RunFileError(f"{what} {path} cannot be written: {existing} is read-only for this user")
    return path


def make_directory(path: Path, what: str) -> None:
    """``mkdir -p`` with a RunFileError naming the path on failure."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RunFileError(f"cannot create {what} {path}: {describe_os_error(error)}") from None


def output_file(path: Path | str, what: str, suffix: str) -> Path:
    """Checks, creating nothing, a file a command is about to write: its name ends in ``suffix``,
    it is not a directory, and its directory is or can be made writable."""
    if not str(path).strip():
        raise RunFileError(f"the {what} is an empty path; give a file name ending in {suffix}")
    path = Path(path)
    if path.is_dir():
        raise RunFileError(f"{what} {path} is a directory; give a file name ending in {suffix}")
    if path.suffix.lower() != suffix:
        raise InvalidValueError(f"{what} {path} must end in {suffix}")
    usable_directory(path.parent, f"directory of the {what}")
    return path
