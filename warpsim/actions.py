"""Uniformly random actions of an environment's kind: an index of each discrete component, or a
value within the bounds of each continuous one, drawn on the device with no host synchronisation
and reproducible from a generator (random players, random opponents, benchmarks)."""

from __future__ import annotations

import torch

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
        self.of_role = {role: self._table(spec, role) for role in spec.role_names}
        """Each role's (scale, low, whole), [A] each: a component's width (its levels), its low end, and
        whether it holds an index."""
        agent_roles = torch.tensor(spec.agent_roles, device=device)
        self.of_agents = tuple(torch.stack([self.of_role[role][part] for role in spec.role_names])[agent_roles]
                               for part in range(3))
        """Every agent's (scale, low, whole), [N, A] each."""
        self.uniform_rows = not (spec.role_action_levels or spec.role_action_bounds)
        """Whether every role acts with the whole row alike."""

    def _table(self, spec: EnvSpec, role: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        scale = torch.zeros(self.width, device=self.device)
        low = torch.zeros(self.width, device=self.device)
        whole = torch.zeros(self.width, dtype=torch.bool, device=self.device)
        if spec.continuous_of(role):
            bounds = torch.tensor(spec.action_bounds_of(role), dtype=torch.float32, device=self.device)
            scale[:len(bounds)] = bounds[:, 1] - bounds[:, 0]
            low[:len(bounds)] = bounds[:, 0]
        else:
            levels = spec.action_levels_of(role)
            scale[:len(levels)] = torch.tensor(levels, dtype=torch.float32, device=self.device)
            whole[:len(levels)] = True
        return scale, low, whole

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
