"""What an environment's declarations allocate: the shape and dtype of every array, checked,
and their bytes, worked out from the ``EnvSpec`` and E alone (before anything is made); and what
its actions may hold, by role (``role_action_limits``)."""

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
    """None, or each role's actions: 1 to the row's components, each within the row's levels (bounds);
    roles of both kinds (both fields given, each role in one) in a row of bounds."""
    for name in ("role_action_levels", "role_action_bounds"):
        declared = getattr(spec, name)
        if not isinstance(declared, (tuple, list)):
            raise InvalidValueError(f"{owner} declares {name} as a {type(declared).__name__}; give a tuple of one "
                                    f"tuple per role")
        if declared and len(declared) != len(spec.role_names):
            raise InvalidValueError(f"{owner} declares {len(declared)} {name} for {len(spec.role_names)} roles "
                                    f"({', '.join(spec.role_names)}); give one per role")
    levels, bounds = spec.role_action_levels, spec.role_action_bounds
    if bounds and not spec.continuous:
        raise InvalidValueError(f"{owner} declares action_levels and role_action_bounds; give each role's actions "
                                f"as role_action_levels, or declare the row as action_bounds (float32)")
    if levels and spec.continuous and not bounds:
        raise InvalidValueError(f"{owner} declares action_bounds and role_action_levels alone; give each role's "
                                f"actions as role_action_bounds, and both for roles of both kinds")
    row = spec.action_bounds if spec.continuous else spec.action_levels
    for r, role in enumerate(spec.role_names):
        given = [(name, declared[r]) for name, declared in (("role_action_levels", levels),
                                                            ("role_action_bounds", bounds)) if declared]
        if len(given) == 2 and bool(given[0][1]) == bool(given[1][1]):
            raise InvalidValueError(f"{owner} declares role {role!r}'s actions as {given[0][1]!r} in "
                                    f"role_action_levels and {given[1][1]!r} in role_action_bounds; give them in one "
                                    f"and () in the other")
        for name, actions in given:
            other_kind = len(given) == 2 and isinstance(actions, (tuple, list)) and not actions  # the other kind
            if not isinstance(actions, (tuple, list)) or not (other_kind or 1 <= len(actions) <= len(row)):
                raise InvalidValueError(f"{owner} declares role {role!r}'s actions as {actions!r} in {name}; give a "
                                        f"tuple of 1 to {len(row)} components, as many as the row has at most")
            for k, value in enumerate(actions):
                _check_role_component(owner, spec, role, k, value, continuous=name == "role_action_bounds")


def _check_role_component(owner: str, spec: EnvSpec, role: str, k: int, value, continuous: bool) -> None:
    """Component k of a role's actions: a pair within the row's bounds, or levels within the row's (any number
    of levels in a row of bounds)."""
    if continuous:
        fits = (isinstance(value, (tuple, list)) and len(value) == 2
                and all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in value)
                and spec.action_bounds[k][0] <= float(value[0]) < float(value[1]) <= spec.action_bounds[k][1])
        allowed = f"a pair (low, high) with low < high within action_bounds[{k}] = {spec.action_bounds[k]!r}"
    else:
        most = 2**24 if spec.continuous else spec.action_levels[k]  # a row of bounds holds whole float32 values
        fits = bool(not isinstance(value, bool) and isinstance(value, (int, np.integer)) and 1 <= value <= most)
        allowed = f"an integer from 1 to {most}" + ("" if spec.continuous else f" (action_levels[{k}])")
    if not fits:
        raise InvalidValueError(f"{owner} declares component {k} of role {role!r}'s actions as {value!r}; "
                                f"give {allowed}")


def role_action_limits(spec: EnvSpec) -> tuple[torch.Tensor, torch.Tensor]:
    """Per role, in ``role_names`` order: (float32 or int32[R, 2, A], each component's low and high: a value
    from low to high, or an index from low to high - 1; bool[R, A], whether it holds an index). Past a
    role's own components: 0 and 0 (a value), or 0 and 1 (an index): zero alone."""
    limits: list[list] = []
    indexed: list[list[bool]] = []
    for role in spec.role_names:
        if spec.continuous_of(role):
            bounds = list(spec.action_bounds_of(role))
            pad = [0.0] * (spec.action_size - len(bounds))
            limits.append([[low for low, _ in bounds] + pad, [high for _, high in bounds] + pad])
        else:
            levels = list(spec.action_levels_of(role))
            limits.append([[0] * spec.action_size, levels + [1] * (spec.action_size - len(levels))])
        indexed.append([not spec.continuous_of(role)] * spec.action_size)
    return (torch.tensor(limits, dtype=torch.float32 if spec.continuous else torch.int32),
            torch.tensor(indexed, dtype=torch.bool))


def action_limits(spec: EnvSpec) -> torch.Tensor:
    """float32 or int32[2, N, A]: each agent's components' low and high, by its role (``role_action_limits``)."""
    return role_action_limits(spec)[0][list(spec.agent_roles)].transpose(0, 1)


def indexed_components(spec: EnvSpec) -> torch.Tensor:
    """bool[N, A]: the action components that hold an index (every component of a discrete role's row)."""
    return role_action_limits(spec)[1][list(spec.agent_roles)]


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
