"""The errors a user of warpsim can cause, apart from faults in warpsim itself.

Every error that bad input, a missing GPU or an unusable file can cause is a
:class:`WarpsimError`; its message says what was wrong, the value given and what is
allowed. The command line prints such an error as one line and exits with status 2, and
so it does for an exception raised in a user's own code (their environment), naming where;
any other exception is a bug in warpsim: it keeps its traceback and asks for a report. Each subclass
also derives from the built-in exception it refines, so ``except ValueError`` keeps
catching an :class:`InvalidValueError`.
"""

from __future__ import annotations


class WarpsimError(Exception):
    """Base of every error a user can cause."""


class InvalidValueError(WarpsimError, ValueError):
    """A value is not allowed: a parameter, a setting, an action, a shape."""


class InvalidTypeError(WarpsimError, TypeError):
    """A value has a type that is not allowed."""


class InvalidParameterTypeError(InvalidTypeError, InvalidValueError):
    """A parameter or setting of a type that is not allowed (a string where a number is asked, a
    bool where an integer is): a TypeError, and a ValueError like every other refused parameter,
    so that one ``except ValueError`` catches whatever is wrong with a parameter."""


class DoesNotFitError(WarpsimError, MemoryError):
    """What was asked for needs more memory than the device has free."""


class UnavailableError(WarpsimError, RuntimeError):
    """Something the request needs is not there: a GPU, an optional package."""


class RunFileError(WarpsimError):
    """A run directory, checkpoint, config or results file that cannot be used."""


class MissingHookError(WarpsimError, NotImplementedError):
    """An environment lacks a method what was asked needs (e.g. ``frame()`` for rendering)."""
