"""One actor-critic network per agent role, shared by the agents of that role."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import NamedTuple

import torch
from torch import nn

from warpsim.environment import EnvSpec
from warpsim.train import ppo
from warpsim.train.config import TrainConfig
from warpsim.train.value_norm import ValueNormalizer


class ActorCritic(nn.Module):
    """A multi-discrete policy and a value estimate: two MLPs, or one trunk under both heads.

    forward(observations float[B, D]) -> (logits float[B, sum(action_levels)], value float[B]);
    with a ``value_normalizer`` the value is in its normalised units (``value_normalizer.denormalize``).
    """

    def __init__(self, observation_size: int, action_levels: tuple[int, ...], hidden_size: int,
                 hidden_layers: int, *, shared_trunk: bool = False, value_normalization: bool = True):
        super().__init__()
        self.trunk = _mlp(observation_size, hidden_size, hidden_layers)
        """The policy's hidden layers, and the value's too with a shared trunk."""
        self.value_trunk = None if shared_trunk else _mlp(observation_size, hidden_size, hidden_layers)
        """The critic's own hidden layers (None with a shared trunk)."""
        # Small initial logits make the first policy nearly uniform (CleanRL's choice).
        self.policy_head = _orthogonal(nn.Linear(hidden_size, sum(action_levels)), gain=0.01)
        self.value_head = _orthogonal(nn.Linear(hidden_size, 1), gain=1.0)
        self.value_normalizer = ValueNormalizer() if value_normalization else None

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.trunk(observations)
        value_features = features if self.value_trunk is None else self.value_trunk(observations)
        return self.policy_head(features), self.value_head(value_features).squeeze(-1)

    def returns_scale(self, value: torch.Tensor) -> torch.Tensor:
        """The value head's output float[B] in units of the returns."""
        return value if self.value_normalizer is None else self.value_normalizer.denormalize(value)

    def parameter_groups(self) -> list[list[nn.Parameter]]:
        """The parameters whose gradients are clipped together: the actor's and the critic's
        apart, so that a large value gradient cannot shrink the policy's (one group when shared)."""
        actor = [*self.trunk.parameters(), *self.policy_head.parameters()]
        if self.value_trunk is None:
            return [actor + list(self.value_head.parameters())]
        return [actor, [*self.value_trunk.parameters(), *self.value_head.parameters()]]


def _mlp(inputs: int, hidden_size: int, hidden_layers: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = inputs
    for _ in range(hidden_layers):
        layers += [_orthogonal(nn.Linear(width, hidden_size), gain=2 ** 0.5), nn.Tanh()]
        width = hidden_size
    return nn.Sequential(*layers)


def _orthogonal(layer: nn.Linear, gain: float) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


class RolePolicies(nn.Module):
    """The networks of every role; forward runs each on its role's observations.

    forward(list of float[B_r, D], role_names) -> list of (logits, value), one per named
    role (every role, in order, when ``role_names`` is None).
    """

    def __init__(self, spec: EnvSpec, role_names: list[str], input_size: int, hidden_size: int,
                 hidden_layers: int, *, shared_trunk: bool = False, value_normalization: bool = True):
        super().__init__()
        self.role_names = list(role_names)
        self.action_levels = tuple(spec.action_levels)
        self.networks = nn.ModuleList(
            ActorCritic(input_size, spec.action_levels, hidden_size, hidden_layers, shared_trunk=shared_trunk,
                        value_normalization=value_normalization) for _ in role_names)

    @classmethod
    def for_config(cls, config: TrainConfig, spec: EnvSpec, role_names: list[str], input_size: int) -> RolePolicies:
        """The networks ``config`` describes, for inputs of ``input_size``."""
        return cls(spec, role_names, input_size, config.hidden_size, config.hidden_layers,
                   shared_trunk=config.shared_trunk, value_normalization=config.value_normalization)

    def forward(self, observations: list[torch.Tensor], role_names: list[str] | None = None):
        names = self.role_names if role_names is None else role_names
        return [self.networks[self.role_names.index(name)](batch) for name, batch in zip(names, observations)]

    def network(self, role_name: str) -> ActorCritic:
        """The network of one role."""
        network = self.networks[self.role_names.index(role_name)]
        assert isinstance(network, ActorCritic)
        return network

    def act(self, inputs: list[torch.Tensor], role_names: list[str], generator: torch.Generator, *,
            greedy: bool = False,
            autocast: Callable[[], AbstractContextManager] = contextlib.nullcontext) -> list[Acted]:
        """Every named role's actions on its inputs float[B_r, D], what training and evaluation
        both play by (CleanRL's get_action_and_value): sampled with ``generator``, or the most
        likely with ``greedy``. The networks run under ``autocast()``; the sampling in float32."""
        with autocast():
            outputs = self(inputs, role_names)
        acted = []
        for name, (logits, values) in zip(role_names, outputs):
            heads = ppo.split_heads(logits, self.action_levels)
            actions = ppo.sample(heads, generator, greedy)
            acted.append(Acted(actions, ppo.log_prob(heads, actions), self.network(name).returns_scale(values.float())))
        return acted


class Acted(NamedTuple):
    """One role's part of ``RolePolicies.act``."""

    actions: torch.Tensor
    """int32[B, A]"""
    log_probs: torch.Tensor
    """float32[B], of the actions"""
    values: torch.Tensor
    """float32[B], the critic's estimates in units of the returns"""
