"""One actor-critic network per agent role, shared by the agents of that role.

``RolePolicies`` is one run's networks, as evaluation, rendering and ``load_policy`` play
them. The trainer's form, the networks of R training runs stacked, is ``run_policies.RunPolicies``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, NoReturn

import torch
from torch import nn
from typing_extensions import deprecated

from warpsim.environment import EnvSpec
from warpsim.removed import removed
from warpsim.train.action_heads import ActionHead, action_head
from warpsim.train.config import TrainConfig
from warpsim.train.value_norm import ValueNormalizer


class ActorCriticBase(nn.Module):
    """A policy and a value estimate: two MLPs, or one trunk under both heads.

    forward(observations float[..., D]) -> (policy float[..., head.size], value float[...]): the
    policy's outputs as its ``action_heads`` head reads them (logits; or the means and, appended,
    the learned log standard deviations of continuous actions); with a ``value_normalizer`` the
    value is in its normalised units (``value_normalizer.denormalize``).
    """

    trunk: nn.Module
    """The policy's hidden layers, and the value's too with a shared trunk."""
    value_trunk: nn.Module | None
    """The critic's own hidden layers (None with a shared trunk)."""
    policy_head: nn.Module
    log_std: nn.Parameter | None
    """Continuous actions: each component's log standard deviation, not a function of the observation."""
    value_head: nn.Module
    value_normalizer: ValueNormalizer | None

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.trunk(observations)
        value_features = features if self.value_trunk is None else self.value_trunk(observations)
        return self._policy(features), self.value_head(value_features).squeeze(-1)

    def policy(self, observations: torch.Tensor) -> torch.Tensor:
        """``forward``'s policy outputs alone, without the critic's work (what playing needs)."""
        return self._policy(self.trunk(observations))

    def _policy(self, features: torch.Tensor) -> torch.Tensor:
        return self._with_log_std(self.policy_head(features))

    def _with_log_std(self, policy: torch.Tensor) -> torch.Tensor:
        if self.log_std is not None:
            policy = torch.cat([policy.float(), self.log_std.unsqueeze(-2).expand(policy.shape)], dim=-1)
        return policy

    def returns_scale(self, value: torch.Tensor) -> torch.Tensor:
        """The value head's output in units of the returns."""
        return value if self.value_normalizer is None else self.value_normalizer.denormalize(value)

    def parameter_groups(self) -> list[list[nn.Parameter]]:
        """The parameters whose gradients are clipped together: the actor's and the critic's
        apart, so that a large value gradient cannot shrink the policy's (one group when shared)."""
        actor = [*self.trunk.parameters(), *self.policy_head.parameters(),
                 *([] if self.log_std is None else [self.log_std])]
        if self.value_trunk is None:
            return [actor + list(self.value_head.parameters())]
        return [actor, [*self.value_trunk.parameters(), *self.value_head.parameters()]]


class ActorCritic(ActorCriticBase):
    """One run's network of a role, float[B, D] in."""

    def __init__(self, observation_size: int, head: ActionHead, hidden_size: int,
                 hidden_layers: int, *, shared_trunk: bool = False, value_normalization: bool = True):
        super().__init__()
        self.trunk = _mlp(observation_size, hidden_size, hidden_layers)
        self.value_trunk = None if shared_trunk else _mlp(observation_size, hidden_size, hidden_layers)
        # Small initial logits or means make the first policy nearly uniform, or centred (CleanRL's choice).
        self.policy_head = _orthogonal(nn.Linear(hidden_size, head.size - head.learned_log_std * head.action_size),
                                       gain=0.01)
        self.log_std = nn.Parameter(torch.zeros(head.action_size)) if head.learned_log_std else None
        self.value_head = _orthogonal(nn.Linear(hidden_size, 1), gain=1.0)
        self.value_normalizer = ValueNormalizer() if value_normalization else None


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


class HeadsByRole(nn.Module):
    """Networks whose roles each have their own action head (``heads``); ``head``, one for all, was removed."""

    heads: dict[str, ActionHead]

    @property
    @deprecated("removed in 0.2.0: use policies.heads[role_name]", category=None)
    def head(self) -> NoReturn:
        """Removed in 0.2.0 (see ``heads``)."""
        _removed_head(self)

    def __getattr__(self, name: str) -> Any:
        if name == "head":  # nn.Module answers the property's AttributeError with a lookup of its own
            _removed_head(self)
        return super().__getattr__(name)


def _removed_head(owner: nn.Module) -> NoReturn:
    raise removed(f"{type(owner).__name__}.head", "0.2.0", "each role has its own: policies.heads[role_name]")


class RolePolicies(HeadsByRole):
    """The networks of every role; forward runs each on its role's observations.

    forward(list of float[B_r, D], role_names) -> list of (logits, value), one per named
    role (every role, in order, when ``role_names`` is None).
    """

    def __init__(self, spec: EnvSpec, role_names: list[str], stack_observations: int, hidden_size: int,
                 hidden_layers: int, *, shared_trunk: bool = False, value_normalization: bool = True,
                 policy_head: str = "gaussian"):
        super().__init__()
        self.role_names = list(role_names)
        self.heads = {name: action_head(spec, name, policy_head) for name in role_names}
        """How each role's policy outputs are read (logits, or a Gaussian's mean and log-std), by role name."""
        self.networks = nn.ModuleList(
            ActorCritic(stack_observations * spec.observation_size_of(name), self.heads[name], hidden_size,
                        hidden_layers, shared_trunk=shared_trunk, value_normalization=value_normalization)
            for name in role_names)

    @classmethod
    def for_config(cls, config: TrainConfig, spec: EnvSpec, role_names: list[str]) -> RolePolicies:
        """The networks ``config`` describes: a role's take its observations, ``config.stack_observations`` deep."""
        return cls(spec, role_names, config.stack_observations, config.hidden_size, config.hidden_layers,
                   shared_trunk=config.shared_trunk, value_normalization=config.value_normalization,
                   policy_head=config.policy_head)

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
        for name, (policy, values) in zip(role_names, outputs):
            head = self.heads[name]
            actions = head.sample(policy, generator, greedy)
            acted.append(Acted(actions, head.log_prob(policy, actions),
                               self.network(name).returns_scale(values.float())))
        return acted


class Acted(NamedTuple):
    """One role's part of ``RolePolicies.act``."""

    actions: torch.Tensor
    """int32[B, A] indices, or float32[B, k] continuous actions (unclipped: ``head.to_env`` clips them)"""
    log_probs: torch.Tensor
    """float32[B], of the actions"""
    values: torch.Tensor
    """float32[B], the critic's estimates in units of the returns"""
