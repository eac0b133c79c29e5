"""Uniformly random actions of an environment's kind: an index of each discrete component, or a
value within the bounds of each continuous one (``layout.role_action_limits``), drawn on the device
with no host synchronisation and reproducible from a generator (random players, random opponents,
benchmarks)."""

from __future__ import annotations

import torch

from warpsim.layout import role_action_limits
from warpsim.spec import EnvSpec


class RandomActions:
    """``random_actions(shape, generator, role)`` -> actions ``[*shape, A]`` as the environment of ``spec``
    takes them: of one role's agents, or of every agent (``shape`` ending with N) when ``role`` is None.
    A role's components past its own (``EnvSpec.action_size_of``) are zero; a discrete role's indices in a
    row of bounds are whole float32 values."""

    def __init__(self, spec: EnvSpec, device: torch.device):
        self.dtype = torch.float32 if spec.continuous else torch.int32
        """The row's dtype, env.actions'."""
        self.device = device
        self.width = spec.action_size
        limits, indexed = role_action_limits(spec)
        low, high = limits.to(device, torch.float32).unbind(1)
        tables = (high - low, low, indexed.to(device))
        self.of_role = {role: tuple(table[r] for table in tables) for r, role in enumerate(spec.role_names)}
        """Each role's (scale, low, whole), [A] each: a component's width (its levels), its low end, and
        whether it holds an index."""
        agent_roles = torch.tensor(spec.agent_roles, device=device)
        self.of_agents = tuple(table[agent_roles] for table in tables)
        """Every agent's (scale, low, whole), [N, A] each."""
        self.uniform_rows = not (spec.role_action_levels or spec.role_action_bounds)
        """Whether every role acts with the whole row alike."""

    def __call__(self, shape: tuple[int, ...], generator: torch.Generator | None = None,
                 role: str | None = None) -> torch.Tensor:
        """int32 indices, each component uniform over its levels; or float32 values uniform in its bounds."""
        uniform = torch.rand((*shape, self.width), device=self.device, generator=generator)
        if role is None and not self.uniform_rows:
            scale, low, whole = self.of_agents
        else:
            scale, low, whole = self.of_role[role or next(iter(self.of_role))]
        if self.dtype == torch.int32:
            return (uniform * scale).to(torch.int32)
        values = low + uniform * scale
        return torch.where(whole, values.floor(), values)
