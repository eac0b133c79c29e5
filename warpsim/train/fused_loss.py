"""PPO's loss of a role with categorical actions and its gradients at the networks' weights in one pass
(``ppo_loss_gradients``): on a GPU the gradients' kernels compute the policy's and the value's loss in their
registers (``TrainConfig.gradient_kernels='loss'``), reading the minibatch's observations where they lie in the
rollout, where otherwise a minibatch step gathers them, runs the networks' forward kernel, writes the policy's logits
and the values, runs the loss's kernels on them and writes their gradient for the gradients' kernels to read, which
compute the networks again.

The loss is ``loss.MinibatchLoss``'s: the clipped objective of the normalised advantages, the value's error (clipped
or not) and the entropy, each a mean over the minibatch, weighed by the run's coefficients; its gradient at the
heads' outputs is autograd's, written out (at a tie of the minimum's or the maximum's two sides each takes half; a
clamp passes the gradient at its bounds). On the CPU the formulas in torch, the kernel's reference.
"""

from __future__ import annotations

import torch

from warpsim.train import categorical_terms, fused_backward, fused_forward, ppo, triton_launch
from warpsim.train.fused_backward import LossOperands, TrunkLaunch

STATISTICS = 6
"""The minibatch's statistics that ``ppo_loss_gradients`` gives, ``loss.STATS`` in its order: the largest ratio
deviation, and means over the rows (the clip fraction, approx_kl, the policy loss, the value loss, the entropy)."""
STATISTIC_SLOTS = 8
"""A program's slots of them in the kernel: its rows' largest deviation and its share of each mean (its rows' sum
over the minibatch's), then unused slots to a power of two (a Triton block's size)."""
ACTOR_LAUNCH = TrunkLaunch(16, 4, None)
"""The actor's program: 16 rows by 4 warps, 254 registers and two programs an SM, 253 machine instructions a row;
32 rows by 8 warps, as without the loss, took 216 registers and one program, 295 instructions a row (ptxas, sm_90,
at train-ref's shapes; benchmarks/network_kernel_resources.py). Not yet timed on a GPU
(benchmarks/fused_forward.py's ``LOSS_LAUNCH_SHAPES`` times the others)."""
CRITIC_LAUNCH = TrunkLaunch(16, 4, None)
"""The critic's program: 16 rows by 4 warps, 222 registers and two programs an SM, 125 instructions a row (122
without the loss at 32 rows by 8 warps); at 32 by 8 held to 128 registers, also two programs an SM, 147."""
IN_FORWARD = False
"""Whether ``launch`` computes the loss in a forward kernel of its own (``ppo_loss_kernel.ppo_loss_forward``, 64 rows
by 4 warps) that writes the heads' outputs' gradients for the gradients' kernels, at their own shape, to read, rather
than in the gradients' kernels. There each warp holds whole rows, so a component's log-softmax is reduced within a
warp, where in the gradients' kernels' 16 rows by 4 warps a row's logits lie across all four warps and each
reduction passes through shared memory. Compiled for sm_90 at train-ref's shapes, the forward kernel takes 136
registers, three programs an SM, and about 232 instructions a row against 148 without the loss; the gradients'
kernels are those of ``gradient_kernels='on'``, reading the observations' rows where they lie. Not yet timed on a
GPU: benchmarks/fused_forward.py times both (``loss_times``)."""


@torch.library.custom_op("warpsim::ppo_loss_gradients", mutates_args=(), tags=(torch.Tag.flexible_layout,))
def ppo_loss_gradients(observations: torch.Tensor, picks: torch.Tensor, actions: torch.Tensor,
                       old_log_probs: torch.Tensor, advantages: torch.Tensor, old_values: torch.Tensor,
                       returns: torch.Tensor, coefficients: torch.Tensor, levels: int, value_clip: bool,
                       actor_weight: torch.Tensor, actor_bias: torch.Tensor, actor_hidden_weights: torch.Tensor,
                       actor_hidden_biases: torch.Tensor, critic_weight: torch.Tensor, critic_bias: torch.Tensor,
                       critic_hidden_weights: torch.Tensor, critic_hidden_biases: torch.Tensor,
                       policy_weight: torch.Tensor, policy_bias: torch.Tensor, value_weight: torch.Tensor,
                       value_bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(statistics float32[R, STATISTICS]: ``loss.STATS`` of each run's minibatch; gradients float32[R, G]: of its
    loss at the twelve weights and biases, as ``fused_backward.actor_critic_backward`` gives them). The networks as
    ``fused_forward.actor_critic`` takes them, with a trunk each, on the rollout's ``observations`` [R, N, D]; the
    minibatch (its rows ``picks`` of them) and the coefficients as ``fused_backward.LossOperands`` holds them, the
    actions of A components of ``levels`` logits each."""
    weights = [actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases, critic_weight, critic_bias,
               critic_hidden_weights, critic_hidden_biases, policy_weight, policy_bias, value_weight, value_bias]
    observations = observations[torch.arange(observations.shape[0], device=observations.device)[:, None], picks]
    policy, values = fused_forward.actor_critic(observations, *weights, False)
    logits = policy[..., :policy_weight.shape[1]]
    operands = LossOperands(picks, actions, old_log_probs, advantages, old_values, returns, coefficients, levels,
                            value_clip)
    log_prob_gradient, entropy_gradient, value_gradient, statistics = _loss_gradients(logits, values, operands)
    components = [levels] * actions.shape[-1]
    policy_gradient = categorical_terms.categorical_terms_backward(log_prob_gradient, entropy_gradient, logits,
                                                                   actions, components)
    gradients = fused_backward.actor_critic_backward(policy_gradient[..., :logits.shape[-1]], value_gradient,
                                                     observations, *weights, False)
    return statistics, gradients


def _tie_weight(mine: torch.Tensor, other: torch.Tensor, passed: torch.Tensor | float) -> torch.Tensor:
    """The share of a minimum's gradient that reaches ``mine`` (against ``other``): 1, at a tie half, past ``other``
    none, times ``passed`` (1.0 where its bound passes the gradient on)."""
    return torch.where(mine < other, 1.0, torch.where(mine == other, 0.5, 0.0)) * passed


def _loss_gradients(logits: torch.Tensor, values: torch.Tensor,
                    operands: LossOperands) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The loss's gradients at the taken actions' joint log-probability, at the joint entropy and at the values
    float32[R, B]; and ``loss.STATS`` float32[R, STATISTICS], as ``loss.MinibatchLoss`` computes them."""
    rows = values.shape[-1]
    clip, value_clip, value_coef, entropy_coef = operands.coefficients.unbind(-1)
    clip, value_clip = clip[:, None], value_clip[:, None]
    log_probs = ppo.split_heads(logits.float(), (operands.levels,) * operands.actions.shape[-1])
    new_log_prob, entropy = ppo.log_prob(log_probs, operands.actions), ppo.entropy(log_probs)
    advantage, old_log_prob = operands.advantages, operands.old_log_probs
    ratio = torch.exp(new_log_prob - old_log_prob)
    unclipped = advantage * ratio
    clipped = advantage * torch.clamp(ratio, 1.0 - clip, 1.0 + clip)
    within = ((ratio >= 1.0 - clip) & (ratio <= 1.0 + clip)).float()
    shares = _tie_weight(unclipped, clipped, 1.0) + _tie_weight(clipped, unclipped, within)
    log_prob_gradient = -(shares * advantage) / rows * ratio
    entropy_gradient = (-entropy_coef / rows)[:, None].expand_as(entropy)
    error = values - operands.returns
    scale = (value_coef * 0.5 / rows)[:, None]
    if operands.value_clip:
        moved = values - operands.old_values
        clipped_error = operands.old_values + torch.clamp(moved, -value_clip, value_clip) - operands.returns
        value_within = ((moved >= -value_clip) & (moved <= value_clip)).float()
        squared, clipped_squared = error * error, clipped_error * clipped_error
        value_gradient = scale * (_tie_weight(-squared, -clipped_squared, 1.0) * 2.0 * error
                                  + _tie_weight(-clipped_squared, -squared, value_within) * 2.0 * clipped_error)
        squared = torch.maximum(squared, clipped_squared)
    else:
        squared = error * error
        value_gradient = scale * 2.0 * error
    deviation = (ratio - 1.0).abs()
    statistics = torch.stack([deviation.amax(-1), (deviation > clip).float().mean(-1),
                              ((ratio - 1.0) - (new_log_prob - old_log_prob)).mean(-1),
                              -torch.minimum(unclipped, clipped).mean(-1), 0.5 * squared.mean(-1), entropy.mean(-1)],
                             -1)
    return log_prob_gradient, entropy_gradient.contiguous(), value_gradient, statistics


@ppo_loss_gradients.register_fake
def _(observations, picks, actions, old_log_probs, advantages, old_values, returns, coefficients, levels, value_clip,
      *weights):
    runs = observations.shape[0]
    entries = fused_backward.gradient_offsets(list(weights), runs)[-1]
    return (observations.new_empty((runs, STATISTICS), dtype=torch.float32),
            observations.new_empty((runs, entries), dtype=torch.float32))


def launch(observations: torch.Tensor, picks: torch.Tensor, actions: torch.Tensor, old_log_probs: torch.Tensor,
           advantages: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, coefficients: torch.Tensor,
           levels: int, value_clip: bool, *weights: torch.Tensor, programs: int | None = None,
           actor: TrunkLaunch = ACTOR_LAUNCH, critic: TrunkLaunch = CRITIC_LAUNCH,
           in_forward: bool | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``ppo_loss_gradients`` on the observations' device (a CPU through Triton's interpreter), reading the
    minibatch's rows of the observations where they lie: by the whole-trunk gradients' kernel
    (``actor_critic_backward_kernel``), one launch per trunk at its program's shape (``actor``, ``critic``); or,
    ``in_forward`` (None: ``IN_FORWARD``), by ``ppo_loss_kernel.ppo_loss_forward``, which writes the heads' outputs'
    gradients, and then the gradients' kernels at their own shape, which read them. ``programs``: of the gradients'
    kernels, as ``fused_backward.launch_backward`` takes them (by default as many as the larger block of rows
    makes)."""
    in_forward = IN_FORWARD if in_forward is None else in_forward
    block_rows = fused_backward.BACKWARD_BLOCK_ROWS if in_forward else max(actor.block_rows, critic.block_rows)
    backward = fused_backward.BackwardLaunch(observations, list(weights), block_rows, None, programs, True, 1, None,
                                             rows=picks.shape[1])
    actions, old_log_probs, advantages, old_values, returns, coefficients = (
        tensor.contiguous() for tensor in (actions, old_log_probs, advantages, old_values, returns, coefficients))
    # a run's minibatch of the epoch's order, as it lies (its runs apart by the stride the kernel takes)
    picks = picks if picks.stride(1) == 1 else picks.contiguous()
    operands = LossOperands(picks, actions, old_log_probs, advantages, old_values, returns, coefficients, levels,
                            value_clip)
    if in_forward:
        head_gradients, partial = _forward(backward, operands)
        backward.whole_trunk(head_gradients, 0, 8, False, picks=picks)
        backward.whole_trunk(head_gradients, 4, 10, False, picks=picks)
    else:
        partial = observations.new_empty((observations.shape[0], backward.programs, STATISTIC_SLOTS),
                                         dtype=torch.float32)
        backward.whole_trunk(None, 0, 8, False, operands, partial, actor)
        backward.whole_trunk(None, 4, 10, False, operands, partial, critic)
    largest = partial[:, :, 0].amax(1, keepdim=True)
    return torch.cat([largest, partial[:, :, 1:STATISTICS].sum(1)], 1), backward.sums(False)


def _forward(backward: fused_backward.BackwardLaunch,
             operands: LossOperands) -> tuple[list[torch.Tensor], torch.Tensor]:
    """``ppo_loss_kernel.ppo_loss_forward`` on ``backward``'s observations and networks: the policy head's outputs'
    gradient bfloat16[R, B, E] and the value's float32[R, B], as the gradients' kernels read them, and the
    statistics' parts float32[R, programs, STATISTIC_SLOTS]."""
    from warpsim.train.ppo_loss_kernel import ppo_loss_forward

    runs, rows = operands.picks.shape
    weights, inputs = backward.weights, backward.inputs
    outputs = weights[8].shape[1]
    blocks = -(-rows // fused_forward.BLOCK_ROWS)
    policy_gradient = backward.observations.new_empty((runs, rows, fused_forward.policy_row_entries(outputs)),
                                                      dtype=torch.bfloat16)
    value_gradient = backward.observations.new_empty((runs, rows), dtype=torch.float32)
    partial = backward.observations.new_empty((runs, blocks, STATISTIC_SLOTS), dtype=torch.float32)
    block_components, block_levels = fused_backward.loss_columns(operands.actions.shape[-1], operands.levels)
    ppo_loss_forward[(blocks, runs)](
        backward.observations.view(torch.int16), backward.observation_rows * inputs, *backward.bits,
        *operands[1:7], operands.picks, operands.picks.stride(0), policy_gradient.view(torch.int16), value_gradient,
        partial, backward.observation_rows, rows, inputs, HIDDEN=backward.hidden, LAYERS=backward.layers,
        OUTPUTS=outputs, GRADIENT_ENTRIES=policy_gradient.shape[-1], BLOCK_ROWS=fused_forward.BLOCK_ROWS,
        BLOCK_INPUTS=min(fused_forward.BLOCK_INPUTS, fused_forward.power_of_two(inputs)),
        BLOCK_HIDDEN=fused_forward.power_of_two(backward.hidden), DOT=backward.dot,
        COMPONENTS=operands.actions.shape[-1], LEVELS=operands.levels, BLOCK_COMPONENTS=block_components,
        BLOCK_LEVELS=block_levels, VALUE_CLIP=operands.value_clip, num_warps=4, num_stages=fused_forward.STAGES,
        **triton_launch.OPTIONS)
    return [policy_gradient, value_gradient], partial


@ppo_loss_gradients.register_kernel("cuda")
def _(*args):
    return launch(*args)


def takes(levels: list[int], shared_trunk: bool, hidden: int, layers: int) -> bool:
    """Whether ``ppo_loss_gradients`` takes a role's networks and actions: categorical components of equal
    sizes, a trunk each, whole trunks a launch (``fused_backward.whole_trunks_fit``)."""
    return (len(set(levels)) == 1 and not shared_trunk and fused_backward.whole_trunks_fit(hidden, layers))


class DifferentiablePPOLoss(torch.autograd.Function):
    """Each run's loss float32[R], its ``loss.STATS`` float32[R, 6] and the gradients float32[R, G] that the op
    computed with it, from ``ppo_loss_gradients``' arguments: an autograd Function, which ``torch.func.grad`` (the
    fused update's) differentiates, whose backward pass gives those gradients times the loss's own."""

    @staticmethod
    def forward(observations, picks, actions, old_log_probs, advantages, old_values, returns, coefficients, levels,
                value_clip, *weights):
        statistics, gradients = ppo_loss_gradients(observations, picks, actions, old_log_probs, advantages,
                                                   old_values, returns, coefficients, levels, value_clip, *weights)
        loss = statistics[:, 3] + coefficients[:, 2] * statistics[:, 4] - coefficients[:, 3] * statistics[:, 5]
        return loss, statistics, gradients

    @staticmethod
    def setup_context(ctx, inputs: tuple, output) -> None:
        ctx.save_for_backward(output[2], *inputs[10:])
        ctx.mark_non_differentiable(output[1], output[2])

    @staticmethod
    def backward(ctx, loss_gradient: torch.Tensor, *_) -> tuple:
        gradients, *weights = ctx.saved_tensors
        with torch.no_grad():  # once differentiable: torch.func.grad records the backward pass otherwise
            scaled = gradients * loss_gradient[:, None]
        return (None,) * 10 + tuple(fused_backward.split_gradients(scaled, weights))

