"""A trained role's policy, to act from Python: ``warpsim.load_policy(run_dir, "tagger")``.

``policy.act(observations)`` takes the role's observations as an environment gives them,
float[..., D], D the role's own observation size (one agent's float[D], a batch float[B, D],
or ``role.observed(env.observations, 1)``'s float[E, N_r, D]): a NumPy array or a tensor of a
floating dtype, or a (nested) list of numbers, every value finite. It returns the actions as the
environment takes them, int32[..., A] indices, or float32[..., k] continuous actions within their
bounds: a NumPy array for NumPy or list input, a tensor on the input's device for a tensor. A
run trained with ``stack_observations`` k > 1 saw its last k observations at once; the policy
keeps that history itself, per row of the batch: call ``reset()`` when every row's episode
starts, ``reset(mask)`` when those of some rows do (episodes of a batch that end at different steps).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from warpsim.errors import InvalidTypeError, InvalidValueError, RunFileError, UnavailableError
from warpsim.train import checkpoint
from warpsim.train.action_heads import CONTINUOUS_HEADS, ActionHead, CategoricalHeads, GaussianHead
from warpsim.train.config import MAX_SEED, is_policy_device, saved_config
from warpsim.train.opponents import random_roles
from warpsim.train.policy import ActorCritic
from warpsim.validation import not_allowed, require_bool, require_int, shown


class TrainedPolicy:
    """One role's network from a run, in eval mode, with its observation history (see the module docstring)."""

    def __init__(self, network: ActorCritic, role: str, env: str, observation_size: int,
                 head: ActionHead, stack_observations: int, device: torch.device, seed: int):
        self.network = network
        self.role = role
        self.env = env
        """The id of the environment the run trained on."""
        self.observation_size = observation_size
        """D: the size of one agent's observation."""
        self.head = head
        """The actions it gives: ``head.action_levels`` indices, or continuous ones within ``head.bounds``."""
        self.stack_observations = stack_observations
        self.device = device
        self.generator = torch.Generator(device).manual_seed(seed)
        self._history: torch.Tensor | None = None
        self._restart: torch.Tensor | None = None
        """bool[...]: the rows whose history starts anew at the next ``act``."""

    @property
    def action_levels(self) -> tuple[int, ...]:
        """The choices of each action component (A of them); empty for continuous actions."""
        return self.head.action_levels if isinstance(self.head, CategoricalHeads) else ()

    @property
    def action_bounds(self) -> tuple[tuple[float, float], ...]:
        """Each continuous component's (low, high); empty for discrete actions."""
        return self.head.bounds if isinstance(self.head, GaussianHead) else ()

    def reset(self, mask: Any = None) -> None:
        """Forgets the observation history: of every row (``mask`` None), or of the rows where ``mask``
        (bool, of the batch's shape without D: a NumPy array or a tensor) is set, when their episodes start."""
        if mask is None:
            self._history, self._restart = None, None
            return
        rows = torch.as_tensor(np.asarray(mask) if not isinstance(mask, torch.Tensor) else mask.detach())
        if rows.dtype != torch.bool:
            raise InvalidTypeError(f"{self.role} policy: reset(mask) takes a bool mask of rows; got dtype {rows.dtype}")
        if self._history is None:
            return  # nothing kept yet: every row starts anew anyway
        if tuple(rows.shape) != tuple(self._history.shape[:-1]):
            raise InvalidValueError(f"{self.role} policy: reset(mask) got a mask of shape {tuple(rows.shape)}; the "
                                    f"batch has rows {tuple(self._history.shape[:-1])}")
        rows = rows.to(self._history.device)
        self._restart = rows if self._restart is None else self._restart | rows

    @torch.no_grad()
    def act(self, observations: Any, greedy: bool = True) -> Any:
        """int32[..., A] (or continuous float32[..., k]) actions for float[..., D] observations (a NumPy
        array, a tensor or a list): the most likely actions (``greedy``; a Gaussian's mean) or actions drawn
        from the policy, as in training; continuous ones clipped to their bounds."""
        greedy = require_bool("greedy", greedy)
        given = observations
        tensor = self._as_tensor(observations)
        if tensor.dim() == 0 or tensor.shape[-1] != self.observation_size:
            raise InvalidValueError(f"{self.role} policy: observations have shape {tuple(tensor.shape)}; give "
                                    f"float[..., {self.observation_size}], one row of {self.observation_size} per "
                                    f"agent ({self.env}'s observations)")
        if not bool(torch.isfinite(tensor).all()):
            raise InvalidValueError(f"{self.role} policy: observations hold NaN or an infinity; give finite values "
                                    f"({self.env}'s observations are)")
        inputs = self._stacked(tensor.to(self.device, torch.float32))
        logits, _ = self.network(inputs.reshape(-1, inputs.shape[-1]))
        actions = self.head.to_env(self.head.sample(logits.float(), self.generator, greedy))
        actions = actions.reshape(*tensor.shape[:-1], self.head.action_size)
        if isinstance(given, torch.Tensor):
            return actions.to(given.device)
        return actions.cpu().numpy()

    def _as_tensor(self, observations: Any) -> torch.Tensor:
        """One rule for every input: an array or tensor of a floating dtype (bool, integer and complex ones
        refused), or a list read as float32; never the meta device, which holds no values."""
        if isinstance(observations, (torch.Tensor, np.ndarray)):
            tensor = observations.detach() if isinstance(observations, torch.Tensor) else torch.as_tensor(observations)
            if not tensor.dtype.is_floating_point:
                raise InvalidTypeError(f"{self.role} policy: observations have dtype {tensor.dtype}; give floats "
                                       f"(float32, or bfloat16 as stored)")
            if tensor.device.type == "meta":
                raise InvalidValueError(f"{self.role} policy: observations are on the meta device, which holds no "
                                        f"values; give them on the CPU or a GPU")
            return tensor
        try:
            return torch.as_tensor(np.asarray(observations, dtype=np.float32))
        except (TypeError, ValueError) as error:
            raise InvalidTypeError(f"{self.role} policy: observations of type {type(observations).__name__} cannot be "
                                   f"read as float[..., {self.observation_size}] "
                                   f"({str(error).splitlines()[0]})") from None

    def _stacked(self, observations: torch.Tensor) -> torch.Tensor:
        """The newest observation first, then the older ones the history holds (the first one repeated
        at an episode's start), as ``ObservationStack`` builds them in training."""
        depth, size = self.stack_observations, self.observation_size
        if depth == 1:
            return observations
        if self._history is None:
            self._history = observations.repeat(*[1] * (observations.dim() - 1), depth)
        elif self._history.shape[:-1] != observations.shape[:-1]:
            raise InvalidValueError(f"{self.role} policy: observations of shape {tuple(observations.shape)} follow "
                                    f"a batch of {tuple(self._history.shape[:-1])} rows; the history of the last "
                                    f"{depth} observations is kept per row: call reset() when an episode starts")
        else:
            self._history = torch.cat([observations, self._history[..., :-size]], dim=-1)
        if self._restart is not None:
            anew = observations.repeat(*[1] * (observations.dim() - 1), depth)
            self._history = torch.where(self._restart[..., None], anew, self._history)
            self._restart = None
        return self._history


def load_policy(source: Path | str, role: str, *, device: str = "cpu", seed: int = 0) -> TrainedPolicy:
    """The trained policy of ``role`` in a run directory or checkpoint file, on ``device`` (``"cpu"``, the
    default, whatever the run was trained on; ``"cuda"``; ``"auto"``). ``seed`` seeds sampled actions."""
    if not isinstance(source, (str, os.PathLike)):
        raise InvalidTypeError(f"load_policy: source={shown(source)} is not allowed; give a run directory or a "
                               f"checkpoint file, as a path")
    if not isinstance(role, str):
        raise InvalidTypeError(f"load_policy: role={shown(role)} is not allowed; give a role's name, e.g. 'tagger'")
    seed = require_int("seed", seed, 0, MAX_SEED)
    chosen = _torch_device(device)
    saved = checkpoint.load(source)
    config = saved_config(saved)
    signature = saved["signature"]
    roles = list(signature["role_names"])
    if role not in roles:
        raise InvalidValueError(f"{role!r} is not a role of {signature['env']}, which {saved['path']} was trained "
                                f"on; its roles: {', '.join(roles)}")
    if role in random_roles(config.opponents):
        raise InvalidValueError(f"{role} played uniformly at random in the run of {saved['path']}: it has no "
                                f"trained policy; trained roles: "
                                f"{', '.join(name for name in roles if name not in random_roles(config.opponents))}")
    index = roles.index(role)
    # the role's own actions where roles act apart, else the row's
    bounds = signature["role_action_bounds"][index] if "role_action_bounds" in signature else signature.get(
        "action_bounds")
    levels = signature["role_action_levels"][index] if "role_action_levels" in signature else signature[
        "action_levels"]
    head = (CONTINUOUS_HEADS[config.policy_head](tuple((float(low), float(high)) for low, high in bounds)) if bounds
            else CategoricalHeads(tuple(int(level) for level in levels)))
    sizes = signature.get("role_observation_sizes")
    observation_size = int(sizes[roles.index(role)] if sizes else signature["observation_size"])
    network = ActorCritic(config.stack_observations * observation_size, head, config.hidden_size,
                          config.hidden_layers, shared_trunk=config.shared_trunk,
                          value_normalization=config.value_normalization)
    prefix = f"networks.{roles.index(role)}."
    state = {key[len(prefix):]: value for key, value in saved["policies"].items() if key.startswith(prefix)}
    if not state:
        raise RunFileError(f"checkpoint {saved['path']} holds no network for {role}: it is incomplete or was altered")
    checkpoint.load_into(network, state, f"{role} network", saved["path"])
    return TrainedPolicy(network.to(chosen).eval(), role, signature["env"], observation_size, head,
                         config.stack_observations, chosen, seed)


def _torch_device(device: str) -> torch.device:
    """``device`` read as the trainer's policy_device is (is_policy_device); auto: a GPU where there is one."""
    if not is_policy_device(device):
        raise not_allowed("device", device, "give 'cpu', 'cuda', 'cuda:N' or 'auto'")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    chosen = torch.device(device)
    if chosen.type == "cuda" and not torch.cuda.is_available():
        raise UnavailableError(f"device={device!r}: no CUDA GPU is visible here; give device='cpu'")
    return chosen
