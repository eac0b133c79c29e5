"""Uniformly random actions of an environment's kind: an index of each discrete component, or a
value within the bounds of each continuous one, drawn on the device with no host synchronisation
and reproducible from a generator (random players, random opponents, benchmarks)."""

from __future__ import annotations

import torch

from warpsim.spec import EnvSpec


class RandomActions:
    """``random_actions(shape, generator, role)`` -> actions ``[*shape, A]`` as the environment of ``spec``
    takes them: of one role's agents, or of every agent (``shape`` ending with N) when ``role`` is None.
    A role's components past its own (``EnvSpec.action_size_of``) are zero."""

    def __init__(self, spec: EnvSpec, device: torch.device):
        self.continuous = spec.continuous
        self.device = device
        self.width = spec.action_size
        self.of_role = {role: self._scale_and_low(spec.action_bounds_of(role) if spec.continuous
                                                  else spec.action_levels_of(role)) for role in spec.role_names}
        agent_roles = torch.tensor(spec.agent_roles, device=device)
        per_role = [self.of_role[role] for role in spec.role_names]
        self.of_agents = (torch.stack([scale for scale, _ in per_role])[agent_roles],
                          torch.stack([low for _, low in per_role])[agent_roles])
        """Every agent's scale and low, [N, A]; for a spec without roles' own actions each row is the row's."""
        self.uniform_rows = not (spec.role_action_levels or spec.role_action_bounds)

    def _scale_and_low(self, declared) -> tuple[torch.Tensor, torch.Tensor]:
        """[A] each: a component's width (levels) and low end, zero past the declared components."""
        scale = torch.zeros(self.width, device=self.device)
        low = torch.zeros(self.width, device=self.device)
        if self.continuous:
            bounds = torch.tensor(declared, dtype=torch.float32, device=self.device)
            scale[:len(declared)] = bounds[:, 1] - bounds[:, 0]
            low[:len(declared)] = bounds[:, 0]
        else:
            scale[:len(declared)] = torch.tensor(declared, dtype=torch.float32, device=self.device)
        return scale, low

    def __call__(self, shape: tuple[int, ...], generator: torch.Generator | None = None,
                 role: str | None = None) -> torch.Tensor:
        """int32 indices, each component uniform over its levels; or float32 values uniform in its bounds."""
        uniform = torch.rand((*shape, self.width), device=self.device, generator=generator)
        scale, low = self.of_agents if role is None and not self.uniform_rows else self.of_role[
            role or next(iter(self.of_role))]
        if self.continuous:
            return low + uniform * scale
        return (uniform * scale).to(torch.int32)
