"""The pieces of PPO, on tensors: advantages, the clipped losses, action sampling.

Shapes: ``T`` rollout steps, ``B`` any batch of agents, with any leading dimensions before
it (a training run's, ``R``): every mean and sum is over ``B`` alone, so the runs of a batch
never mix. Everything here is float32 (log-probabilities, ratios, advantages, returns)
whatever precision the networks run in.
"""

from __future__ import annotations

import math

import torch

from warpsim.train.discounted_scan import discounted_scan


def gae(rewards: torch.Tensor, values: torch.Tensor, terminated: torch.Tensor, truncated: torch.Tensor,
        next_value: torch.Tensor, gamma: float | torch.Tensor,
        lam: float | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimates and returns of one rollout.

    rewards, values float32[T, ...]; terminated, truncated bool/float[T, ...]: the episode
    ended on step t by the rules (its final state is worth nothing) or by a time limit (a
    cut: the game would have gone on). Either way step t+1 starts a new episode and nothing
    flows back across it. At a cut the environment has already reset, so the value of the
    final state is not at hand: it is estimated by ``values[t]``, the value of the state the
    last action was taken in, one step earlier. next_value float32[...]: the value of the
    observation after the last step; ``gamma`` and ``lam`` broadcast against ``...`` (one per
run). Returns (advantages, returns), float32[T, ...].
    """
    dtype = rewards.dtype
    cut = truncated.to(dtype)
    continues = 1.0 - terminated.to(dtype) - cut
    following = torch.cat([values[1:], next_value[None]])  # the value of the observation after each step
    delta = rewards + gamma * (following * continues + values * cut) - values
    decay = gamma * lam * continues
    advantages = discounted_scan(*torch.broadcast_tensors(delta, decay))  # the one sequential part: one kernel
    return advantages, advantages + values


def policy_loss(new_log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor,
                clip: float | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The clipped surrogate objective, as a loss to minimise, and the ratios.

    new_log_prob, old_log_prob, advantages float32[..., B]; ``clip`` broadcasts against them.
    Returns (loss float32[...], ratio[..., B]).
    """
    ratio = torch.exp(new_log_prob - old_log_prob)
    unclipped = advantages * ratio
    clip = torch.as_tensor(clip, dtype=ratio.dtype, device=ratio.device)
    clipped = advantages * torch.clamp(ratio, 1.0 - clip, 1.0 + clip)
    return -torch.min(unclipped, clipped).mean(-1), ratio


def value_loss(new_value: torch.Tensor, old_value: torch.Tensor, returns: torch.Tensor,
               clip: float | torch.Tensor | None) -> torch.Tensor:
    """Half the mean squared error to the returns over the last dimension; with ``clip``, the
    pessimistic maximum of the plain and the clipped (around the rollout's value) errors."""
    error = (new_value - returns) ** 2
    if clip is not None:
        clip = torch.as_tensor(clip, dtype=new_value.dtype, device=new_value.device)
        clipped = old_value + torch.clamp(new_value - old_value, -clip, clip)
        error = torch.max(error, (clipped - returns) ** 2)
    return 0.5 * error.mean(-1)


def explained_variance(values: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
    """1 - Var(returns - values) / Var(returns) over the last dimension: 1 for a perfect critic,
    0 for one no better than the mean, below 0 for worse; NaN when the returns do not vary."""
    variance = returns.var(-1, unbiased=False)
    explained = 1.0 - (returns - values).var(-1, unbiased=False) / variance
    return torch.where(variance > 0, explained, torch.full_like(variance, math.nan))


def normalize(advantages: torch.Tensor) -> torch.Tensor:
    """Zero mean, unit standard deviation over the last dimension (the epsilon keeps a constant batch finite)."""
    mean = advantages.mean(-1, keepdim=True)
    return (advantages - mean) / (advantages.std(-1, unbiased=False, keepdim=True) + 1e-8)


def split_heads(logits: torch.Tensor, action_levels: tuple[int, ...]) -> tuple[torch.Tensor, ...]:
    """float[..., sum(levels)] into one float32 log-softmax[..., levels[k]] per action component.

    Converted before it is split: compiled on a CPU, split bfloat16 outputs of the networks' kernel's op
    were read wrongly (NaN log-probabilities, tests/test_compiled.py)."""
    return tuple(torch.log_softmax(head, dim=-1) for head in logits.float().split(action_levels, dim=-1))


def log_prob(log_probs: tuple[torch.Tensor, ...], actions: torch.Tensor) -> torch.Tensor:
    """Joint log-probability float32[...] of ``actions`` int[..., A]: the components are
    independent, so it is the sum of theirs."""
    total = log_probs[0].gather(-1, actions[..., :1].long()).squeeze(-1)
    for k in range(1, len(log_probs)):
        total = total + log_probs[k].gather(-1, actions[..., k:k + 1].long()).squeeze(-1)
    return total


def entropy(log_probs: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """Joint entropy float32[...]: the sum of the components' entropies."""
    return torch.stack([-(head.exp() * head).sum(dim=-1) for head in log_probs]).sum(dim=0)


def uniforms(rows: int, action_levels: tuple[int, ...], generator: torch.Generator | None,
             device: torch.device) -> tuple[torch.Tensor, ...]:
    """The random numbers ``sample`` turns into ``rows`` actions: float32[rows] per component, drawn from
    ``generator`` in component order."""
    return tuple(torch.rand((rows,), device=device, generator=generator) for _ in action_levels)


def sample(log_probs: tuple[torch.Tensor, ...], uniform: tuple[torch.Tensor, ...] | None) -> torch.Tensor:
    """One action per component, int32[B, A]: by inverting its cumulative distribution at ``uniform``
    (``uniforms``: one draw a component, no host sync, reproducible from its generator), or the most likely one
    when ``uniform`` is None. The action drawn at u is the number of levels, the last left out, whose
    cumulative probability is at most u: level k for u in [c(k-1), c(k)), the last for u past the sum of the
    others, so that a rounding of the sums never draws past the last level."""
    chosen = []
    for k, head in enumerate(log_probs):
        if uniform is None:
            chosen.append(head.argmax(dim=1))
            continue
        cumulative = head.exp().cumsum(dim=1)[:, :-1]
        chosen.append((cumulative <= uniform[k][:, None]).sum(dim=1))
    return torch.stack(chosen, dim=1).to(torch.int32)
