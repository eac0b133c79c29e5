"""One actor-critic network per agent role, shared by the agents of that role."""

from __future__ import annotations

import torch
from torch import nn

from warpsim.environment import EnvSpec


class ActorCritic(nn.Module):
    """An MLP trunk with a multi-discrete policy head and a value head.

    forward(observations float[B, D]) -> (logits float[B, sum(action_levels)], value float[B]).
    """

    def __init__(self, observation_size: int, action_levels: tuple[int, ...],
                 hidden_size: int, hidden_layers: int):
        super().__init__()
        layers, width = [], observation_size
        for _ in range(hidden_layers):
            layers += [_orthogonal(nn.Linear(width, hidden_size), gain=2 ** 0.5), nn.Tanh()]
            width = hidden_size
        self.trunk = nn.Sequential(*layers)
        # Small initial logits make the first policy nearly uniform (CleanRL's choice).
        self.policy_head = _orthogonal(nn.Linear(width, sum(action_levels)), gain=0.01)
        self.value_head = _orthogonal(nn.Linear(width, 1), gain=1.0)

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.trunk(observations)
        return self.policy_head(features), self.value_head(features).squeeze(-1)


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
                 hidden_layers: int):
        super().__init__()
        self.role_names = list(role_names)
        self.networks = nn.ModuleList(
            ActorCritic(input_size, spec.action_levels, hidden_size, hidden_layers) for _ in role_names)

    def forward(self, observations: list[torch.Tensor], role_names: list[str] | None = None):
        names = self.role_names if role_names is None else role_names
        return [self.networks[self.role_names.index(name)](batch) for name, batch in zip(names, observations)]

    def network(self, role_name: str) -> ActorCritic:
        """The network of one role."""
        network = self.networks[self.role_names.index(role_name)]
        assert isinstance(network, ActorCritic)
        return network
