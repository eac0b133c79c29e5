"""Runs the Triton kernels of the actor-critic's gradients through Triton's interpreter on the CPU,
against autograd of the eager computation (``fused_backward.actor_critic_backward``'s CPU form), for
each case given as JSON on the command line (``interpret_actor_critic.CASES``' fields, plus
``programs``: partial sums per run; ``whole_trunks``: ``launch_backward``'s, default None;
``contiguous_gradient``: the policy's gradient contiguous, not in the forward kernel's rows).
Prints as JSON, for each case and gradient, the largest difference relative to the gradient's
largest entry, and that entry. Run with ``TRITON_INTERPRET=1`` set.

    TRITON_INTERPRET=1 python tests/interpret_actor_critic_backward.py '[{"runs": 2, ...}]'
"""

import functools
import json
import sys

import torch
from interpret_actor_critic import weights

from warpsim.train import categorical_terms, fused_backward, fused_forward

NAMES = ("actor_weight", "actor_bias", "actor_hidden_weights", "actor_hidden_biases", "critic_weight", "critic_bias",
         "critic_hidden_weights", "critic_hidden_biases", "policy_weight", "policy_bias", "value_weight", "value_bias")


def output_gradients(arguments: tuple, seed: int, padded: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Random gradients of the policy (in its dtype) and of the values, as a loss would give them: with ``padded``,
    a multi-column policy's in the forward kernel's padded rows, as the loss of discrete actions writes it
    (``categorical_terms.gradient_width``), its padding NaN, which the kernels must not read; contiguous otherwise."""
    generator = torch.Generator().manual_seed(seed)
    wide, values = fused_forward.actor_critic(*arguments)
    outputs = arguments[9].shape[1]
    policy_gradient = torch.randn((*wide.shape[:-1], outputs), generator=generator).to(wide.dtype)
    if padded and categorical_terms.padded_rows(wide[..., :outputs]):
        policy_gradient = torch.full_like(wide, float("nan"))[..., :outputs].copy_(policy_gradient)
    return policy_gradient, torch.randn(values.shape, generator=generator)


def largest(tensor: torch.Tensor) -> float:
    """The largest magnitude of ``tensor``'s entries (0 for none)."""
    return float(tensor.float().abs().max()) if tensor.numel() else 0.0


def relative_difference(mine: torch.Tensor, theirs: torch.Tensor) -> float:
    """The largest difference over the largest magnitude of ``theirs`` (the difference itself where that is 0)."""
    return largest(mine.float() - theirs.float()) / (largest(theirs) or 1.0)


def main() -> None:
    differences = []
    for case in json.loads(sys.argv[1]):
        arguments = weights(case)
        gradients = output_gradients(arguments, case["seed"], not case.get("contiguous_gradient", False))
        operands = list(arguments[1:-1])
        eager = fused_backward.split_gradients(fused_backward.actor_critic_backward(*gradients, *arguments), operands)
        kernel = fused_backward.split_gradients(functools.partial(
            fused_backward.launch_backward, programs=case["programs"], whole_trunks=case.get("whole_trunks"))(
            *gradients, *arguments), operands)
        differences.append({name: {"difference": relative_difference(mine, theirs), "largest": largest(theirs)}
                            for name, mine, theirs in zip(NAMES, kernel, eager)}
                           | {"dtypes_match": all(mine.dtype == theirs.dtype and mine.shape == theirs.shape
                                                  for mine, theirs in zip(kernel, eager))})
    print(json.dumps(differences))


if __name__ == "__main__":
    main()
