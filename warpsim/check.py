"""``warpsim check``: the kernels against the NumPy reference, step by step.

The same environment is built twice, on the ``numpy`` backend (the specification) and
on the ``cuda`` backend (the kernels: on a GPU, or on Numba's CUDA simulator, which the
command line picks by itself when there is no GPU). Both draw the same starts from the
same seed (the random streams are counter-based), get the same random valid actions
every step and reset the environments whose episode ended. After the reset (step 0)
and after every step, every state array, the observations, rewards, done and terminated
flags are compared: integers and booleans exactly, floats to float32 rounding (``|kernels -
reference| <= atol + rtol * |reference|``).

Every step starts the kernels from the reference's state (copied in after each
comparison), so a difference within the tolerance cannot grow over steps, and a
mismatch is reported at the step that makes it. The first mismatching step stops the
check: the arrays that differ are named in the order the step computes them
(``EnvSpec.write_order``), with the index (environment, agent, element) and both values
of the first differing value of the first array. A mismatch is called a near-tie when
the reference itself gives the kernels' values once its float inputs move by one ulp
(a comparison decided by rounding: the kernels round differently from the reference);
with ``allow_near_ties`` such steps are listed and the check goes on.

By default the check runs three episodes: 3 x the environment's ``episode_length``
parameter (``max_cycles`` in the MPE scenarios), or 64 steps if it has none.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from warpsim.device import device_name, gpu_available, simulator_enabled
from warpsim.environment import Environment
from warpsim.errors import InvalidTypeError, InvalidValueError, UnavailableError
from warpsim.layout import action_limits, indexed_components
from warpsim.registry import RUNTIME_OPTIONS, env_class, make
from warpsim.validation import require_int

PROGRESS_EVERY = 10
"""Steps between two progress messages."""
EPISODES_BY_DEFAULT = 3
"""Episodes the check runs when no number of steps is given."""
STEPS_WITHOUT_EPISODE_LENGTH = 64
"""Steps the check runs by default for an environment without an ``episode_length`` parameter."""
NEAR_TIE_TRIALS = 8
"""Reference steps, each from inputs moved by one ulp at random, that look for a near-tie."""
BASE_ARRAY_DIMS = {"observations": ("E", "N", "D"), "rewards": ("E", "N"), "done": ("E",), "terminated": ("E",),
                   "episode": ("E",)}
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
    """Other arrays that differ at the same step, in the order the step computes them."""
    near_tie: bool = False
    """The reference gives the kernels' values when its float inputs move by one ulp."""
    role: str | None = None
    """The role of the agent it belongs to (None for an array without an agent axis)."""

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
        position = ", ".join(f"{axis} {i}" + (f", role {self.role}" if axis == "agent" and self.role else "")
                             for axis, i in zip(self.axes, self.index))
        when = "right after the first reset" if self.step == 0 else f"after step {self.step}"
        text = (f"{self.array}[{', '.join(map(str, self.index))}] ({position}) differs {when}: "
                f"reference {self.reference}, kernels {self.kernels}; "
                f"{self.count} of {self.size} values of {self.array} differ")
        if self.also_differ:
            text += f" (also differing at this step, in the order it computes them: {', '.join(self.also_differ)})"
        if self.near_tie:
            text += ("; a near-tie: the reference gives the kernels' values when its float inputs move by one ulp, "
                     "so the kernels round differently from it (docs/custom_envs.md: What the simulator cannot catch)")
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
    near_ties: tuple[Mismatch, ...] = ()
    """Steps whose differences were near-ties, allowed (``allow_near_ties``) and passed over."""

    @property
    def consistent(self) -> bool:
        return self.mismatch is None

    def __str__(self) -> str:
        counts = (f"{self.env} E={self.num_envs} N={self.num_agents}, kernels on {self.kernels_ran_on} vs "
                  f"NumPy reference: {_plural(self.steps, 'step')}, {_plural(self.episodes_ended, 'episode')} "
                  f"ended (and reset), {self.arrays_compared} arrays compared {_plural(self.steps + 1, 'time')} "
                  f"(after the reset and each step), {self.values_compared} values "
                  f"(rtol={self.rtol:g}, atol={self.atol:g})")
        allowed = "".join(f"\n  allowed {tie}" for tie in self.near_ties)
        if self.mismatch is None:
            return f"consistent: {counts}{allowed}"
        return f"mismatch: {self.mismatch}\n  {counts}{allowed}"


def check(env: str | type[Environment], num_envs: int = 2, steps: int | None = None, seed: int = 0, *,
          rtol: float = 1e-5, atol: float = 1e-6, allow_near_ties: bool = False,
          progress: Callable[[str], None] | None = None, **params: Any) -> CheckReport:
    """Steps ``env`` on the kernels and on the NumPy reference side by side.

    ``env`` is a registered id or an Environment subclass; ``params`` are its parameters.
    ``steps`` random steps follow the seeded reset (default: three episodes, see the
    module docstring; the report counts the episodes that ended). ``progress``, if
    given, is called with a short message every PROGRESS_EVERY steps.
    """
    cls = env_class(env)
    _check_options(steps, rtol, atol, params)
    if not (simulator_enabled() or gpu_available()):
        raise UnavailableError(
            "checking the kernels needs a CUDA GPU, and none was found; to run them on Numba's "
            "CUDA simulator instead, use the command line (warpsim check ..., which picks the simulator "
            "itself) or set NUMBA_ENABLE_CUDASIM=1 in the environment before Python starts, and keep "
            "num_envs x agents small")
    reference = make(cls, num_envs, backend="numpy", seed=seed, **params)
    kernels = make(cls, num_envs, backend="cuda", seed=seed, **params)
    if steps is None:
        steps = default_steps(kernels)
    names = _in_write_order([*kernels.state, "observations", "rewards", "done", "terminated"],
                            kernels.spec.write_order)
    dims = {**BASE_ARRAY_DIMS, **{array.name: array.dims for array in kernels.spec.state}}
    axes = {name: tuple(AXIS_NAMES.get(dim, "element") for dim in dims[name]) for name in names}
    rng = np.random.default_rng(seed)
    spec = kernels.spec
    low, high = action_limits(spec).numpy()  # [N, A] each: every agent's own, by its role
    indexed = indexed_components(spec).numpy()
    roles = [spec.role_names[role] for role in spec.agent_roles]

    def random_actions() -> np.ndarray:
        """Indices uniform over each component's levels, or values uniform in its bounds (zero past a role's own)."""
        shape = tuple(kernels.actions.shape)
        if spec.continuous:  # a discrete role's indices as whole values
            values = rng.uniform(low, high, size=shape)
            return np.where(indexed, np.floor(values), values).astype(np.float32)
        return rng.integers(0, high, size=shape, dtype=np.int32)

    values_per_step = sum(_arrays(kernels)[name].size for name in names)
    near_ties: list[Mismatch] = []
    probe = _NearTieProbe(cls, num_envs, seed, params, rtol, atol)

    def report(step: int, episodes_ended: int, mismatch: Mismatch | None = None) -> CheckReport:
        return CheckReport(
            env=cls.display_name, num_envs=kernels.num_envs, num_agents=kernels.num_agents,
            kernels_ran_on=device_name(kernels.placement),
            steps=step, episodes_ended=episodes_ended, arrays_compared=len(names),
            values_compared=(step + 1) * values_per_step, rtol=rtol, atol=atol, mismatch=mismatch,
            near_ties=tuple(near_ties))

    episodes_ended = 0
    for step in range(steps + 1):
        if step > 0:
            actions = random_actions()
            before = {name: array.copy() for name, array in _arrays(reference).items()}
            reference.step(actions)
            kernels.step(actions)
        expected, got = _arrays(reference), _arrays(kernels)
        episodes_ended += int(expected["done"].sum())
        differing = {name: where for name in names if (where := _differs(expected[name], got[name], rtol, atol)).any()}
        if differing:
            near_tie = step > 0 and probe.explains(before, actions, got, differing)
            mismatch = _mismatch(differing, axes, expected, got, step, near_tie, roles)
            if not (near_tie and allow_near_ties):
                return report(step, episodes_ended, mismatch)
            near_ties.append(mismatch)
        _load(kernels, expected)
        if progress and step % PROGRESS_EVERY == 0 and 0 < step < steps:
            progress(f"step {step}/{steps}: consistent so far, {episodes_ended} episodes ended")
    return report(steps, episodes_ended)


EPISODE_LENGTH_NAMES = ("episode_length", "max_cycles")
"""The parameters that give an episode's length: warpsim's name, and MPE's (the MPE scenarios keep MPE2's names)."""


def default_steps(env: Environment) -> int:
    """Three episodes of ``env`` (its ``episode_length`` or ``max_cycles`` parameter), or 64 steps without one."""
    for name in EPISODE_LENGTH_NAMES:
        episode_length = getattr(env.params, name, None)
        if isinstance(episode_length, int) and episode_length >= 1:
            return EPISODES_BY_DEFAULT * episode_length
    return STEPS_WITHOUT_EPISODE_LENGTH


class _NearTieProbe:
    """Tells whether the reference, from inputs one ulp away, gives the kernels' values."""

    def __init__(self, cls, num_envs, seed, params, rtol, atol):
        # Unchecked: a state one ulp away may leave its declared bounds (a speed of 0 moved down is negative).
        self._make = lambda: make(cls, num_envs, backend="numpy", seed=seed, checked=False, **params)
        self._env: Environment | None = None
        self._rng = np.random.default_rng(seed)
        self._rtol, self._atol = rtol, atol

    def explains(self, before: dict, actions: np.ndarray, got: dict, differing: dict) -> bool:
        """True when every differing value is what the reference gives in some trial step
        from ``before`` with each float state value moved by -1, 0 or +1 ulp at random."""
        if self._env is None:
            self._env = self._make()
        env = self._env
        unexplained = {name: where.copy() for name, where in differing.items()}
        floats = [name for name in env.state if np.issubdtype(before[name].dtype, np.floating)]
        for _ in range(NEAR_TIE_TRIALS):
            moved = dict(before)
            for name in floats:
                value = before[name]
                direction = self._rng.integers(-1, 2, size=value.shape)
                one_ulp_away = np.nextafter(value, np.where(direction > 0, np.inf, -np.inf).astype(value.dtype))
                moved[name] = np.where(direction == 0, value, one_ulp_away)
            _load(env, moved)
            env.step(actions)
            trial = _arrays(env)
            for name, where in unexplained.items():
                where &= _differs(trial[name], got[name], self._rtol, self._atol)
            if not any(where.any() for where in unexplained.values()):
                return True
        return False


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _check_options(steps, rtol, atol, params) -> None:
    if steps is not None:
        require_int("steps", steps, 1)
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value >= 0):
            raise InvalidValueError(f"{name}={value!r} is not allowed; give a finite number >= 0")
    runtime = [name for name in params if name in RUNTIME_OPTIONS]
    if runtime:
        raise InvalidTypeError(f"check() sets the runtime options itself (both backends, one seed); "
                        f"remove {', '.join(map(repr, runtime))}")


def _arrays(env: Environment) -> dict[str, np.ndarray]:
    """Every compared array of ``env`` as a host NumPy array (a copy only when on a GPU, or of
    bfloat16 observations, which NumPy lacks: as float32, exactly)."""
    tensors = {name: tensor for name, tensor in env.state.items()}
    tensors.update(observations=env.observations, rewards=env.rewards, done=env.done, terminated=env.terminated)
    return {name: (tensor.float() if tensor.dtype == torch.bfloat16 else tensor).detach().cpu().numpy()
            for name, tensor in tensors.items()}


def _differs(expected: np.ndarray, got: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    if np.issubdtype(expected.dtype, np.floating):
        # float64 so the tolerance itself is not rounded; NaN and inf agree with themselves.
        return ~np.isclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol,
                           equal_nan=True)
    return got != expected


def _in_write_order(names: list[str], write_order: tuple[str, ...]) -> list[str]:
    """``names`` with those in ``write_order`` first, in that order; the rest as declared."""
    return [*(name for name in write_order if name in names), *(name for name in names if name not in write_order)]


def _load(env: Environment, arrays: dict[str, np.ndarray]) -> None:
    """Overwrites ``env``'s state, observations, rewards, done and terminated with ``arrays`` (host
    arrays; bfloat16 observations as float32 from ``_arrays``, which convert back exactly)."""
    tensors = dict(env.state.items())
    tensors.update(observations=env.observations, rewards=env.rewards, done=env.done, terminated=env.terminated)
    for name, tensor in tensors.items():
        tensor.copy_(torch.from_numpy(np.ascontiguousarray(arrays[name])))


def _mismatch(differing: dict[str, np.ndarray], axes, expected, got, step: int, near_tie: bool,
              roles: list[str]) -> Mismatch:
    """The first differing value of the first differing array; ``roles``: each agent's role, by agent."""
    (name, where), *others = differing.items()
    index = tuple(int(i) for i in np.argwhere(where)[0])
    agent = index[axes[name].index("agent")] if "agent" in axes[name] else None
    return Mismatch(array=name, step=step, index=index, axes=axes[name], reference=expected[name][index],
                    kernels=got[name][index], count=int(where.sum()), size=where.size,
                    also_differ=tuple(other for other, _ in others), near_tie=near_tie,
                    role=None if agent is None else roles[agent])
