"""What a policy's outputs mean: one categorical distribution per discrete action component,
or a diagonal Gaussian over continuous ones.

A network's policy output is one tensor, float[..., size]: the logits of every discrete
component side by side, or, for continuous actions, the mean of each component followed
by its log standard deviation. The Gaussian is the design CleanRL, PureJaxRL and JaxMARL
share: a mean layer initialised small, a learned log standard deviation that does not
depend on the observation (initialised to 0), the sample clipped to the bounds only where
it is written to the environment, and the log-probability of the unclipped sample. All
the distribution's arithmetic runs in float32 whatever precision the network ran in.
"""

from __future__ import annotations

import math

import torch

from warpsim.spec import EnvSpec
from warpsim.train import ppo

HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)


class CategoricalHeads:
    """Independent categorical distributions, one per discrete component: actions int32[..., A]."""

    continuous = False

    def __init__(self, action_levels: tuple[int, ...]):
        self.action_levels = tuple(action_levels)
        self.size = sum(self.action_levels)
        """Policy outputs per agent: the logits of every component."""
        self.action_size = len(self.action_levels)
        self.action_dtype = torch.int32

    def log_prob(self, outputs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """float32[...]: the joint log-probability of ``actions`` under ``outputs``."""
        return ppo.log_prob(ppo.split_heads(outputs, self.action_levels), actions)

    def entropy(self, outputs: torch.Tensor) -> torch.Tensor:
        """float32[...]: the joint entropy."""
        return ppo.entropy(ppo.split_heads(outputs, self.action_levels))

    def sample(self, outputs: torch.Tensor, generator: torch.Generator | None, greedy: bool = False) -> torch.Tensor:
        """int32[B, A] from outputs float[B, size]: sampled with ``generator``, or the most likely."""
        return ppo.sample(ppo.split_heads(outputs, self.action_levels), generator, greedy)

    def to_env(self, actions: torch.Tensor) -> torch.Tensor:
        """What the environment is given: the indices as they are."""
        return actions


class GaussianHead:
    """A diagonal Gaussian over the continuous components: actions float32[..., k], clipped to
    ``bounds`` only where they are written to the environment (``to_env``)."""

    continuous = True

    def __init__(self, action_bounds: tuple[tuple[float, float], ...]):
        self.bounds = tuple(action_bounds)
        self.action_size = len(self.bounds)
        self.size = 2 * self.action_size
        """Policy outputs per agent: the mean and the log standard deviation of each component."""
        self.action_dtype = torch.float32
        self._limits: dict[torch.device, torch.Tensor] = {}

    def split(self, outputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean, log_std), float32[..., k] each."""
        mean, log_std = outputs.float().chunk(2, dim=-1)
        return mean, log_std

    def log_prob(self, outputs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        mean, log_std = self.split(outputs)
        z = (actions - mean) * torch.exp(-log_std)
        return (-0.5 * z * z - log_std - HALF_LOG_TWO_PI).sum(-1)

    def entropy(self, outputs: torch.Tensor) -> torch.Tensor:
        _, log_std = self.split(outputs)
        return (0.5 + HALF_LOG_TWO_PI + log_std).sum(-1)

    def sample(self, outputs: torch.Tensor, generator: torch.Generator | None, greedy: bool = False) -> torch.Tensor:
        """float32[B, k]: mean + std x a standard normal draw from ``generator``, or the mean."""
        mean, log_std = self.split(outputs)
        if greedy:
            return mean
        noise = torch.randn(mean.shape, device=mean.device, generator=generator)
        return mean + torch.exp(log_std) * noise

    def to_env(self, actions: torch.Tensor) -> torch.Tensor:
        """The actions clipped to the bounds, as the environment is given them."""
        limits = self._limits.get(actions.device)
        if limits is None:
            limits = self._limits[actions.device] = torch.tensor(self.bounds, dtype=torch.float32,
                                                                 device=actions.device).T
        return torch.clamp(actions, limits[0], limits[1])


ActionHead = CategoricalHeads | GaussianHead


def action_head(spec: EnvSpec) -> ActionHead:
    """The distribution of an environment's actions."""
    return GaussianHead(spec.action_bounds) if spec.continuous else CategoricalHeads(spec.action_levels)
