"""The roles of an environment's agents (EnvSpec.role_names), as slices or indices of the agent dimension.

The trainer runs one network per role and the TorchRL adapter groups its keys by role;
both take the agents of a role from here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from warpsim.environment import EnvSpec


@dataclass(frozen=True)
class Role:
    """The agents of one role: a slice when they are contiguous (a view, no copy), else an index."""

    name: str
    agents: slice | torch.Tensor
    count: int
    observation_size: int
    """The entries of its row of observations an agent of the role observes, the first ones
    (``EnvSpec.observation_size_of``)."""

    def of(self, per_agent: torch.Tensor) -> torch.Tensor:
        """The role's part of a tensor whose dim 1 is the agent, e.g. observations[E, N, D]."""
        if isinstance(self.agents, slice):
            return per_agent[:, self.agents]
        return per_agent.index_select(1, self.agents)

    def on(self, device: torch.device) -> Role:
        """The same role, its agent index (if any) on ``device``."""
        if isinstance(self.agents, slice):
            return self
        return Role(self.name, self.agents.to(device), self.count, self.observation_size)

    def observed(self, inputs: torch.Tensor, depth: int) -> torch.Tensor:
        """The role's part of a policy's inputs float[E, N, depth * D] (``depth`` observations of the
        buffer's width D, stacked): float[E, n, depth * size], each observation cut to the role's size.
        A view where the role observes whole rows."""
        part = self.of(inputs)
        width = inputs.shape[-1] // depth
        if width == self.observation_size:
            return part
        return part.unflatten(-1, (depth, width))[..., :self.observation_size].flatten(-2)

    def write(self, per_agent: torch.Tensor, values: torch.Tensor) -> None:
        """Writes ``values`` into the role's part of ``per_agent`` in place; values narrower than its rows
        (a role's own actions, ``EnvSpec.action_size_of``) into their first components."""
        if values.dim() == per_agent.dim() == 3 and values.shape[-1] < per_agent.shape[-1]:
            per_agent = per_agent[..., :values.shape[-1]]
        values = values.to(per_agent.dtype)  # a discrete role's indices into a row of float32
        if isinstance(self.agents, slice):
            per_agent[:, self.agents] = values
        else:
            per_agent.index_copy_(1, self.agents, values)


def roles_of(spec: EnvSpec, device: torch.device) -> list[Role]:
    """The roles of an environment that have agents, in ``role_names`` order."""
    roles = []
    for index, name in enumerate(spec.role_names):
        agents = [i for i, role in enumerate(spec.agent_roles) if role == index]
        if not agents:
            continue
        contiguous = agents == list(range(agents[0], agents[-1] + 1))
        where = slice(agents[0], agents[-1] + 1) if contiguous else torch.tensor(agents, device=device)
        roles.append(Role(name, where, len(agents), spec.observation_size_of(name)))
    return roles
