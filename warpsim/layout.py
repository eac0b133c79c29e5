"""What an environment's declarations allocate: the shape and dtype of every array, checked,
and their bytes, worked out from the ``EnvSpec`` and E alone (before anything is made)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch

from warpsim.errors import InvalidValueError
from warpsim.spec import OBSERVATION_DTYPES, STATE_DTYPES, EnvSpec, StateArray

Shapes = dict[str, tuple[tuple[int, ...], torch.dtype]]
"""Array name -> (shape, torch dtype)."""


class Layout(NamedTuple):
    """``Environment.layout``: what environments would hold before they are made."""

    spec: EnvSpec
    array_bytes: int
    """Bytes of their arrays, as ``Environment.array_bytes`` counts them."""


def array_shapes(owner: str, spec: EnvSpec, num_envs: int) -> Shapes:
    """The buffers every environment has and the state arrays ``spec`` declares, for ``num_envs``
    environments; a declaration that cannot be allocated raises InvalidValueError naming ``owner``."""
    e, n = num_envs, spec.num_agents
    check_actions(owner, spec)
    check_role_actions(owner, spec)
    check_role_observation_sizes(owner, spec)
    if spec.observation_dtype not in OBSERVATION_DTYPES:
        raise InvalidValueError(f"{owner} declares observation_dtype={spec.observation_dtype!r}; "
                                f"allowed: {', '.join(OBSERVATION_DTYPES)}")
    shapes: Shapes = {
        "observations": ((e, n, spec.observation_size), getattr(torch, spec.observation_dtype)),
        "actions": ((e, n, spec.action_size), torch.float32 if spec.continuous else torch.int32),
        "rewards": ((e, n), torch.float32),
        "done": ((e,), torch.bool),
        "terminated": ((e,), torch.bool),
        "episode": ((e,), torch.int32),
    }
    for array in spec.state:
        check_declaration(owner, array, taken=shapes)
        shapes[array.name] = (array.shape(e, n), torch_dtype(array.dtype))
    unknown = [name for name in spec.write_order if name not in shapes or name == "actions"]
    if unknown:
        raise InvalidValueError(f"{owner} names {', '.join(map(repr, unknown))} in write_order; "
                                f"name arrays a step writes: {', '.join(n for n in shapes if n != 'actions')}")
    for name in spec.counters:
        if shapes.get(name) != ((e,), torch.int32):
            raise InvalidValueError(f"{owner} names {name!r} as a counter; a counter must be "
                                    f"one of its state arrays with dtype int32 and dims ('E',)")
    return shapes


def check_role_observation_sizes(owner: str, spec: EnvSpec) -> None:
    """None, or one size per role, each in [1, observation_size]."""
    sizes = spec.role_observation_sizes
    if not isinstance(sizes, (tuple, list)):
        raise InvalidValueError(f"{owner} declares role_observation_sizes as a {type(sizes).__name__}; give a tuple "
                                f"of one size per role, e.g. role_observation_sizes=(12, 14)")
    if not sizes:
        return
    if len(sizes) != len(spec.role_names):
        raise InvalidValueError(f"{owner} declares {len(sizes)} role_observation_sizes for {len(spec.role_names)} "
                                f"roles ({', '.join(spec.role_names)}); give one size per role")
    for role, size in zip(spec.role_names, sizes):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 1 <= size <= spec.observation_size:
            raise InvalidValueError(f"{owner} declares an observation of {size!r} entries for role {role!r}; give "
                                    f"1 to observation_size={spec.observation_size}, the width of a row")


def check_actions(owner: str, spec: EnvSpec) -> None:
    """One kind of actions, declared as the spec documents it: levels >= 1, or finite bounds with low < high
    whose width fits float32 (random play draws low + u x (high - low))."""
    levels, bounds = spec.action_levels, spec.action_bounds
    for name, declared, example in (("action_levels", levels, "(5, 3)"), ("action_bounds", bounds, "((-1.0, 1.0),)")):
        if not isinstance(declared, (tuple, list)):
            raise InvalidValueError(f"{owner} declares {name} as a {type(declared).__name__}; give a tuple, e.g. "
                                    f"{name}={example}")
    if bool(levels) == bool(bounds):
        given = "both action_levels and" if levels else "neither action_levels nor"
        raise InvalidValueError(f"{owner} declares {given} action_bounds; declare one: "
                                f"action_levels=(5,) for discrete actions, action_bounds=((-1.0, 1.0),) for "
                                f"continuous ones")
    for k, level in enumerate(levels):
        if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level < 1:
            raise InvalidValueError(f"{owner} declares action_levels[{k}] = {level!r}; give an integer >= 1")
    for k, pair in enumerate(bounds):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(
                isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in pair)):
            raise InvalidValueError(f"{owner} declares action_bounds[{k}] = {pair!r}; give a pair (low, high) of "
                                    f"numbers, e.g. (-1.0, 1.0)")
        low, high = (float(v) for v in pair)
        largest = float(np.finfo(np.float32).max)
        if not (math.isfinite(low) and math.isfinite(high) and -largest <= low < high <= largest):
            raise InvalidValueError(f"{owner} declares action_bounds[{k}] = {pair!r}; give finite float32 bounds "
                                    f"with low < high")
        if high - low > largest:
            raise InvalidValueError(f"{owner} declares action_bounds[{k}] = {pair!r}, whose width {high - low:.3g} "
                                    f"overflows float32 (at most {largest:.3g}); give narrower bounds")


def check_role_actions(owner: str, spec: EnvSpec) -> None:
    """None, or each role's actions of the declared kind: 1 to the row's components, each within the
    row's levels (bounds)."""
    for name in ("role_action_levels", "role_action_bounds"):
        if not isinstance(getattr(spec, name), (tuple, list)):
            raise InvalidValueError(f"{owner} declares {name} as a {type(getattr(spec, name)).__name__}; give a "
                                    f"tuple of one tuple per role")
    continuous = spec.continuous
    name, row_name = ("role_action_bounds", "action_bounds") if continuous else ("role_action_levels", "action_levels")
    other = "role_action_levels" if continuous else "role_action_bounds"
    if getattr(spec, other):
        raise InvalidValueError(f"{owner} declares {row_name} and {other}; give each role's actions as {name}")
    given, row = getattr(spec, name), getattr(spec, row_name)
    if not given:
        return
    if len(given) != len(spec.role_names):
        raise InvalidValueError(f"{owner} declares {len(given)} {name} for {len(spec.role_names)} roles "
                                f"({', '.join(spec.role_names)}); give one per role")
    for role, actions in zip(spec.role_names, given):
        if not isinstance(actions, (tuple, list)) or not 1 <= len(actions) <= len(row):
            raise InvalidValueError(f"{owner} declares role {role!r}'s actions as {actions!r} in {name}; give a "
                                    f"tuple of 1 to {len(row)} components, as many as {row_name} has at most")
        for k, value in enumerate(actions):
            if continuous:
                fits = (isinstance(value, (tuple, list)) and len(value) == 2
                        and all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                                for v in value)
                        and row[k][0] <= float(value[0]) < float(value[1]) <= row[k][1])
                allowed = f"a pair (low, high) with low < high within {row_name}[{k}] = {row[k]!r}"
            else:
                fits = not isinstance(value, bool) and isinstance(value, (int, np.integer)) and 1 <= value <= row[k]
                allowed = f"an integer from 1 to {row_name}[{k}] = {row[k]}"
            if not fits:
                raise InvalidValueError(f"{owner} declares component {k} of role {role!r}'s actions as {value!r}; "
                                        f"give {allowed}")


def scratch_shapes(owner: str, spec: EnvSpec, num_envs: int, taken: Shapes) -> Shapes:
    """The kernels' working arrays ``spec.scratch`` declares, named apart from ``taken``."""
    shapes: Shapes = {}
    for array in spec.scratch:
        check_declaration(owner, array, taken={**taken, **shapes})
        shapes[array.name] = (array.shape(num_envs, spec.num_agents), torch_dtype(array.dtype))
    return shapes


def check_declaration(owner: str, array: StateArray, taken) -> None:
    """Raises InvalidValueError unless ``array`` has a free identifier, an allowed dtype and valid dims."""
    where = f"{owner} declares state array {array.name!r}"
    if not isinstance(array.name, str) or not array.name.isidentifier():
        raise InvalidValueError(f"{where}: its name must be a Python identifier")
    if array.name in taken:
        raise InvalidValueError(f"{where}, a name already in use; taken: {', '.join(taken)}")
    try:
        dtype = np.dtype(array.dtype).name
    except TypeError:
        dtype = repr(array.dtype)
    if dtype not in STATE_DTYPES:
        raise InvalidValueError(f"{where} with dtype {dtype}; allowed: {', '.join(STATE_DTYPES)}")
    dims_ok = isinstance(array.dims, tuple) and all(
        dim in ("E", "N") or (isinstance(dim, int) and not isinstance(dim, bool) and dim >= 1)
        for dim in array.dims)
    if not dims_ok:
        raise InvalidValueError(f"{where} with dims {array.dims!r}; give a tuple of 'E' (environments), "
                                f"'N' (agents) or positive ints, e.g. ('E', 'N')")


def shapes_bytes(shapes: Shapes) -> int:
    """Bytes of arrays of ``shapes``."""
    # math.prod on Python ints: np.prod would wrap around in int64 for absurd sizes.
    return sum(math.prod(shape) * torch.empty((), dtype=dtype).element_size() for shape, dtype in shapes.values())


def torch_dtype(dtype) -> torch.dtype:
    """The torch dtype matching a NumPy dtype declaration."""
    return torch.from_numpy(np.zeros(0, dtype=np.dtype(dtype))).dtype
