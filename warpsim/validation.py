"""Checks of a single parameter or setting, with one message format: what, the value, what is allowed.

Every ``Params`` of an environment and the trainer's ``TrainConfig`` check their fields
here, so they accept the same values: Python and NumPy numbers (``np.int64(2)``,
``np.float32(0.5)``), never a bool where a number is asked, never NaN, and inf only
where a bound is itself infinite. Each check returns the value as a plain Python
``int``, ``float`` or ``bool``, so what is stored compares, prints and saves to JSON the
same whichever kind of number was given.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

import numpy as np

from warpsim.errors import InvalidParameterTypeError, InvalidValueError


def check_fields(params: Any, require: Callable, names: Iterable[str], *bounds: Any, what: str = "{}",
                 **options: Any) -> None:
    """Checks the fields ``names`` of the frozen dataclass ``params`` with ``require`` (``require_int``,
    ``require_real``, ``require_bool``, given ``bounds`` and ``options``) and stores the plain values it
    returns; for ``__post_init__``. A message names a field as ``what.format(name)``."""
    for name in names:
        object.__setattr__(params, name, require(what.format(name), getattr(params, name), *bounds, **options))


def not_allowed(what: str, value: Any, allowed: str) -> InvalidValueError:
    """The error for a value outside what is allowed, e.g. a relation between fields."""
    return InvalidValueError(_message(what, value, allowed))


def require_int(what: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int: a Python or NumPy integer, not a bool, in [low, high] (None: unbounded)."""
    allowed = "give " + _range_text("an integer", low, high, str)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InvalidParameterTypeError(_message(what, value, allowed))
    number = int(value)
    if (low is not None and number < low) or (high is not None and number > high):
        raise not_allowed(what, value, allowed)
    return number


def require_real(what: str, value: Any, low: float | None = None, high: float | None = None, *,
                 low_exclusive: bool = False) -> float:
    """``value`` as a float: a Python or NumPy int or float, not a bool, in [low, high] ((low, high]
    with ``low_exclusive``; None: unbounded). NaN is refused, and so is inf unless a bound is inf."""
    kind = "a finite number" if low is None and high is None else "a number"
    allowed = "give " + _range_text(kind, low, high, lambda bound: f"{bound:g}", low_exclusive)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidParameterTypeError(_message(what, value, allowed))
    try:
        number = float(value)
    except OverflowError:  # an int beyond float's range is beyond any bound a parameter has
        raise not_allowed(what, value, allowed) from None
    if not (math.isfinite(number) or number in (low, high)):
        raise not_allowed(what, value, allowed)
    below = low is not None and (number <= low if low_exclusive else number < low)
    if below or (high is not None and number > high):
        raise not_allowed(what, value, allowed)
    return number


def require_bool(what: str, value: Any) -> bool:
    """``value`` as a bool: a Python or NumPy bool; 0 and 1 are refused (an integer given for a flag is
    more likely a mistake than a choice)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameterTypeError(_message(what, value, "give True or False"))
    return bool(value)


def require_choice(what: str, value: Any, choices: tuple[str, ...]) -> str:
    """``value`` as a plain str, one of ``choices``: a Python or NumPy string, never an array of
    them (which would compare elementwise, or pass as its one element)."""
    if not isinstance(value, str) or value not in choices:
        raise not_allowed(what, value, f"choose one of {', '.join(choices)}")
    return str(value)


def _message(what: str, value: Any, allowed: str) -> str:
    return f"{what}={shown(value)} is not allowed; {allowed}"


def shown(value: Any) -> str:
    """``repr(value)``, cut short past 60 characters (a 400-digit number stays one readable line)."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:24]}...{text[-8:]} ({len(text)} characters)"


def _range_text(kind: str, low, high, show, low_exclusive: bool = False) -> str:
    if low is not None and high is not None:
        return f"{kind} in {'(' if low_exclusive else '['}{show(low)}, {show(high)}]"
    if low is not None:
        return f"{kind} {'>' if low_exclusive else '>='} {show(low)}"
    if high is not None:
        return f"{kind} <= {show(high)}"
    return kind
