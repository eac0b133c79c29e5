"""The batched multi-agent environment: buffers allocated once, stepped in place.

An environment holds E copies of one multi-agent world with N agents each. It owns
its arrays as torch tensors on its device and overwrites them in place:

* ``observations``  float32[E, N, D]  (or bfloat16: ``EnvSpec.observation_dtype``)
* ``actions``       int32[E, N, A]   (the caller writes here, or passes ``step(actions)``)
* ``rewards``       float32[E, N]
* ``done``          bool[E]          (the episode ended on the last step)
* ``terminated``    bool[E]          (it ended by the rules, not by a time limit: see ``game_over``)
* ``state.<name>``  the environment's own state arrays, by name, writable in place
* ``state.episode`` int32[E]         resets each environment has had (its RNG counter)

A subclass declares its parameters and arrays and writes the step and reset twice:
once as a NumPy reference (``step_numpy`` / ``reset_numpy``) and once as kernels
(``step_cuda`` / ``reset_cuda``, which launch them with ``run``: arguments bound by the
kernels' parameter names). This base class validates input, allocates, seeds, launches and
auto-resets finished environments, the same way for every environment.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import numpy as np
import torch

from warpsim.binding import MASK, Binding, bind, check_constant, check_mask, is_kernel, kernel_name, params_values
from warpsim.checked_mode import CHECK_EVERY, CheckedMode
from warpsim.device import Launcher, available_bytes, kernel_view, resolve_placement
from warpsim.errors import DoesNotFitError, InvalidTypeError, InvalidValueError, MissingHookError
from warpsim.graph import StepGraph
from warpsim.inputs import as_input_tensor
from warpsim.kernels.random import random_key, streams_of
from warpsim.kernels.reset import count_resets
from warpsim.layout import Layout, action_limits, array_shapes, indexed_components, scratch_shapes, shapes_bytes
from warpsim.removed import RemovedEnvironmentMethods
from warpsim.spec import ArrayNamespace, EnvSpec, Frame, StateArray
from warpsim.validation import require_int

RUNTIME_ARGUMENTS = (MASK, "seed")
"""Kernel parameters ``run`` binds from the runtime: the launch's mask and the environment's seed."""


class _DisplayName:
    """``Environment.display_name``, read on the class (before anything is built) or on an instance."""

    def __get__(self, instance: Environment | None, owner: type[Environment]) -> str:
        return owner.name or owner.__name__


class Environment(CheckedMode, RemovedEnvironmentMethods):
    """Base class of warpsim's batched environments (see the module docstring).

    A subclass sets ``name`` and ``Params`` (a frozen dataclass) and writes these hooks
    (docs/custom_envs.md):

    Required:
        ``describe() -> EnvSpec``: agents, observation size, action levels, state arrays.
        ``reset_numpy(envs)``, ``step_numpy()``: the NumPy reference (the numpy backend).
        ``reset_cuda(mask)``, ``step_cuda()``: the kernels, launched with ``run`` (the cuda backend).
    Optional:
        ``setup()``: constants for the kernels (``add_constants``), made once after allocation.
        ``game_over() -> bool[E]``: terminal states under the rules; by default none (only a
        time limit ends an episode, a truncation).
        ``frame(env_index) -> Frame``: for rendering.
        ``workspace_bytes() -> int``: temporaries a step allocates, for the memory check.
    """

    name: ClassVar[str] = ""
    display_name = _DisplayName()
    """What messages and records call the environment: ``name``, or the class's name when that is empty."""
    Params: ClassVar[type]
    params: Any
    """The ``Params`` instance the environments were made with."""

    counts_resets: ClassVar[bool] = False
    """True when ``reset_cuda`` itself advances ``state.episode`` of the environments it resets
    (in a per-environment kernel it launches anyway, after the kernels that draw from the
    counter): the runtime then launches no ``count_resets`` of its own, one launch fewer a step."""

    resets_in_step: ClassVar[bool] = False
    """True when ``step_cuda`` launches the whole step, ``terminated`` and the auto-reset included
    (one fused kernel): its kernel writes ``terminated`` and resets the environments that ended where
    ``auto_reset_mask`` is set, and the runtime launches nothing else in a step."""

    BUFFERS: ClassVar[tuple[str, ...]] = ("observations", "actions", "rewards", "done")
    """Tensors the kernels hold views of: bound once, then only written into."""

    def __setattr__(self, name: str, value: Any) -> None:
        # A new tensor would silently disconnect the caller from the kernels, which keep the old one.
        if name in self.BUFFERS and name in self.__dict__:
            how = ("write into it in place, env.actions.copy_(new_actions), or pass env.step(actions)"
                   if name == "actions" else f"read it, or write into it in place with env.{name}.copy_(...)")
            raise AttributeError(f"cannot rebind env.{name}: the kernels keep reading and writing the tensor "
                                 f"allocated with the environment; {how}")
        object.__setattr__(self, name, value)

    def __init__(self, num_envs: int, params: Any = None, *, backend: str = "auto",
                 device: str | int | None = None, seed: int = 0, checked: bool = True, streams: int | None = None):
        if params is None:
            params = self.Params()
        if not isinstance(params, self.Params):
            raise InvalidTypeError(f"params must be a {self.Params.__name__}, got {type(params).__name__}")
        num_envs = require_int("num_envs", num_envs, 1)
        if not isinstance(checked, (bool, np.bool_)):
            raise InvalidTypeError(f"checked={checked!r} is not allowed; give True or False")
        self.params = params
        self.num_envs = int(num_envs)
        self.seed = random_key(seed, streams)
        """The random numbers' key: the seed and the number of shared streams (``kernels.random``)."""
        self.checked = bool(checked)
        self.placement = resolve_placement(backend, device)
        self._check_hooks()
        # Before describe(), which builds per-agent tuples: a size far too large is refused at once.
        self._check_fits_in_memory(self._least_bytes_from_params(), what="its arrays at least")
        self.spec = self._described()
        self.num_agents = self.spec.num_agents
        shapes = array_shapes(type(self).__name__, self.spec, self.num_envs)
        scratch_sizes = scratch_shapes(type(self).__name__, self.spec, self.num_envs, taken=shapes)
        self._check_fits_in_memory(shapes_bytes({**shapes, **scratch_sizes}) + self.workspace_bytes(),
                                   what="its arrays and a step's temporaries")

        device_ = self.placement.torch_device
        tensors = {name: torch.zeros(shape, dtype=dtype, device=device_)
                   for name, (shape, dtype) in shapes.items()}
        self.observations = tensors.pop("observations")
        self.actions = tensors.pop("actions")
        self.rewards = tensors.pop("rewards")
        self.done = tensors.pop("done")
        self.terminated = tensors.pop("terminated")
        self.state = ArrayNamespace(tensors)
        self.views = ArrayNamespace({
            name: kernel_view(tensor) for name, tensor in
            [("observations", self.observations), ("actions", self.actions),
             ("rewards", self.rewards), ("done", self.done), ("terminated", self.terminated),
             *tensors.items()]})
        self._scratch_tensors = [torch.zeros(shape, dtype=dtype, device=device_)
                                 for shape, dtype in scratch_sizes.values()]
        self.scratch = ArrayNamespace({name: kernel_view(tensor)
                                       for name, tensor in zip(scratch_sizes, self._scratch_tensors)})
        """The kernels' working arrays declared in ``EnvSpec.scratch``, as kernel views."""
        self._action_limits = action_limits(self.spec).to(device_)
        """[2, N, A]: each agent's components' low and high bound (continuous), or 0 and their number of
        levels; past its role's own components, 0 and 0 (continuous) or 0 and 1: zero alone."""
        self._action_indices = indexed_components(self.spec).to(device_)
        """bool[N, A]: the components that hold an index, a whole value (those of discrete roles)."""
        self._every_env = torch.ones(self.num_envs, dtype=torch.bool, device=device_)
        self.every_env = kernel_view(self._every_env)
        """bool[E], all True: the mask for kernels that concern every environment."""
        self._no_env = kernel_view(torch.zeros(self.num_envs, dtype=torch.bool, device=device_))
        self.auto_reset_mask = self.every_env
        """bool[E]: the environments a step may reset when they end (``resets_in_step``): every one, or
        none during ``step(auto_reset=False)``."""
        self._reset_mask = torch.zeros(self.num_envs, dtype=torch.bool, device=device_)
        self._no_terminal_state = torch.zeros(self.num_envs, dtype=torch.bool, device=device_)
        self._reset_mask_view = kernel_view(self._reset_mask)
        self._bad_actions_seen = torch.zeros((), dtype=torch.bool, device=device_)
        self._steps_since_check = 0
        self.check_every = CHECK_EVERY if self.placement.on_gpu else 1
        self._launch = Launcher(self.placement)
        # The backend chosen once: its step, and its reset of the environments a bool[E] view flags.
        self._step_on_backend, self._reset_on_backend = {
            "cuda": (self.step_cuda, self._reset_kernels),
            "numpy": (self.step_numpy, self._reset_reference),
        }[self.backend]
        self._constants: dict[str, Any] = {}
        self._constant_tensors: list[torch.Tensor] = []
        self._bindings: dict[Any, Binding] = {}
        self._bound_params: Any = None
        self.setup()
        self.reset()

    # ----- what a subclass writes -------------------------------------------------
    def describe(self) -> EnvSpec:
        """Returns the EnvSpec for ``self.params``."""
        raise self._missing_hook("describe", "every environment", "4. The glue")

    def setup(self) -> None:
        """Optional: offer constants to the kernels (``self.add_constants``) after allocation."""

    def workspace_bytes(self) -> int:
        """Optional: bytes a step or reset allocates besides the declared arrays on
        ``self.backend`` (e.g. the NumPy reference's pairwise temporaries). The memory
        check counts them; ``self.spec`` and ``self.num_agents`` are set when it is called."""
        return 0

    def frame(self, env_index: int) -> Frame:
        """Optional: the agents of environment ``env_index`` as a Frame, for rendering."""
        raise self._missing_hook("frame", "rendering", "8. Train on it")

    def game_over(self) -> torch.Tensor:
        """bool[E], environments whose state is terminal under their rules (the game is over
        whatever the clock says). ``step()`` calls it before resetting and sets
        ``terminated = done & game_over()``: an episode that ends without it was cut by a time
        limit (a truncation). The default: no state is terminal, every end is a truncation; an
        environment with a game-ending rule overrides it."""
        return self._no_terminal_state

    def reset_numpy(self, envs: np.ndarray) -> None:
        """Resets environments ``envs`` (int64[R]) on ``self.views``, observations included."""
        raise self._missing_hook("reset_numpy", "the numpy backend", "2. The NumPy reference")

    def step_numpy(self) -> None:
        """Steps every environment on ``self.views``: state, observations, rewards, done."""
        raise self._missing_hook("step_numpy", "the numpy backend", "2. The NumPy reference")

    def reset_cuda(self, mask: Any) -> None:
        """Launches the kernels resetting environments where ``mask`` (bool[E]) is set."""
        raise self._missing_hook("reset_cuda", "the cuda backend", "3. The kernels")

    def step_cuda(self) -> None:
        """Launches the kernels of one step of every environment."""
        raise self._missing_hook("step_cuda", "the cuda backend", "3. The kernels")

    HOOKS: ClassVar[tuple[str, ...]] = ("describe", "setup", "workspace_bytes", "frame", "game_over", "reset_numpy",
                                        "step_numpy", "reset_cuda", "step_cuda")
    """The methods a subclass may write (above)."""

    def _check_hooks(self) -> None:
        for hook in self.HOOKS:
            value = getattr(type(self), hook, None)
            if not callable(value):
                raise InvalidTypeError(f"{type(self).__name__}.{hook} is {value!r}, not a method; define it with "
                                       f"'def {hook}(self, ...)' or leave it out (see docs/custom_envs.md)")

    def _described(self) -> EnvSpec:
        spec = self.describe()
        if not isinstance(spec, EnvSpec):
            raise InvalidTypeError(f"{type(self).__name__}.describe() returned {type(spec).__name__} {spec!r:.60}; it "
                                   f"must return an EnvSpec (see docs/custom_envs.md, section '4. The glue')")
        return spec

    def _missing_hook(self, hook: str, needed_by: str, section: str) -> MissingHookError:
        return MissingHookError(f"{type(self).__name__} does not define {hook}(), which {needed_by} needs; "
                                   f"see docs/custom_envs.md, section '{section}'")

    # ----- the runtime --------------------------------------------------------------
    @property
    def backend(self) -> str:
        return self.placement.backend

    @property
    def device(self) -> torch.device:
        return self.placement.torch_device

    @property
    def streams(self) -> int | None:
        """How many random streams the environments share (a power of two: environment e draws as
        e mod streams does), or None when each has its own."""
        return streams_of(self.seed)

    def add_constants(self, **values: Any) -> None:
        """Offers NumPy arrays and scalars to the kernels: ``run`` passes each to the parameters of
        its name. An array is copied to the device once. A constant named after a ``Params`` field
        replaces it (e.g. a value derived in float32 on the host)."""
        for name, value in values.items():
            if name in self.views or name in self.scratch or name in RUNTIME_ARGUMENTS:
                raise InvalidValueError(f"{type(self).__name__} adds the constant {name!r}, the name of one of its "
                                        f"arrays or of {', '.join(RUNTIME_ARGUMENTS)}; give it another name")
            check_constant(type(self).__name__, name, value)
            if isinstance(value, np.ndarray):
                tensor = torch.as_tensor(np.ascontiguousarray(value), device=self.device)
                self._constant_tensors.append(tensor)
                value = kernel_view(tensor)
            self._constants[name] = value
        self._bindings.clear()

    def run(self, kernel: Any, per: str, mask: Any = None, shared_bytes: int = 0) -> None:
        """Launches ``kernel`` with each parameter bound by its name: an array of ``self.views``
        or ``self.scratch``, a constant (``add_constants``), a ``Params`` field (int as int32,
        float as float32), ``seed``, or ``mask`` (bool[E]: ``mask``, else every environment).

        ``per``: ``"agent"`` (a thread per agent of every environment), ``"env"`` (a thread per
        environment) or ``"block"`` (a block per environment, with ``shared_bytes`` of dynamic
        shared memory; 128 threads on a GPU, fewer whole warps where N is smaller). The binding is
        made and checked against the kernel's docstring at its first launch (see ``warpsim.binding``);
        later launches reuse it."""
        if not is_kernel(kernel):
            raise InvalidTypeError(f"{type(self).__name__}.run() got {type(kernel).__name__} {kernel!r:.60} as its "
                                   f"kernel; give a function decorated with @cuda.jit (from numba import cuda)")
        if mask is not None and not any(mask is known for known in self._known_masks):
            check_mask(type(self).__name__, kernel, mask, self.num_envs, on_cpu=self.device.type == "cpu")
        if self.params is not self._bound_params:
            self._bindings.clear()
            self._bound_params = self.params
        binding = self._bindings.get(kernel)
        if binding is None:
            binding = self._bindings[kernel] = bind(kernel, self._kernel_values(), self._declared_arrays)
        if mask is not None and binding.mask_position is None:
            raise InvalidValueError(f"a mask was given to run() for kernel {kernel_name(kernel)}, "
                                    f"which has no parameter 'mask'")
        arguments = binding.with_mask(self.every_env if mask is None else mask)
        if per == "agent":
            self._launch(kernel, self.num_envs * self.num_agents, *arguments)
        elif per == "env":
            self._launch(kernel, self.num_envs, *arguments)
        elif per == "block":
            self._launch.per_block(kernel, self.num_envs, self.num_agents, shared_bytes, *arguments)
        else:
            raise InvalidValueError(f"per={per!r} is not allowed; allowed: 'agent', 'env', 'block'")

    @functools.cached_property
    def _known_masks(self) -> tuple:
        """The runtime's own bool[E] views, passed to ``run`` every step: checked once, here."""
        return self.every_env, self._no_env, self._reset_mask_view, self.views.done

    def _kernel_values(self) -> dict[str, Any]:
        """What ``run`` binds kernel parameters from, by name."""
        values = {**params_values(self.params), **self._constants}
        arrays = {**dict(self.views.items()), **dict(self.scratch.items()), "seed": self.seed}
        clashes = sorted(set(values) & set(arrays))
        if clashes:
            raise InvalidValueError(f"{type(self).__name__}: {', '.join(map(repr, clashes))} name both a Params "
                                    f"field and one of its arrays; a kernel parameter could mean either")
        return {**values, **arrays}

    @functools.cached_property
    def _declared_arrays(self) -> dict[str, StateArray]:
        return {array.name: array for array in (*self.spec.state, *self.spec.scratch)}

    def reset(self, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Starts a new episode in every environment, or in those where ``mask``
        (bool[E], on any device) is set; returns ``observations``."""
        if mask is None:
            self._reset_mask.fill_(True)
        else:
            mask = as_input_tensor(mask, "reset mask")
            if tuple(mask.shape) != (self.num_envs,) or mask.dtype != torch.bool:
                raise InvalidValueError(f"reset mask has shape {tuple(mask.shape)} and dtype {mask.dtype}; "
                                 f"expected bool[{self.num_envs}] (one flag per environment)")
            self._reset_mask.copy_(mask)
        self._reset_on_backend(self._reset_mask_view)
        self.done.masked_fill_(self._reset_mask, False)
        self.terminated.masked_fill_(self._reset_mask, False)
        return self.observations

    def step(self, actions: torch.Tensor | np.ndarray | None = None, *,
             auto_reset: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step of every environment, then an in-place reset of those that ended.

        ``actions`` (int[E, N, A]), if given, is copied into ``self.actions`` first;
        otherwise the step uses what is already there. Returns the same
        ``(observations, rewards, done)`` tensors every time; the observations of an
        environment that ended are the first of its next episode. With
        ``auto_reset=False`` environments that ended keep their final state and
        observations (adapters report them); call ``reset()`` before stepping again.
        ``terminated`` says which of the ``done`` environments ended by the rules; the
        others were truncated.
        """
        if actions is not None:
            self._write_actions(actions)
        elif self.checked:
            self._check_device_actions(self.actions)
        if self.checked and self.check_every == 1:
            self.check()  # before the step: an invalid state never reaches the kernels
        self._advance(auto_reset)
        if self.check_every > 1:
            self.count_steps(1)
        return self.observations, self.rewards, self.done

    def step_for_capture(self) -> None:
        """One auto-resetting step with no host read, as a CUDA graph records it (``StepGraph``): in
        checked mode the actions are flagged on the device for the next ``check()``. After
        replaying such steps, call ``count_steps``."""
        if self.checked:
            self._flag_bad_actions(self.actions)
        self._advance(auto_reset=True)

    def step_outputs(self) -> list[torch.Tensor]:
        """Every tensor a step writes: observations, rewards, done, terminated, the state, the
        scratch arrays and checked mode's flag (what a capture's warm-up step must restore)."""
        return [self.observations, self.rewards, self.done, self.terminated, self._bad_actions_seen,
                *(tensor for _, tensor in self.state.items()), *self._scratch_tensors]

    def _advance(self, auto_reset: bool) -> None:
        """The step itself: kernels (or the reference), ``terminated``, and the auto-reset."""
        if self.resets_in_step and self.backend == "cuda":
            self.auto_reset_mask = self.every_env if auto_reset else self._no_env
            self.step_cuda()
            return
        self._step_on_backend()
        torch.logical_and(self.done, self.game_over(), out=self.terminated)  # before the reset changes the state
        if auto_reset:
            self._reset_on_backend(self.views.done)

    def _reset_kernels(self, mask: Any) -> None:
        self.reset_cuda(mask)
        if not self.counts_resets:
            self.run(count_resets, per="env", mask=mask)

    def _reset_reference(self, mask: np.ndarray) -> None:
        envs = np.flatnonzero(mask)
        if envs.size:
            self.reset_numpy(envs)
            self.views.episode[envs] += 1

    def graph(self, steps: int = 1) -> StepGraph:
        """``steps`` auto-resetting steps captured as one CUDA graph; ``replay()`` runs them.

        Each replayed step reads ``env.actions`` as it is when the replay runs (write it in
        place before). On the numpy backend and under the simulator nothing can be captured:
        ``replay()`` steps eagerly, with the same results (see ``StepGraph``)."""
        return StepGraph(self, steps)

    def array_bytes(self) -> int:
        """Bytes of the environment's arrays (what ``make`` allocated for them)."""
        return shapes_bytes(array_shapes(type(self).__name__, self.spec, self.num_envs))

    @classmethod
    def layout(cls, params: Any, num_envs: int = 1) -> Layout:
        """The spec and the arrays' bytes of ``num_envs`` environments with ``params``, worked out
        without allocating anything: for a caller that checks memory before making them."""
        if not isinstance(params, cls.Params):
            raise InvalidTypeError(f"params must be a {cls.Params.__name__}, got {type(params).__name__}")
        unmade = cls.__new__(cls)  # only what describe() and the shapes read is set
        unmade.params, unmade.num_envs = params, require_int("num_envs", num_envs, 1)
        unmade.spec = unmade._described()
        unmade.num_agents = unmade.spec.num_agents
        return Layout(unmade.spec, unmade.array_bytes())

    def _least_bytes_from_params(self) -> int:
        """A lower bound of the arrays' bytes from the parameters alone, in O(1): observations,
        actions and rewards of ``params.num_agents`` agents (when the parameters say it)."""
        agents = getattr(self.params, "num_agents", None)
        if not isinstance(agents, (int, np.integer)) or agents < 1:
            return 0
        size = getattr(self.params, "observation_size", 1)
        size = int(size) if isinstance(size, (int, np.integer)) and size >= 1 else 1
        observation_bytes = 2 if getattr(self.params, "observation_dtype", None) == "bfloat16" else 4
        return self.num_envs * int(agents) * (observation_bytes * size + 4 + 4)

    def _check_fits_in_memory(self, needed: int, what: str) -> None:
        free = available_bytes(self.placement)
        if needed > 0.9 * free:
            agents = getattr(self, "num_agents", getattr(self.params, "num_agents", "?"))
            raise DoesNotFitError(
                f"{self.display_name} with num_envs={self.num_envs}, num_agents={agents} needs "
                f"{needed / 2**30:.4g} GiB for {what}, but only {free / 2**30:.2f} GiB is free on "
                f"{self.device} (at most 90% may be used); lower num_envs or the number of agents, "
                f"or observe fewer agents")
