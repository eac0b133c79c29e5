"""``warpsim check``: the kernels against the NumPy reference, step by step.

The same environment is built twice, on the ``numpy`` backend (the specification) and
on the ``cuda`` backend (the kernels: on a GPU, or on Numba's CUDA simulator when
``NUMBA_ENABLE_CUDASIM=1``). Both draw the same starts from the same seed (the random
streams are counter-based), get the same random valid actions every step and reset the
environments whose episode ended. After the reset (step 0) and after every step, every
state array, the observations, rewards and done flags are compared: integers and
booleans exactly, floats to float32 rounding (``|kernels - reference| <= atol +
rtol * |reference|``). The first step where anything differs stops the check and is
reported with the array, the index (environment, agent, element) and both values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from warpsim.device import device_name, gpu_available, simulator_enabled
from warpsim.environment import Environment
from warpsim.errors import InvalidTypeError, InvalidValueError, UnavailableError
from warpsim.registry import RUNTIME_OPTIONS, env_class, make

PROGRESS_EVERY = 10
"""Steps between two progress messages."""
BASE_ARRAY_DIMS = {"observations": ("E", "N", "D"), "rewards": ("E", "N"), "done": ("E",), "episode": ("E",)}
"""Dims of the arrays every environment has (the others are declared in ``env.spec.state``)."""
AXIS_NAMES: dict[str | int, str] = {"E": "env", "N": "agent"}
"""How an index along a dim is named in a report; any other dim is an 'element'."""


@dataclass(frozen=True)
class Mismatch:
    """The first value where the kernels and the reference differ."""

    array: str
    """Name of the array: a state array, 'observations', 'rewards' or 'done'."""
    step: int
    """Steps taken when it differed (0: right after the first reset)."""
    index: tuple[int, ...]
    """Index of the first differing value (in C order) in the array."""
    axes: tuple[str, ...]
    """What each position of ``index`` counts: 'env', 'agent' or 'element'."""
    reference: object
    """The value of the NumPy reference (a NumPy scalar)."""
    kernels: object
    """The value the kernels wrote (a NumPy scalar)."""
    count: int
    """How many values of this array differ at this step."""
    size: int
    """How many values the array holds."""
    also_differ: tuple[str, ...] = ()
    """Other arrays that differ at the same step (compared later in the order)."""

    @property
    def env(self) -> int | None:
        return self._along("env")

    @property
    def agent(self) -> int | None:
        return self._along("agent")

    @property
    def element(self) -> int | tuple[int, ...] | None:
        elements = tuple(i for i, axis in zip(self.index, self.axes) if axis == "element")
        return elements[0] if len(elements) == 1 else (elements or None)

    def _along(self, axis: str) -> int | None:
        return self.index[self.axes.index(axis)] if axis in self.axes else None

    def __str__(self) -> str:
        position = ", ".join(f"{axis} {i}" for axis, i in zip(self.axes, self.index))
        when = "right after the first reset" if self.step == 0 else f"after step {self.step}"
        text = (f"{self.array}[{', '.join(map(str, self.index))}] ({position}) differs {when}: "
                f"reference {self.reference}, kernels {self.kernels}; "
                f"{self.count} of {self.size} values of {self.array} differ")
        if self.also_differ:
            text += f" (also differing at this step: {', '.join(self.also_differ)})"
        return text


@dataclass(frozen=True)
class CheckReport:
    """What ``check`` compared and whether the kernels agreed with the reference."""

    env: str
    num_envs: int
    num_agents: int
    kernels_ran_on: str
    """'CUDA simulator' or the GPU's name."""
    steps: int
    """Steps taken by both backends (up to the mismatching one)."""
    episodes_ended: int
    """Episode ends (sum of done) over those steps: the resets the comparison covered."""
    arrays_compared: int
    """Arrays compared after the reset and after each step."""
    values_compared: int
    """Values compared in all, over every step."""
    rtol: float
    atol: float
    mismatch: Mismatch | None = None

    @property
    def consistent(self) -> bool:
        return self.mismatch is None

    def __str__(self) -> str:
        counts = (f"{self.env} E={self.num_envs} N={self.num_agents}, kernels on {self.kernels_ran_on} vs "
                  f"NumPy reference: {_plural(self.steps, 'step')}, {_plural(self.episodes_ended, 'episode')} "
                  f"ended (and reset), {self.arrays_compared} arrays compared {_plural(self.steps + 1, 'time')} "
                  f"(after the reset and each step), {self.values_compared} values "
                  f"(rtol={self.rtol:g}, atol={self.atol:g})")
        if self.mismatch is None:
            return f"consistent: {counts}"
        return f"mismatch: {self.mismatch}\n  {counts}"


def check(env: str | type[Environment], num_envs: int = 2, steps: int = 64, seed: int = 0, *,
          rtol: float = 1e-5, atol: float = 1e-6, progress: Callable[[str], None] | None = None,
          **params: Any) -> CheckReport:
    """Steps ``env`` on the kernels and on the NumPy reference side by side.

    ``env`` is a registered id or an Environment subclass; ``params`` are its parameters.
    ``steps`` random steps follow the seeded reset; pick enough for several episodes of
    the environment (the report counts the episodes that ended). ``progress``, if
    given, is called with a short message every PROGRESS_EVERY steps.
    """
    cls = env_class(env)
    _check_options(steps, rtol, atol, params)
    if not (simulator_enabled() or gpu_available()):
        raise UnavailableError(
            "checking the kernels needs a CUDA GPU, and none was found; to run them on Numba's "
            "CUDA simulator instead, set NUMBA_ENABLE_CUDASIM=1 in the environment before Python "
            "starts (e.g. NUMBA_ENABLE_CUDASIM=1 warpsim check ...) and keep num_envs x agents small")
    reference = make(cls, num_envs, backend="numpy", seed=seed, **params)
    kernels = make(cls, num_envs, backend="cuda", seed=seed, **params)
    names = [*kernels.state, "observations", "rewards", "done"]
    dims = {**BASE_ARRAY_DIMS, **{array.name: array.dims for array in kernels.spec.state}}
    axes = {name: tuple(AXIS_NAMES.get(dim, "element") for dim in dims[name]) for name in names}
    rng = np.random.default_rng(seed)
    levels = np.array(kernels.spec.action_levels)
    values_per_step = sum(_arrays(kernels)[name].size for name in names)

    def report(step: int, episodes_ended: int, mismatch: Mismatch | None = None) -> CheckReport:
        return CheckReport(
            env=cls.name or cls.__name__, num_envs=kernels.num_envs, num_agents=kernels.num_agents,
            kernels_ran_on="CUDA simulator" if simulator_enabled() else device_name(kernels.placement),
            steps=step, episodes_ended=episodes_ended, arrays_compared=len(names),
            values_compared=(step + 1) * values_per_step, rtol=rtol, atol=atol, mismatch=mismatch)

    episodes_ended = 0
    for step in range(steps + 1):
        if step > 0:
            actions = rng.integers(0, levels, size=tuple(kernels.actions.shape), dtype=np.int32)
            reference.step(actions)
            kernels.step(actions)
        expected, got = _arrays(reference), _arrays(kernels)
        episodes_ended += int(expected["done"].sum())
        mismatch = _first_mismatch(names, axes, expected, got, step, rtol, atol)
        if mismatch is not None:
            return report(step, episodes_ended, mismatch)
        if progress and step % PROGRESS_EVERY == 0 and 0 < step < steps:
            progress(f"step {step}/{steps}: consistent so far, {episodes_ended} episodes ended")
    return report(steps, episodes_ended)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _check_options(steps, rtol, atol, params) -> None:
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool) or steps < 1:
        raise InvalidValueError(f"steps={steps!r} is not allowed; give an integer >= 1")
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value >= 0):
            raise InvalidValueError(f"{name}={value!r} is not allowed; give a finite number >= 0")
    runtime = [name for name in params if name in RUNTIME_OPTIONS]
    if runtime:
        raise InvalidTypeError(f"check() sets the runtime options itself (both backends, one seed); "
                        f"remove {', '.join(map(repr, runtime))}")


def _arrays(env: Environment) -> dict[str, np.ndarray]:
    """Every compared array of ``env`` as a host NumPy array (a copy only when on a GPU)."""
    tensors = {name: tensor for name, tensor in env.state.items()}
    tensors.update(observations=env.observations, rewards=env.rewards, done=env.done)
    return {name: tensor.detach().cpu().numpy() for name, tensor in tensors.items()}


def _differs(expected: np.ndarray, got: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    if np.issubdtype(expected.dtype, np.floating):
        # float64 so the tolerance itself is not rounded; NaN and inf agree with themselves.
        return ~np.isclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol,
                           equal_nan=True)
    return got != expected


def _first_mismatch(names, axes, expected, got, step, rtol, atol) -> Mismatch | None:
    differing = [(name, _differs(expected[name], got[name], rtol, atol)) for name in names]
    differing = [(name, where) for name, where in differing if where.any()]
    if not differing:
        return None
    (name, where), others = differing[0], differing[1:]
    index = tuple(int(i) for i in np.argwhere(where)[0])
    return Mismatch(array=name, step=step, index=index, axes=axes[name], reference=expected[name][index],
                    kernels=got[name][index], count=int(where.sum()), size=where.size,
                    also_differ=tuple(other for other, _ in others))
