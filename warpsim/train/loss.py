"""One learning role's PPO loss on a minibatch, eager or through ``torch.compile``.

The loss is everything between the networks' outputs and the scalar that ``backward``
starts from: the action heads' log-softmax, the log-probabilities of the taken actions,
the entropy, advantage normalisation, the clipped objective and the value loss, plus the
minibatch's statistics. Eagerly that is some hundred small operations per role and
minibatch, each one a kernel launch and a pass over memory; compiled, the forward and the
backward become a few fused kernels. Both run the same Python function, so the compiled
loss is the eager one up to the rounding of the fused arithmetic.

Every tensor has a leading run dimension R: each run's loss is its own, with its own
coefficients, and the runs' losses are only summed for one backward pass, whose
gradient for each run's parameters is that run's alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from warpsim.errors import UnavailableError
from warpsim.train import ppo
from warpsim.train.action_heads import ActionHead
from warpsim.train.config import TrainConfig
from warpsim.train.rollout import Samples
from warpsim.train.runs import per_run

STATS = ("ratio_deviation", "clip_fraction", "approx_kl", "policy_loss", "value_loss", "entropy")
"""The statistics a role's loss reports for its minibatch, in this order."""


class MinibatchLoss:
    """``loss(total, logits, value, batch)`` adds one role's loss on ``batch`` to ``total``.

    total float32[R]: each run's loss of the roles before this one (zero for the first).
    policy float[R, B, head.size], value float[R, B]: the role's networks on the
    minibatch, in the networks' precision. batch: the role's Samples of the minibatch.
    Returns (total + policy loss + value_coef x value loss - entropy_coef x entropy,
    float32[R, 6]: the ``STATS``), each run with its config's coefficients.
    """

    def __init__(self, configs: list[TrainConfig], head: ActionHead, compiled: bool, device: torch.device):
        self.head = head
        self.compiled = compiled
        self.compile_seconds = 0.0
        """Seconds ``compile_for`` spent compiling (0 when eager)."""
        self.value_coef, self.entropy_coef = per_run(configs, "value_coef", device), per_run(configs, "entropy_coef",
                                                                                              device)
        clip = per_run(configs, "clip_coef", device)[:, None]
        value_clip = None if configs[0].value_clip is None else per_run(configs, "value_clip", device)[:, None]
        normalize = configs[0].normalize_advantages

        def role_loss(logits: torch.Tensor, value: torch.Tensor, actions: torch.Tensor, old_log_probs: torch.Tensor,
                      old_values: torch.Tensor, advantages: torch.Tensor,
                      returns: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
            new_log_prob = head.log_prob(logits, actions)
            entropy = head.entropy(logits).mean(-1)
            if normalize:
                advantages = ppo.normalize(advantages)
            policy_loss, ratio = ppo.policy_loss(new_log_prob, old_log_probs, advantages, clip)
            value_loss = ppo.value_loss(value.float(), old_values, returns, value_clip)
            ratio, new_log_prob = ratio.detach(), new_log_prob.detach()
            deviation = (ratio - 1).abs()
            # approx_kl: the low-variance estimator E[(r - 1) - log r].
            stats = torch.stack([deviation.amax(-1), (deviation > clip).float().mean(-1),
                                 ((ratio - 1) - (new_log_prob - old_log_probs)).mean(-1), policy_loss.detach(),
                                 value_loss.detach(), entropy.detach()], dim=-1)
            return policy_loss, value_loss, entropy, stats

        self._function: Callable[..., tuple[torch.Tensor, ...]] = (
            torch.compile(role_loss, fullgraph=True) if compiled else role_loss)

    def __call__(self, total: torch.Tensor, logits: torch.Tensor, value: torch.Tensor,
                 batch: Samples) -> tuple[torch.Tensor, torch.Tensor]:
        policy_loss, value_loss, entropy, stats = self._function(
            logits, value, batch.actions, batch.log_probs, batch.values, batch.advantages, batch.returns)
        # The roles' losses add up here, outside the compiled function: its inputs are then alike for
        # every role (only the network's outputs carry gradients), and so is what it compiles.
        return total + policy_loss + self.value_coef * value_loss - self.entropy_coef * entropy, stats

    def compile_for(self, samples: list[int], minibatches: int, dtype: torch.dtype, device: torch.device) -> None:
        """Compiles the forward and the backward for the minibatches of roles of ``samples``
        samples each per run, split ``minibatches`` ways, and network outputs of ``dtype``, before
        training starts, so that no iteration pays for it; a CUDA graph then captures the
        compiled kernels. Nothing when eager."""
        if not self.compiled:
            return
        # torch.tensor_split's minibatches: n // m samples, and one more in the first n % m of them.
        m = minibatches
        sizes = {n // m + extra for n in samples for extra in ((0, 1) if n % m else (0,))}
        head, runs = self.head, len(self.value_coef)
        started = time.perf_counter()
        try:
            for size in sorted(sizes):
                logits = torch.zeros(runs, size, head.size, dtype=dtype, device=device, requires_grad=True)
                value = torch.zeros(runs, size, dtype=dtype, device=device, requires_grad=True)
                taken = torch.zeros(runs, size, head.action_size, dtype=head.action_dtype, device=device)
                # log-probs, values, advantages, returns
                floats = [torch.zeros(runs, size, device=device) for _ in range(4)]
                policy_loss, value_loss, entropy, _ = self._function(logits, value, taken, *floats)
                (policy_loss + value_loss + entropy).sum().backward()
        except Exception as error:  # the compiler's own failures have no common type
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise UnavailableError(f"config field compile_loss=True: torch.compile could not compile the loss on "
                                   f"{device} ({type(error).__name__}: {first}); use compile_loss=False") from None
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        self.compile_seconds = time.perf_counter() - started
