"""Actions a caller hands in, and checked mode: actions in range and a valid state, without a
host read per GPU step.

An action index must be within its component's levels; a continuous action finite and
within its component's bounds (the step would clamp it: checked mode refuses it instead).
Where roles observe observations of their own sizes, every entry of a row past its role's
size must be 0: a kernel that writes there is refused.

Actions given from the host to ``step(actions)`` are checked on the host before they are
copied in. What is already in the environment's memory (actions written in place, a tensor
on its device, the state) is checked every ``check_every`` steps: 1 on the CPU, where a
read costs nothing (refused before the step), ``CHECK_EVERY`` on a GPU (actions flagged on
the device, the flag and the state read at intervals and by ``check()``).
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from warpsim.errors import InvalidTypeError, InvalidValueError
from warpsim.inputs import as_input_tensor
from warpsim.spec import ArrayNamespace, EnvSpec, StateArray
from warpsim.validation import require_int

CHECK_EVERY = 64
"""On a GPU, checked mode reads its device-side findings back every this many steps (``check_every``)."""


class CheckedMode:
    """The checks of ``Environment`` (a base class of it), and ``step(actions)``'s copy of the actions."""

    spec: EnvSpec
    state: ArrayNamespace
    actions: torch.Tensor
    observations: torch.Tensor
    checked: bool
    _action_limits: torch.Tensor
    _action_indices: torch.Tensor
    display_name: str
    _bad_actions_seen: torch.Tensor
    _steps_since_check: int
    _check_every: int

    @property
    def check_every(self) -> int:
        """Checked mode's interval, in steps, between reads of its findings (``check()``).

        1 (the default on the CPU, where a read costs nothing): before every step, actions
        out of range and an invalid state are refused at once. ``CHECK_EVERY`` (the default on
        a GPU, where a read makes the host wait for the device): actions already on the device
        are checked there into a flag, and the flag and the state are read every so many steps.
        Actions given from the host to ``step(actions)`` are always checked at once."""
        return self._check_every

    @check_every.setter
    def check_every(self, steps: int) -> None:
        self._check_every = require_int("check_every", steps, 1)

    def _write_actions(self, actions: Any) -> None:
        """Copies ``actions`` (a tensor, array or list of env.actions' shape) into env.actions: indices of an
        integer dtype, or floating-point continuous actions; checked first in checked mode."""
        actions = as_input_tensor(actions, "actions").detach()  # values only: a tensor that requires grad too
        if tuple(actions.shape) != tuple(self.actions.shape):
            raise InvalidValueError(f"actions have shape {tuple(actions.shape)}; expected "
                                    f"{tuple(self.actions.shape)} (num_envs, num_agents, action components)")
        if self.spec.continuous:
            if not actions.dtype.is_floating_point:
                raise InvalidTypeError(f"actions have dtype {actions.dtype}; {self.display_name}'s actions are "
                                       f"continuous: give floating-point values (float32 is stored, float64 "
                                       f"converted)")
        elif actions.dtype.is_floating_point or actions.dtype.is_complex or actions.dtype == torch.bool:
            raise InvalidTypeError(f"actions have dtype {actions.dtype}; expected an integer dtype (int32 is stored)")
        if self.checked and actions.device.type == "cpu":
            # Before narrowing to the stored dtype: int32 would wrap 2**32 + 3 to 3, float32 round onto a bound.
            self._check_host_actions(actions)
        actions = actions.to(self.actions.device)
        if not self.spec.continuous and actions.dtype not in (torch.int32, torch.int16, torch.int8, torch.uint8):
            actions = actions.clamp(-2**31, 2**31 - 1)  # out of range stays out of range (and is clamped)
        if self.checked and actions.device.type != "cpu":
            self._check_device_actions(actions)
        self.actions.copy_(actions)

    def _bad_actions(self, actions: torch.Tensor) -> torch.Tensor:
        # .to: actions given from the host are checked on the host, before they are copied over
        low, high = self._action_limits.to(actions.device)
        if not self.spec.continuous:
            return (actions < low) | (actions >= high)
        outside = ~((actions >= low) & (actions <= high))  # NaN fails both comparisons
        # a discrete role's index in a row of float32: a whole value below its levels
        not_an_index = (actions < low) | (actions >= high) | (actions != actions.floor())
        return torch.where(self._action_indices.to(actions.device), not_an_index, outside)

    def _check_host_actions(self, actions: torch.Tensor) -> None:
        """Checked mode, actions on the host: refused at once, naming the first bad value."""
        bad = self._bad_actions(actions)
        if bool(bad.any()):
            env, agent, component = (int(i) for i in bad.nonzero()[0])
            value = actions[env, agent, component]
            role = self.spec.role_names[self.spec.agent_roles[agent]]
            where = f"(env {env}, agent {agent}" + (f", role {role})" if self._roles_act_apart else ")")
            if component >= self.spec.action_size_of(role):
                raise InvalidValueError(
                    f"{self.display_name}: action component {component} {where} holds {value.item()!r}, past role "
                    f"{role!r}'s {self.spec.action_size_of(role)} component(s); allowed: 0 there")
            if self.spec.continuous_of(role):
                low, high = self.spec.action_bounds_of(role)[component]
                # NumPy's shortest text of the value in its own precision: -1.0001, not -1.000100016593933
                shown = value.to(torch.float64 if value.dtype == torch.float64 else torch.float32).numpy()
                raise InvalidValueError(
                    f"{self.display_name}: action {shown!s} of component {component} {where} is "
                    f"not allowed; allowed: a finite value in [{low:g}, {high:g}]")
            problem = "out of range" if float(value) == float(value.floor()) else "not a whole number"
            raise InvalidValueError(
                f"action index {value.item()!r} of component {component} {where} is {problem}; allowed: "
                f"0..{self.spec.action_levels_of(role)[component] - 1}")

    def _check_device_actions(self, actions: torch.Tensor) -> None:
        """Checked mode, actions in the environment's memory: refused at once with ``check_every``
        1 (a host read), else flagged on the device for the next ``check()``."""
        if self.check_every == 1:
            self._check_host_actions(actions)
        else:
            self._flag_bad_actions(actions)

    def _flag_bad_actions(self, actions: torch.Tensor) -> None:
        torch.logical_or(self._bad_actions_seen, self._bad_actions(actions).any(), out=self._bad_actions_seen)

    @property
    def _roles_act_apart(self) -> bool:
        return bool(self.spec.role_action_levels or self.spec.role_action_bounds)

    def _allowed_actions(self) -> str:
        """What actions may hold, component by component, role by role where roles act apart (0 past a
        role's own components)."""
        spec = self.spec

        def of(role: str) -> str:
            if spec.continuous_of(role):
                return ", ".join(f"component {k}: [{low:g}, {high:g}]"
                                 for k, (low, high) in enumerate(spec.action_bounds_of(role)))
            levels = spec.action_levels_of(role)
            return ", ".join(f"component {k}: 0..{level - 1}" for k, level in enumerate(levels))

        if not self._roles_act_apart:
            return of(spec.role_names[0])
        return "; ".join(f"role {role!r}: {of(role)}" + (", 0 after" if spec.action_size_of(role) < spec.action_size
                                                          else "") for role in spec.role_names)

    def count_steps(self, steps: int) -> None:
        """Counts steps taken without a check (by ``step()``, or replayed from a graph); checks
        when ``check_every`` is reached."""
        if self.checked:
            self._steps_since_check += steps
            if self._steps_since_check >= self.check_every:
                self.check()

    def check(self) -> None:
        """Reads checked mode's device-side findings back (one host read) and raises
        InvalidValueError if an action index out of range reached the device since the last
        check, or if the state is invalid now (``validate_state()``).

        Checked mode calls it every ``check_every`` steps; call it yourself for an earlier
        report. Actions given from the host to ``step(actions)`` are checked at once, before
        they are copied in."""
        steps, self._steps_since_check = self._steps_since_check, 0
        state_flags = (self._state_violations(array).any() for array in self._checked_state)
        past = self._past_role_sizes
        written_past = [] if past is None else [((self.observations != 0) & past).any()]
        flags = torch.stack([self._bad_actions_seen, *written_past, *state_flags])
        if not bool(flags.any()):
            return
        if bool(flags[0]):
            self._bad_actions_seen.zero_()
            kinds = {self.spec.continuous_of(role) for role in self.spec.role_names}
            what = ("an action outside its bounds, NaN or inf" if kinds == {True} else
                    "an action index out of range" if kinds == {False} else
                    "an action outside its role's bounds (NaN or inf included) or levels")
            raise InvalidValueError(
                f"{what} reached env.actions on the device within the last {steps} step(s) (the step clamped it "
                f"to the nearest valid value); allowed: {self._allowed_actions()}. Actions given from the host to "
                f"step(actions) are checked at once; set env.check_every = 1 to find the step")
        if written_past and bool(flags[1]):
            self._refuse_observations_past_roles()
        self.validate_state()

    @functools.cached_property
    def _past_role_sizes(self) -> torch.Tensor | None:
        """bool[N, D]: the entries of each agent's row of observations past its role's size (None when
        every role observes whole rows)."""
        spec = self.spec
        if not spec.role_observation_sizes:
            return None
        sizes = torch.tensor([spec.role_observation_sizes[role] for role in spec.agent_roles],
                             device=self.observations.device)
        return torch.arange(spec.observation_size, device=sizes.device)[None, :] >= sizes[:, None]

    def _refuse_observations_past_roles(self) -> None:
        assert self._past_role_sizes is not None
        e, i, k = (int(index) for index in ((self.observations != 0) & self._past_role_sizes).nonzero()[0])
        role = self.spec.role_names[self.spec.agent_roles[i]]
        raise InvalidValueError(
            f"observations[{e}, {i}, {k}] = {self.observations[e, i, k].item()!r}, past what an agent of role "
            f"{role!r} observes (the first {self.spec.observation_size_of(role)} of {self.spec.observation_size} "
            f"entries): a kernel writes past its role's observation size; write zeros there")

    @functools.cached_property
    def _checked_state(self) -> list[StateArray]:
        """State arrays with something to check: float arrays (finite) and those with bounds."""
        return [array for array in self.spec.state
                if array.bounds is not None or getattr(self.state, array.name).is_floating_point()]

    def _state_violations(self, array: StateArray) -> torch.Tensor:
        tensor = getattr(self.state, array.name)
        bad = ~torch.isfinite(tensor) if tensor.is_floating_point() else torch.zeros_like(tensor, dtype=torch.bool)
        if array.bounds is not None:
            bad |= (tensor < array.bounds[0]) | (tensor > array.bounds[1])
        return bad

    def validate_state(self) -> None:
        """Raises InvalidValueError naming the first state array that holds NaN, inf, or a
        value outside its declared ``bounds``: the array, the index and the value.

        The step trusts the state it is given: a value written by hand is not checked
        when it is written. Call this after writing state; checked mode (``checked=True``)
        calls it every ``check_every`` steps (before every step on the CPU), in ``check()``.
        """
        for array in self._checked_state:
            bad = self._state_violations(array)
            if bool(bad.any()):
                index = tuple(int(i) for i in bad.nonzero()[0])
                value = getattr(self.state, array.name)[index].item()
                finite = "a finite value" if getattr(self.state, array.name).is_floating_point() else "a value"
                allowed = finite if array.bounds is None else \
                    f"{finite} in [{array.bounds[0]:g}, {array.bounds[1]:g}]"
                raise InvalidValueError(f"state.{array.name}[{', '.join(map(str, index))}] = {value!r} is not "
                                        f"allowed; {array.name} holds {allowed} ({array.doc or 'see the spec'})")
