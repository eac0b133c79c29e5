"""APIs removed or renamed in a release, kept for the next one as stubs that name their replacement.

A user's code or script that still calls one stops at once with a one-line error saying what to
write instead, rather than an AttributeError or an unknown option. Each stub goes one release after
the one that removed it (CHANGELOG.md lists them).
"""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from typing_extensions import deprecated

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


class RemovedEnvironmentMethods:
    """``Environment``'s methods removed in 0.2.0, as stubs (typed NoReturn and deprecated, so that mypy
    flags code that still calls them)."""

    @deprecated("removed in 0.2.0: write self.run(kernel, per=...)", category=None)
    def launch(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Removed in 0.2.0 (see ``Environment.run``)."""
        raise removed("Environment.launch(kernel, num_items, *arguments)", "0.2.0",
                      "write self.run(kernel, per='agent', 'env' or 'block'), which binds the kernel's arguments by "
                      "their names (docs/custom_envs.md, 'Porting from launch')")

    @deprecated("removed in 0.2.0: write self.add_constants(name=values) in setup()", category=None)
    def constant(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Removed in 0.2.0 (see ``Environment.add_constants``)."""
        raise removed("Environment.constant(values)", "0.2.0",
                      "write self.add_constants(name=values) in setup(), and give the kernel a parameter of that "
                      "name (docs/custom_envs.md, 'Porting from launch')")
