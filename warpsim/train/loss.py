"""One learning role's PPO loss on a minibatch.

The loss is everything between the networks' outputs and the scalar that ``backward``
starts from: the action heads' log-softmax, the log-probabilities of the taken actions,
the entropy, advantage normalisation, the clipped objective and the value loss, plus the
minibatch's statistics. Eagerly that is some hundred small operations per role and
minibatch; the fused path (compiled.py) compiles it with the rest of the minibatch step.

Every tensor has a leading run dimension R: each run's loss is its own, with its own
coefficients, and the runs' losses are only summed for one backward pass, whose
gradient for each run's parameters is that run's alone.
"""

from __future__ import annotations

import torch

from warpsim.train import ppo
from warpsim.train.action_heads import ActionHead, CategoricalHeads
from warpsim.train.categorical_terms import DifferentiableCategoricalTerms
from warpsim.train.config import TrainConfig
from warpsim.train.fused_loss import DifferentiablePPOLoss
from warpsim.train.rollout import Samples
from warpsim.train.runs import per_run

STATS = ("ratio_deviation", "clip_fraction", "approx_kl", "policy_loss", "value_loss", "entropy")
"""The statistics a role's loss reports for its minibatch, in this order."""


class MinibatchLoss:
    """``loss(total, head, logits, value, batch)`` adds one role's loss on ``batch`` to ``total``.

    total float32[R]: each run's loss of the roles before this one (zero for the first). head: the
    role's action head. policy float[R, B, head.size], value float[R, B]: the role's networks on the
    minibatch, in the networks' precision. batch: the role's Samples of the minibatch.
    Returns (total + policy loss + value_coef x value loss - entropy_coef x entropy,
    float32[R, 6]: the ``STATS``), each run with its config's coefficients. With ``fused`` (the fused
    path's), discrete actions' log-probabilities and entropy, and their gradient, are one kernel each
    (``categorical_terms``).
    """

    def __init__(self, configs: list[TrainConfig], device: torch.device, fused: bool = False):
        self.value_coef, self.entropy_coef = per_run(configs, "value_coef", device), per_run(configs, "entropy_coef",
                                                                                              device)
        self.clip = per_run(configs, "clip_coef", device)[:, None]
        self.value_clip = None if configs[0].value_clip is None else per_run(configs, "value_clip", device)[:, None]
        self.normalize = configs[0].normalize_advantages
        self.fused = fused
        self.coefficients = torch.stack([self.clip[:, 0], torch.zeros_like(self.value_coef) if self.value_clip is None
                                         else self.value_clip[:, 0], self.value_coef, self.entropy_coef], -1)
        """float32[R, 4]: each run's clip, value_clip (0 without), value_coef and entropy_coef, as
        ``in_kernels`` passes them to the gradients' kernel."""

    def __call__(self, total: torch.Tensor, head: ActionHead, logits: torch.Tensor, value: torch.Tensor,
                 batch: Samples) -> tuple[torch.Tensor, torch.Tensor]:
        clip = self.clip
        if self.fused and isinstance(head, CategoricalHeads):
            new_log_prob, entropy = DifferentiableCategoricalTerms.apply(logits, batch.actions,
                                                                         list(head.action_levels))
        else:
            new_log_prob, entropy = head.log_prob(logits, batch.actions), head.entropy(logits)
        entropy = entropy.mean(-1)
        advantages = ppo.normalize(batch.advantages) if self.normalize else batch.advantages
        policy_loss, ratio = ppo.policy_loss(new_log_prob, batch.log_probs, advantages, clip)
        value_loss = ppo.value_loss(value.float(), batch.values, batch.returns, self.value_clip)
        ratio, new_log_prob = ratio.detach(), new_log_prob.detach()
        deviation = (ratio - 1).abs()
        # approx_kl: the low-variance estimator E[(r - 1) - log r].
        stats = torch.stack([deviation.amax(-1), (deviation > clip).float().mean(-1),
                             ((ratio - 1) - (new_log_prob - batch.log_probs)).mean(-1), policy_loss.detach(),
                             value_loss.detach(), entropy.detach()], dim=-1)
        return total + policy_loss + self.value_coef * value_loss - self.entropy_coef * entropy, stats

    def in_kernels(self, total: torch.Tensor, head: CategoricalHeads, observations: torch.Tensor, picks: torch.Tensor,
                   weights: tuple, batch: Samples) -> tuple[torch.Tensor, torch.Tensor]:
        """``__call__``'s loss and statistics, its networks' outputs and its gradients computed in the gradients'
        kernels (``fused_loss``) on the minibatch ``batch``, whose observations are the rows ``picks`` int64[R, b] of
        the rollout's ``observations``: those and ``weights`` as ``fused_forward.actor_critic`` takes them
        (``StackedActorCritic.fused_operands``), a trunk each."""
        advantages = ppo.normalize(batch.advantages) if self.normalize else batch.advantages
        loss, stats, _ = DifferentiablePPOLoss.apply(observations, picks, batch.actions, batch.log_probs, advantages,
                                                      batch.values, batch.returns, self.coefficients,
                                                      head.action_levels[0], self.value_clip is not None, *weights)
        return total + loss, stats
