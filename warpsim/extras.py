"""How to add an optional part of warpsim, worded for the way this warpsim was installed."""

from __future__ import annotations

import sys
from pathlib import Path


def install_hint(extra: str) -> str:
    """The command that installs ``extra``: ``./install.sh EXTRA`` when warpsim runs from the
    ``.venv`` of a checkout set up by its install.sh, otherwise pip on the checkout it was installed
    from (warpsim is installed from a checkout, not from a package index)."""
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / "install.sh").is_file() and Path(sys.prefix).resolve() == (checkout / ".venv").resolve():
        return f"./install.sh {extra} (in {checkout})"
    if (checkout / "setup.py").is_file():
        return f"pip install -e '{checkout}[{extra}]'"
    return f"pip install -e '.[{extra}]' in a checkout of warpsim"
