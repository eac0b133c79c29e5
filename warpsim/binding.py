"""Kernel arguments bound by the kernels' parameter names (``Environment.run``).

Numba takes no keyword arguments at a launch, so the binding is done here, once per kernel:
each parameter name is looked up among the values an environment offers (its arrays,
scratch, constants, ``Params`` fields and the runtime's ``mask`` and ``seed``) and checked
against the kernel's docstring, which declares every parameter as ``name dtype`` or
``name dtype[dims]`` (``a, b float32[E, N]``; ``a .. c`` names the parameters from ``a`` to
``c`` in signature order; ``float32 or int16[E, N, D]`` allows either dtype). The bound values are
then launched positionally, as they always were. What ``run`` is given besides, a mask and the
constants of ``add_constants``, is checked here too (``check_mask``, ``check_constant``).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from warpsim.errors import InvalidTypeError, InvalidValueError
from warpsim.spec import StateArray

MASK = "mask"
"""The parameter that receives the mask given to ``run`` (bool[E])."""
KERNEL_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "uint64", "float16", "float32", "float64")
_DTYPE = "(?:" + "|".join(KERNEL_DTYPES) + r")\b"
_DECLARATION = re.compile(r"(\w+(?:\s*(?:,|\.\.)\s*\w+)*)\s*:?\s+(" + _DTYPE + r"(?:\s+or\s+" + _DTYPE + r")*)"
                          r"(\[[^\]]*\])?")
_ALTERNATIVES = re.compile(r"\s+or\s+")
_PARAMS_TYPES: dict[Any, Any] = {int: np.int32, float: np.float32, bool: bool}
"""How a ``Params`` field reaches a kernel, by its declared type (a bool stays a bool)."""


@dataclasses.dataclass(frozen=True)
class Declared:
    """A kernel parameter as its docstring declares it."""

    dtypes: tuple[str, ...]
    """The dtypes allowed: one, or the alternatives of ``float32 or int16``."""
    dims: tuple[str, ...] | None
    """The dims between brackets, None for a scalar."""

    def __str__(self) -> str:
        dtype = " or ".join(self.dtypes)
        return dtype if self.dims is None else f"{dtype}[{', '.join(self.dims)}]"


@dataclasses.dataclass(frozen=True)
class Binding:
    """A kernel's arguments in signature order; the one at ``mask_position`` is given at each launch."""

    arguments: tuple
    mask_position: int | None

    def with_mask(self, mask: Any) -> tuple:
        if self.mask_position is None:
            return self.arguments
        position = self.mask_position
        return (*self.arguments[:position], mask, *self.arguments[position + 1:])


def is_kernel(kernel: Any) -> bool:
    """Whether ``kernel`` was made with ``@cuda.jit`` (or is the simulator's stand-in for one)."""
    return callable(getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)) and hasattr(kernel, "__getitem__")


def dtype_name(value: Any) -> str:
    """The dtype a kernel sees ``value`` as (``bool`` for a Python bool); ``object`` for what has none."""
    return np.dtype(type(value) if isinstance(value, bool) else getattr(value, "dtype", object)).name


def is_array(value: Any) -> bool:
    return isinstance(getattr(value, "shape", None), tuple) and not isinstance(value, np.generic)


def declaration_of(value: Any, array: StateArray | None = None) -> str:
    """How a kernel's docstring declares ``value``: ``float32`` for a scalar, ``float32[E, N]`` for
    a state array (its declared dims), ``float32[5]`` for another array (its shape)."""
    if array is not None:
        return f"{dtype_name(value)}[{', '.join(map(str, array.dims))}]"
    if is_array(value):
        return f"{dtype_name(value)}[{', '.join(map(str, value.shape))}]"
    return dtype_name(value)


def check_constant(owner: str, name: str, value: Any) -> None:
    """A constant offered to kernels (``Environment.add_constants``): a NumPy array or scalar, or a
    bool, of a kernel dtype; ``owner`` is the environment's class, for the message."""
    if not isinstance(value, (np.ndarray, np.generic, bool)) or dtype_name(value) not in KERNEL_DTYPES:
        raise InvalidTypeError(
            f"{owner}.add_constants({name}=...) got {type(value).__name__} {value!r:.60}; give a NumPy array or "
            f"scalar of a kernel dtype ({', '.join(KERNEL_DTYPES)}){_constant_hint(value)}")


def _constant_hint(value: Any) -> str:
    """An example of what ``add_constants`` takes, for a Python number or list given instead."""
    if isinstance(value, int):
        return f", e.g. np.int32({value!r})"
    if isinstance(value, float):
        return f", e.g. np.float32({value!r})"
    if isinstance(value, (list, tuple)):
        return ", e.g. np.array([...], dtype=np.float32)"
    return ""


def check_mask(owner: str, kernel: Any, mask: Any, num_envs: int, on_cpu: bool) -> None:
    """A mask given to ``Environment.run``: bool[E] on the environment's device (a NumPy array where its
    arrays are on the CPU, a CUDA array that is no torch tensor on a GPU), as the runtime's masks are."""
    shape, dtype = getattr(mask, "shape", None), getattr(mask, "dtype", None)
    on_device = (isinstance(mask, np.ndarray) if on_cpu
                 else hasattr(mask, "__cuda_array_interface__") and not isinstance(mask, torch.Tensor))
    if on_device and shape == (num_envs,) and dtype == np.bool_:
        return
    given = (f"a {type(mask).__name__} of shape {tuple(shape)} and dtype {dtype}" if isinstance(shape, tuple)
             else f"{type(mask).__name__} {mask!r:.40}")
    raise InvalidValueError(f"{owner}.run({kernel_name(kernel)}, mask=...) got {given}; give bool[{num_envs}] on "
                            f"the environment's device, e.g. the mask reset_cuda receives, or no mask for every "
                            f"environment")


def kernel_name(kernel: Any) -> str:
    return getattr(python_function(kernel), "__name__", repr(kernel))


def python_function(kernel: Any) -> Any:
    """The Python function a Numba kernel (or the simulator's stand-in) was made from."""
    return getattr(kernel, "py_func", None) or getattr(kernel, "fn", kernel)


def parameter_names(kernel: Any) -> tuple[str, ...]:
    return tuple(inspect.signature(python_function(kernel)).parameters)


def declarations(kernel: Any) -> dict[str, Declared]:
    """Each parameter's declaration in the kernel's docstring; the first one found counts."""
    names = parameter_names(kernel)
    found: dict[str, Declared] = {}
    for match in _DECLARATION.finditer(inspect.getdoc(python_function(kernel)) or ""):
        listed, dtype, dims = match.groups()
        declared = Declared(tuple(_ALTERNATIVES.split(dtype)),
                            None if dims is None else tuple(d.strip() for d in dims[1:-1].split(",")))
        for name in _expand(re.split(r"\s*,\s*", listed), names):
            found.setdefault(name, declared)
    return found


def _expand(listed: list[str], names: tuple[str, ...]) -> list[str]:
    """``a .. c`` as the parameters from a to c; other entries as they are."""
    expanded: list[str] = []
    for entry in listed:
        first, _, last = (part.strip() for part in entry.partition(".."))
        if last and first in names and last in names:
            expanded.extend(names[names.index(first):names.index(last) + 1])
        else:
            expanded.append(first)
    return expanded


def params_values(params: Any) -> dict[str, Any]:
    """The fields of a ``Params`` dataclass a kernel can take, cast once by their declared type:
    int to int32, float to float32, bool as it is; fields of other types are left out."""
    hints = typing.get_type_hints(type(params))
    values = {}
    for field in dataclasses.fields(params):
        cast = _PARAMS_TYPES.get(hints.get(field.name))
        if cast is not None:
            values[field.name] = cast(getattr(params, field.name))
    return values


def bind(kernel: Any, lookup: Mapping[str, Any], declared_arrays: Mapping[str, StateArray]) -> Binding:
    """Binds every parameter of ``kernel`` from ``lookup`` (``mask`` excepted: given at each launch).

    Refuses, naming the kernel and the parameter, a name ``lookup`` does not hold, a parameter
    the docstring does not declare, a value whose dtype (or scalar / array kind) differs from
    the declaration, and an array of ``declared_arrays`` whose dims differ from the declaration."""
    name = kernel_name(kernel)
    names = parameter_names(kernel)
    declared = declarations(kernel)
    arguments: list[Any] = []
    for parameter in names:
        if parameter == MASK:
            arguments.append(None)
            continue
        if parameter not in lookup:
            raise InvalidValueError(f"kernel {name}: parameter {parameter!r} names nothing the environment "
                                    f"offers; available: {', '.join(sorted([*lookup, MASK]))}")
        if parameter not in declared:
            raise InvalidValueError(
                f"kernel {name}: parameter {parameter!r} is not declared in its docstring; write "
                f"'{parameter} {declaration_of(lookup[parameter], declared_arrays.get(parameter))}' there")
        value = lookup[parameter]
        _check(name, parameter, value, declared[parameter], declared_arrays.get(parameter))
        arguments.append(value)
    return Binding(tuple(arguments), names.index(MASK) if MASK in names else None)


def _check(kernel: str, parameter: str, value: Any, declared: Declared, array: StateArray | None) -> None:
    dtype = dtype_name(value)
    given = f"{dtype}{list(value.shape) if is_array(value) else ''}"
    if array is not None:
        given = f"{declaration_of(value, array)} (its declaration)"
    if dtype not in declared.dtypes or is_array(value) != (declared.dims is not None):
        raise InvalidTypeError(f"kernel {kernel}: parameter {parameter!r} is declared {declared} in its "
                               f"docstring, but the environment's {parameter} is {given}")
    if array is not None and declared.dims is not None and not _same_dims(array.dims, declared.dims):
        raise InvalidValueError(f"kernel {kernel}: parameter {parameter!r} is declared {declared} in its "
                                f"docstring, but the environment's {parameter} is {given}")
    if array is None and declared.dims is not None and not _same_dims(value.shape, declared.dims, sizes_only=True):
        raise InvalidValueError(f"kernel {kernel}: parameter {parameter!r} is declared {declared} in its "
                                f"docstring, but the constant {parameter} has shape {list(value.shape)}; give it "
                                f"{len(declared.dims)} dimension(s) as declared, or declare it {declaration_of(value)}")


def _same_dims(dims: tuple[str | int, ...], declared: tuple[str, ...], sizes_only: bool = False) -> bool:
    """Same number of dims, and ``E`` and ``N`` where the array has them; a fixed size may be
    written with any symbol (``K``, ``N - 1``), or as a number, which it must then equal
    (``sizes_only``: ``dims`` is a constant's shape, all numbers)."""
    return len(dims) == len(declared) and all(
        (not written.isdigit() or int(written) == dim) if sizes_only else (not isinstance(dim, str) or dim == written)
        for dim, written in zip(dims, declared))
