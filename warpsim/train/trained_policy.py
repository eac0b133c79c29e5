"""A trained role's policy, to act from Python: ``warpsim.load_policy(run_dir, "tagger")``.

``policy.act(observations)`` takes the role's observations as an environment gives them,
float[..., D] (one agent's float[D], a batch float[B, D], or ``role.of(env.observations)``'s
float[E, N_r, D]) and returns the actions as the environment takes them, int32[..., A] indices,
or float32[..., k] continuous actions within their bounds: a NumPy array for NumPy input, a
tensor on the input's device for a tensor. A run trained with
``stack_observations`` k > 1 saw its last k observations at once; the policy keeps that history
itself, per row of the batch: call ``reset()`` when an episode starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from warpsim.errors import InvalidTypeError, InvalidValueError, RunFileError, UnavailableError
from warpsim.train import checkpoint
from warpsim.train.action_heads import CONTINUOUS_HEADS, ActionHead, CategoricalHeads, GaussianHead
from warpsim.train.config import is_policy_device, saved_config
from warpsim.train.opponents import random_roles
from warpsim.train.policy import ActorCritic
from warpsim.validation import not_allowed, require_bool, require_int


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

    @property
    def action_levels(self) -> tuple[int, ...]:
        """The choices of each action component (A of them); empty for continuous actions."""
        return self.head.action_levels if isinstance(self.head, CategoricalHeads) else ()

    @property
    def action_bounds(self) -> tuple[tuple[float, float], ...]:
        """Each continuous component's (low, high); empty for discrete actions."""
        return self.head.bounds if isinstance(self.head, GaussianHead) else ()

    def reset(self) -> None:
        """Forgets the observation history: call it when an episode starts."""
        self._history = None

    @torch.no_grad()
    def act(self, observations: Any, greedy: bool = True) -> Any:
        """int32[..., A] (or continuous float32[..., k]) actions for float[..., D] observations (a NumPy
        array, a tensor or a list): the most likely actions (``greedy``; a Gaussian's mean) or actions drawn
        from the policy, as in training; continuous ones clipped to their bounds."""
        greedy = require_bool("greedy", greedy)
        given = observations
        if isinstance(observations, torch.Tensor):
            tensor = observations.detach()
        else:
            try:
                tensor = torch.as_tensor(np.asarray(observations, dtype=np.float32))
            except (TypeError, ValueError) as error:
                raise InvalidTypeError(f"{self.role} policy: observations of type {type(given).__name__} cannot be "
                                       f"read as float[..., {self.observation_size}] "
                                       f"({str(error).splitlines()[0]})") from None
        if not tensor.dtype.is_floating_point:
            raise InvalidTypeError(f"{self.role} policy: observations have dtype {tensor.dtype}; give floats "
                                   f"(float32, or bfloat16 as stored)")
        if tensor.dim() == 0 or tensor.shape[-1] != self.observation_size:
            raise InvalidValueError(f"{self.role} policy: observations have shape {tuple(tensor.shape)}; give "
                                    f"float[..., {self.observation_size}], one row of {self.observation_size} per "
                                    f"agent ({self.env}'s observations)")
        inputs = self._stacked(tensor.to(self.device, torch.float32))
        logits, _ = self.network(inputs.reshape(-1, inputs.shape[-1]))
        actions = self.head.to_env(self.head.sample(logits.float(), self.generator, greedy))
        actions = actions.reshape(*tensor.shape[:-1], self.head.action_size)
        if isinstance(given, torch.Tensor):
            return actions.to(given.device)
        return actions.cpu().numpy()

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
        return self._history


def load_policy(source: Path | str, role: str, *, device: str = "cpu", seed: int = 0) -> TrainedPolicy:
    """The trained policy of ``role`` in a run directory or checkpoint file, on ``device`` (``"cpu"``, the
    default, whatever the run was trained on; ``"cuda"``; ``"auto"``). ``seed`` seeds sampled actions."""
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
    chosen = _torch_device(device)
    bounds = signature.get("action_bounds")
    head = (CONTINUOUS_HEADS[config.policy_head](tuple((float(low), float(high)) for low, high in bounds)) if bounds
            else CategoricalHeads(tuple(int(levels) for levels in signature["action_levels"])))
    observation_size = int(signature["observation_size"])
    network = ActorCritic(config.stack_observations * observation_size, head, config.hidden_size,
                          config.hidden_layers, shared_trunk=config.shared_trunk,
                          value_normalization=config.value_normalization)
    prefix = f"networks.{roles.index(role)}."
    state = {key[len(prefix):]: value for key, value in saved["policies"].items() if key.startswith(prefix)}
    if not state:
        raise RunFileError(f"checkpoint {saved['path']} holds no network for {role}: it is incomplete or was altered")
    checkpoint.load_into(network, state, f"{role} network", saved["path"])
    return TrainedPolicy(network.to(chosen).eval(), role, signature["env"], observation_size, head,
                         config.stack_observations, chosen, require_int("seed", seed, 0))


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
