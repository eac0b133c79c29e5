"""The policy's input: the latest k observations of each agent, newest first.

With k = 1 it is the environment's observation buffer itself. With k > 1 a memoryless
policy sees motion (in tag_continuous, for instance, how the others' relative
positions change tells an agent its own heading, which no single observation holds).
At an episode's first step the missing older observations repeat the first one.
"""

from __future__ import annotations

import torch

from warpsim.environment import Environment


class ObservationStack:
    """float[E, N, k*D] inputs built from ``env.observations`` without host synchronisation.

    They keep the observations' dtype where the networks take it as it is: float32, or
    ``network_dtype`` (bfloat16 observations for networks under bf16 autocast); bfloat16
    observations are converted to float32 for any other networks.
    """

    def __init__(self, env: Environment, depth: int, network_dtype: torch.dtype = torch.float32):
        self.env = env
        self.depth = depth
        self.size = env.spec.observation_size
        observed = env.observations.dtype
        self.dtype = observed if observed in (torch.float32, network_dtype) else torch.float32
        self.history = torch.zeros(env.num_envs, env.num_agents, depth * self.size, dtype=self.dtype,
                                   device=env.device)
        self.fresh = torch.ones(env.num_envs, dtype=torch.bool, device=env.device)

    def peek(self) -> torch.Tensor:
        """The input for the current observations, without moving the history on."""
        observations = self.env.observations.to(self.dtype)
        if self.depth == 1:
            return observations
        # A fresh environment's older observations repeat its first: only they are chosen per environment.
        first = observations if self.depth == 2 else observations.repeat(1, 1, self.depth - 1)
        older = torch.where(self.fresh[:, None, None], first, self.history[..., :-self.size])
        return torch.cat([observations, older], dim=-1)

    def advance(self) -> torch.Tensor:
        """The input for the current observations, which become part of the history."""
        stacked = self.peek()
        if self.depth > 1:
            self.history.copy_(stacked)
            stacked = self.history
        return stacked

    def stepped(self) -> None:
        """Call after ``env.step()``: environments that ended start their history anew."""
        self.fresh.copy_(self.env.done)

    def restart(self) -> None:
        """Call after ``env.reset()``."""
        self.fresh.fill_(True)

    def state_dict(self) -> dict:
        return {"history": self.history.cpu(), "fresh": self.fresh.cpu()}

    def load_state_dict(self, state: dict) -> None:
        self.history.copy_(state["history"])
        self.fresh.copy_(state["fresh"])
