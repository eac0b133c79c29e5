"""The git commit of the warpsim source that runs, for records that say what produced them.

Only a git checkout of warpsim has one (an editable install); an installed wheel has
none, and neither has a machine without git. Either way the answer is None, never an error.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parent.parent
"""The directory that holds the warpsim package: a checkout's root when it runs from one."""
GIT_SECONDS = 10
"""Longest wait for git (a status on a slow network drive); beyond it the commit is unknown."""


def source_commit() -> dict | None:
    """``{"commit": full hash, "clean": no file differs from it}`` of the git checkout warpsim
    runs from (untracked files that git does not ignore count as differences), or None."""
    try:
        top, commit = _git("rev-parse", "--show-toplevel", "HEAD").splitlines()
        changes = _git("status", "--porcelain")
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    if Path(top).resolve() != SOURCE_ROOT:
        return None  # installed inside some other repository (e.g. a virtual environment in a project)
    return {"commit": commit, "clean": not changes}


def _git(*arguments: str) -> str:
    return subprocess.run(["git", "-C", str(SOURCE_ROOT), *arguments], capture_output=True, text=True, check=True,
                          timeout=GIT_SECONDS).stdout.strip()
