"""What a policy's outputs mean: one categorical distribution per discrete action component,
or a distribution over continuous ones.

A network's policy output is one tensor, float[..., size]: the logits of every discrete
component side by side, or, for continuous actions, the mean of each component followed
by its log standard deviation. Two continuous heads (``TrainConfig.policy_head``):

- ``GaussianHead`` (the default), the design CleanRL, PureJaxRL and JaxMARL share: a mean
  layer initialised small, a learned log standard deviation that does not depend on the
  observation (initialised to 0), the sample clipped to the bounds only where it is written
  to the environment, and the log-probability of the unclipped sample;
- ``TanhNormalHead``, as BenchMARL and TorchRL's tutorials use: a Gaussian whose scale the
  network outputs too, its sample squashed into the bounds by tanh.

All the distributions' arithmetic runs in float32 whatever precision the network ran in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from warpsim.spec import EnvSpec
from warpsim.train import ppo

HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)


class CategoricalHeads:
    """Independent categorical distributions, one per discrete component: actions int32[..., A]."""

    continuous = False
    learned_log_std = False
    """Whether the network holds a log standard deviation of its own, apart from its outputs."""

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
        noise = None if greedy else self.noise(outputs.shape[0], generator, outputs.device)
        return self.sample_with(outputs, noise)

    def noise(self, rows: int, generator: torch.Generator | None, device: torch.device) -> tuple[torch.Tensor, ...]:
        """The random draws that ``sample_with`` turns into ``rows`` actions (a uniform per component)."""
        return ppo.uniforms(rows, self.action_levels, generator, device)

    def sample_with(self, outputs: torch.Tensor, noise: tuple[torch.Tensor, ...] | None) -> torch.Tensor:
        """int32[B, A] from outputs float[B, size] and ``noise`` (``noise``'s draws), or the most likely
        when ``noise`` is None: arithmetic alone, which a compiled policy step fuses."""
        return ppo.sample(ppo.split_heads(outputs, self.action_levels), noise)

    def to_env(self, actions: torch.Tensor) -> torch.Tensor:
        """What the environment is given: the indices as they are."""
        return actions


class GaussianHead:
    """A diagonal Gaussian over the continuous components: actions float32[..., k], clipped to
    ``bounds`` only where they are written to the environment (``to_env``)."""

    continuous = True
    learned_log_std = True

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
        noise = None if greedy else self.noise(outputs.shape[0], generator, outputs.device)
        return self.sample_with(outputs, noise)

    def noise(self, rows: int, generator: torch.Generator | None, device: torch.device) -> tuple[torch.Tensor, ...]:
        """The random draws that ``sample_with`` turns into ``rows`` actions: a standard normal per component."""
        return (torch.randn((rows, self.action_size), device=device, generator=generator),)

    def sample_with(self, outputs: torch.Tensor, noise: tuple[torch.Tensor, ...] | None) -> torch.Tensor:
        """float32[B, k]: mean + std x ``noise``, or the mean when ``noise`` is None."""
        mean, log_std = self.split(outputs)
        if noise is None:
            return mean
        return mean + torch.exp(log_std) * noise[0]

    def to_env(self, actions: torch.Tensor) -> torch.Tensor:
        """The actions clipped to the bounds, as the environment is given them."""
        limits = self._limits_on(actions.device)
        return torch.clamp(actions, limits[0], limits[1])

    def _limits_on(self, device: torch.device) -> torch.Tensor:
        """float32[2, k]: the low and the high bound of each component, on ``device``."""
        limits = self._limits.get(device)
        if limits is None:
            limits = self._limits[device] = torch.tensor(self.bounds, dtype=torch.float32, device=device).T
        return limits


class TanhNormalHead(GaussianHead):
    """A Gaussian over pre-squash values u, its mean and log standard deviation both outputs of the
    network; the environment gets ``low + (tanh(u) + 1) / 2 x (high - low)``, inside the bounds.

    The rollout stores u (unbounded), so that the log-probability needs no inverse tanh:
    log N(u) - sum log(d action / d u). The entropy bonus takes the Gaussian's entropy of u (the
    squashed one has no closed form)."""

    learned_log_std = False
    LOG_STD_RANGE = (-5.0, 2.0)
    """The network's log standard deviation is clamped to this range: a scale that never vanishes
    nor explodes."""

    def split(self, outputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = super().split(outputs)
        return mean, log_std.clamp(*self.LOG_STD_RANGE)

    def log_prob(self, outputs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        # log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)), stable for large |u|
        log_slope = 2 * (math.log(2.0) - actions - torch.nn.functional.softplus(-2 * actions))
        limits = self._limits_on(actions.device)
        log_scale = torch.log((limits[1] - limits[0]) / 2)
        return super().log_prob(outputs, actions) - (log_slope + log_scale).sum(-1)

    def to_env(self, actions: torch.Tensor) -> torch.Tensor:
        """low + (tanh(u) + 1) / 2 x (high - low): always inside the bounds."""
        limits = self._limits_on(actions.device)
        return limits[0] + (torch.tanh(actions) + 1) / 2 * (limits[1] - limits[0])


ActionHead = CategoricalHeads | GaussianHead
CONTINUOUS_HEADS: dict[str, type[GaussianHead]] = {"gaussian": GaussianHead, "tanh_normal": TanhNormalHead}
"""The heads of continuous actions, by ``TrainConfig.policy_head``."""


def action_head(spec: EnvSpec, role: str, continuous_head: str = "gaussian") -> ActionHead:
    """The distribution of the actions of an agent of ``role``; ``continuous_head``
    (``TrainConfig.policy_head``) picks the one of continuous actions."""
    if not spec.continuous_of(role):
        return CategoricalHeads(spec.action_levels_of(role))
    return CONTINUOUS_HEADS[continuous_head](spec.action_bounds_of(role))


def joint_draw_size(heads: Sequence[ActionHead], rows: Sequence[int]) -> int | None:
    """The uniforms ``roles_noise`` draws in its one draw for these heads' roles of ``rows`` agents, or None where
    it draws role by role (a continuous head among them)."""
    discrete = [head for head in heads if isinstance(head, CategoricalHeads)]
    if len(discrete) < len(heads):
        return None
    return sum(role_rows * len(head.action_levels) for head, role_rows in zip(discrete, rows))


def roles_noise(heads: Sequence[ActionHead], rows: Sequence[int], generator: torch.Generator | None,
                device: torch.device, out: torch.Tensor | None = None) -> list[tuple[torch.Tensor, ...]]:
    """Each head's ``noise`` for its role's ``rows`` agents. Discrete heads draw all of theirs in one
    draw (into ``out``, float32[``joint_draw_size``], where given): one launch instead of one per role and
    component; on a CPU the numbers are those of the separate draws (the generator fills a tensor in order),
    on a GPU they are others. Continuous heads draw role by role (a CPU's normal draws of a joined tensor
    differ from the separate ones)."""
    size = joint_draw_size(heads, rows)
    if size is None:
        return [head.noise(role_rows, generator, device) for head, role_rows in zip(heads, rows)]
    components = [len(head.action_levels) for head in heads]  # type: ignore[union-attr]
    drawn = torch.rand(size, device=device, generator=generator, out=out)
    parts = iter(drawn.split([role_rows for role_rows, count in zip(rows, components) for _ in range(count)]))
    return [tuple(next(parts) for _ in range(count)) for count in components]
