"""APIs removed or renamed in a release, kept for the next one as stubs that name their replacement.

A user's code or script that still calls one stops at once with a one-line error saying what to
write instead, rather than an AttributeError or an unknown option. Each stub goes one release after
the one that removed it (CHANGELOG.md lists them).
"""

from __future__ import annotations

import argparse
from typing import Any

from warpsim.errors import WarpsimError


class RemovedError(WarpsimError, AttributeError):
    """A removed API was used; the message names its replacement."""


def removed(what: str, version: str, replacement: str) -> RemovedError:
    return RemovedError(f"{what} was removed in warpsim {version}: {replacement}")


class RemovedOption(argparse.Action):
    """A command-line option that was removed: using it is a one-line error naming the replacement."""

    def __init__(self, option_strings: list[str], dest: str, *, version: str, replacement: str, **kwargs: Any):
        super().__init__(option_strings, dest, nargs=0, help=argparse.SUPPRESS, **kwargs)
        self.version = version
        self.replacement = replacement

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser.exit(2, f"{parser.prog}: error: {removed(option_string or self.dest, self.version, self.replacement)}\n")
