"""Runs the kernels computing PPO's loss (``fused_loss.launch``) through Triton's interpreter on the CPU,
against ``fused_loss.ppo_loss_gradients``' CPU form, for each case given as JSON on the command line
(``interpret_actor_critic.CASES``' fields with ``levels``, a list of equal sizes, as ``outputs``; ``programs``:
partial sums per run; ``value_clip``; ``in_forward``: the launch's). Prints as JSON, for each case, each gradient's
largest difference relative to its largest entry and that entry, and each statistic of each run both ways. Run with
``TRITON_INTERPRET=1`` set.

    TRITON_INTERPRET=1 python tests/interpret_ppo_loss.py '[{"runs": 2, ...}]'
"""

import json
import sys

import torch
from interpret_actor_critic import weights
from interpret_actor_critic_backward import NAMES, largest, relative_difference

from warpsim.train import fused_backward, fused_forward, fused_loss, ppo
from warpsim.train.loss import STATS


def minibatch(case: dict, arguments: tuple) -> tuple:
    """The case's observations (``arguments``' first) as the rows of a rollout half as long again that the minibatch
    picks, in an order of their own, and the minibatch and coefficients, all as ``ppo_loss_gradients`` takes them:
    actions
    drawn at random; log-probabilities when sampled near the networks' own (a quarter of the rows exactly theirs:
    ratios of 1, where the clipped and the unclipped objectives tie); values near the networks' own; each run with
    coefficients of its own (``MinibatchLoss.coefficients``)."""
    generator = torch.Generator().manual_seed(case["seed"] + 7)
    levels, runs, rows = case["levels"], case["runs"], case["rows"]
    observations = arguments[0]
    rollout = torch.randn((runs, rows + rows // 2, observations.shape[-1]), generator=generator).to(torch.bfloat16)
    # a minibatch of each run's epoch order, as the update cuts it: its runs' rows a whole order apart
    picks = torch.stack([torch.randperm(rollout.shape[1], generator=generator) for _ in range(runs)])[:, :rows]
    rollout[torch.arange(runs)[:, None], picks] = observations
    actions = torch.randint(0, levels[0], (runs, rows, len(levels)), generator=generator, dtype=torch.int32)
    policy, values = fused_forward.actor_critic(*arguments)
    taken = ppo.log_prob(ppo.split_heads(policy[..., :sum(levels)].float(), tuple(levels)), actions)
    old_log_probs = taken + 0.3 * torch.randn((runs, rows), generator=generator)
    old_log_probs[:, :rows // 4] = taken[:, :rows // 4]
    advantages = torch.randn((runs, rows), generator=generator)
    old_values = values + 0.3 * torch.randn((runs, rows), generator=generator)
    returns = values + torch.randn((runs, rows), generator=generator)
    coefficients = torch.tensor([[0.2, 0.2, 0.5, 0.01], [0.1, 0.3, 1.0, 0.05], [0.3, 0.1, 0.25, 0.0]])[:runs]
    coefficients[:, 1] *= case["value_clip"]  # 0 unclipped, as the loss gives it
    return (rollout, picks, actions, old_log_probs, advantages, old_values, returns, coefficients, levels[0],
            case["value_clip"])


def main() -> None:
    found = []
    for case in json.loads(sys.argv[1]):
        arguments = weights(case)
        operands = (*minibatch(case, arguments), *arguments[1:-1])
        statistics, gradients = fused_loss.ppo_loss_gradients(*operands)
        kernel_statistics, kernel_gradients = fused_loss.launch(*operands, programs=case["programs"],
                                                                in_forward=case["in_forward"])
        weights_of = list(arguments[1:-1])
        pairs = zip(NAMES, fused_backward.split_gradients(kernel_gradients, weights_of),
                    fused_backward.split_gradients(gradients, weights_of))
        found.append({"gradients": {name: {"difference": relative_difference(mine, theirs), "largest": largest(theirs)}
                                    for name, mine, theirs in pairs},
                      "statistics": {name: [mine.tolist(), theirs.tolist()] for name, mine, theirs in
                                     zip(STATS, kernel_statistics.T, statistics.T, strict=True)}})
    print(json.dumps(found))


if __name__ == "__main__":
    main()
