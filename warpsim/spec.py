"""What an environment declares: its state arrays, its EnvSpec, its frames for drawing,
and the namespace through which its arrays are reached by name."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

STATE_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
OBSERVATION_DTYPES = ("float32", "bfloat16")
"""Values of ``EnvSpec.observation_dtype``."""


@dataclass(frozen=True)
class StateArray:
    """Declares one state array: its name, dtype and shape in terms of E and N.

    ``dims`` holds ``"E"`` (environments), ``"N"`` (agents) or positive ints, e.g.
    ``("E", "N")`` for a per-agent value or ``("N",)`` for a constant per agent.
    ``bounds`` ``(low, high)``, if given, is the closed range every value keeps under
    the rules: ``validate_state()`` refuses a value outside it (and any NaN or inf).
    """

    name: str
    dtype: type
    dims: tuple[str | int, ...]
    doc: str = ""
    bounds: tuple[float, float] | None = None

    def shape(self, num_envs: int, num_agents: int) -> tuple[int, ...]:
        sizes = {"E": num_envs, "N": num_agents}
        return tuple(sizes[dim] if isinstance(dim, str) else dim for dim in self.dims)


@dataclass(frozen=True)
class EnvSpec:
    """What an environment is made of, for given parameters.

    Actions are discrete or continuous, one of the two:

    - ``action_levels[k]`` is the number of choices of action component k: actions are
      int32[E, N, len(action_levels)], a valid index in ``[0, action_levels[k] - 1]``;
    - ``action_bounds[k]`` is the closed range ``(low, high)`` of continuous component k
      (``action_levels`` left empty): actions are float32[E, N, len(action_bounds)]. A
      value outside its range is clamped to it by the step (the NumPy reference and the
      kernels alike); checked mode refuses it, and NaN and inf, instead.

    ``agent_roles[i]`` indexes
    ``role_names``; agents of one role share a policy in the trainer.
    ``counters`` names int32[E] state arrays that count events (tags, goals, ...)
    since the environment was made, across resets: the trainer and ``warpsim
    evaluate`` report how many happen per episode. ``write_order`` names arrays (state
    arrays, ``"observations"``, ``"rewards"``, ``"done"``) in the order a step computes
    them: ``warpsim check`` lists the arrays that differ at a step in this order, so the
    first one named points at the cause (unnamed arrays follow in declaration order).
    ``observation_label`` and ``distance_evaluations_per_step`` (optional) describe the
    step to benchmark records: how agents observe (e.g. "full", "partial K=10") and the
    pairwise distances (dx, dy, dx*dx + dy*dy) one environment step evaluates, for the
    floor; left None, records say "unknown".
    ``scratch`` declares working arrays of the kernels (e.g. a neighbour grid in global
    memory): allocated once with the environment and counted in its memory check, but
    neither state nor compared; kernels reach them as ``env.scratch.<name>``.
    ``role_observation_sizes`` (optional) gives each role, in ``role_names`` order, an observation
    of its own size, for roles that observe different things: an agent of role r observes the first
    ``role_observation_sizes[r]`` entries of its row of ``env.observations`` (``observation_size``,
    the row's width, at least the largest), and the step writes zeros past them (checked mode
    refuses anything else). Left empty, every role observes all ``observation_size`` entries.
    ``role_action_levels`` or ``role_action_bounds`` (optional, of the actions' kind) gives each role,
    in ``role_names`` order, actions of its own: an agent of role r acts with the first
    ``len(role_action_levels[r])`` components of its row of ``env.actions``, each of its own levels
    (or bounds), and leaves the rest at zero. ``action_levels`` (``action_bounds``) then declares the
    row: as many components as the widest role's, each holding every role's levels (bounds). Left
    empty, every role acts with the whole row. Roles of both kinds give both, each role its actions
    in one and () in the other, in a row of ``action_bounds`` (float32): a discrete role's indices
    are stored as whole float32 values, whatever the row's bounds (``continuous_of``).
    ``observation_dtype`` is the dtype of ``env.observations``, one of OBSERVATION_DTYPES. NumPy
    and Numba have no bfloat16: the reference and the kernels see a bfloat16 buffer as int16 and
    store the rounded bits (``warpsim.kernels.bfloat16``).
    """

    num_agents: int
    observation_size: int
    action_levels: tuple[int, ...]
    state: tuple[StateArray, ...]
    role_names: tuple[str, ...]
    agent_roles: tuple[int, ...]
    counters: tuple[str, ...] = ()
    write_order: tuple[str, ...] = ()
    observation_label: str | None = None
    distance_evaluations_per_step: int | None = None
    scratch: tuple[StateArray, ...] = ()
    observation_dtype: str = "float32"
    action_bounds: tuple[tuple[float, float], ...] = ()
    role_observation_sizes: tuple[int, ...] = ()
    role_action_levels: tuple[tuple[int, ...], ...] = ()
    role_action_bounds: tuple[tuple[tuple[float, float], ...], ...] = ()

    def observation_size_of(self, role: str) -> int:
        """The entries of its row of ``observations`` an agent of ``role`` observes (the first ones)."""
        if not self.role_observation_sizes:
            return self.observation_size
        return self.role_observation_sizes[self.role_names.index(role)]

    def action_levels_of(self, role: str) -> tuple[int, ...]:
        """The levels of the action components of an agent of ``role`` (the first ones of its row); () if continuous."""
        if self.role_action_levels:
            return tuple(self.role_action_levels[self.role_names.index(role)])
        return self.action_levels

    def action_bounds_of(self, role: str) -> tuple[tuple[float, float], ...]:
        """The bounds of the action components of an agent of ``role`` (the first ones of its row); () if discrete."""
        if self.role_action_bounds:
            return tuple(tuple(pair) for pair in self.role_action_bounds[self.role_names.index(role)])  # type: ignore[misc]
        return self.action_bounds

    def continuous_of(self, role: str) -> bool:
        """Whether an agent of ``role`` acts with continuous values (``action_bounds_of``) rather than indices."""
        return bool(self.action_bounds_of(role))

    def action_size_of(self, role: str) -> int:
        """The action components an agent of ``role`` acts with."""
        return len(self.action_bounds_of(role)) if self.continuous_of(role) else len(self.action_levels_of(role))

    @property
    def continuous(self) -> bool:
        """Whether the actions are continuous (``action_bounds``) rather than indices (``action_levels``)."""
        return bool(self.action_bounds)

    @property
    def action_size(self) -> int:
        """A, the action components of an agent."""
        return len(self.action_bounds) if self.continuous else len(self.action_levels)


@dataclass(frozen=True)
class Frame:
    """Where the agents of one environment are, for drawing it (``warpsim render``)."""

    positions: np.ndarray
    """float[N, 2], x and y of every agent."""
    active: np.ndarray
    """bool[N], False for agents out of the game (drawn faded)."""
    extent: float
    """The arena is the square [origin, origin + extent] x [origin, origin + extent]."""
    time: int
    """Steps since the environment's reset."""
    headings: np.ndarray | None = None
    """float[N], each agent's heading in radians (drawn as a short arrow), for an environment that has one."""
    counts: dict[str, int] = field(default_factory=dict)
    """Events of the episode so far by counter (e.g. ``{"tags": 3}``), shown in the title; ``play_episode``
    fills it from the environment's counters."""
    origin: float = 0.0
    """The arena's lower left corner, on both axes."""
    landmarks: np.ndarray | None = None
    """float[L, 2], x and y of fixed points that are not agents (MPE's landmarks and obstacles), drawn as rings."""
    goal: int | None = None
    """The landmark some agents are to reach, drawn filled."""

    @classmethod
    def centred(cls, positions: np.ndarray, time: int, landmarks: np.ndarray | None = None,
                goal: int | None = None) -> Frame:
        """A frame of a world centred on (0, 0), as MPE's: every agent active, the view the square
        [-h, h]^2 of the least half-width h, a multiple of 0.5 and at least 1, that holds every finite
        agent and landmark (agents pushed out of MPE's box stay in view)."""
        points = positions if landmarks is None else np.concatenate([positions, landmarks])
        finite = np.abs(points[np.isfinite(points)])
        half = max(1.0, math.ceil(2 * float(finite.max(initial=0))) / 2)
        return cls(positions, np.ones(len(positions), bool), 2 * half, time, origin=-half, landmarks=landmarks,
                   goal=goal)


def host_points(x, y, env_index: int, count: int | None = None) -> np.ndarray:
    """float[K, 2]: x and y (tensors [E, K]) of environment ``env_index``'s first ``count`` bodies (all by
    default), on the host: a Frame's positions or landmarks."""
    return np.stack([x[env_index, :count].cpu().numpy(), y[env_index, :count].cpu().numpy()], axis=1)


class ArrayNamespace:
    """Arrays reachable by attribute; an attribute cannot be rebound, only written into."""

    def __init__(self, arrays: dict):
        object.__setattr__(self, "_arrays", dict(arrays))
        for name, array in arrays.items():
            object.__setattr__(self, name, array)

    def __getattr__(self, name: str) -> Any:
        # Only reached for names that are not arrays; the annotation lets type checkers
        # accept ``state.loc_x`` for any environment's arrays.
        raise AttributeError(f"no array named '{name}'; arrays: {', '.join(self.__dict__.get('_arrays', ()))}")

    def __setattr__(self, name, value):
        raise AttributeError(
            f"cannot rebind '{name}': write into the array in place, e.g. state.{name}[...] = value")

    def __iter__(self):
        return iter(self._arrays)

    def __contains__(self, name):
        return name in self._arrays

    def items(self):
        return self._arrays.items()

    def __repr__(self):
        shapes = ", ".join(f"{name}{tuple(a.shape)}" for name, a in self._arrays.items())
        return f"ArrayNamespace({shapes})"
