"""Runs the actor-critic Triton kernel through Triton's interpreter on the CPU, against the
eager computation (``fused_forward.actor_critic``'s CPU implementation), and with ``levels`` sampling a
categorical policy (``launch_sample``) against the sampling of its own outputs, for each case given as JSON
on the command line; prints each case's largest differences as JSON. Run with
``TRITON_INTERPRET=1`` set, as tests/test_fused_forward.py does: Triton reads it when imported.

    TRITON_INTERPRET=1 python tests/interpret_actor_critic.py '[{"runs": 2, ...}]'
"""

import json
import sys
from typing import Any

import torch

from warpsim.train import categorical_terms, fused_forward, fused_sampling, ppo


def weights(case: dict) -> tuple:
    """Random observations and networks of the case's shapes; the run dimension of the observations
    strided as a rollout's step is."""
    generator = torch.Generator().manual_seed(case["seed"])
    runs, rows, inputs, hidden, layers, outputs = (case[name] for name in
                                                   ("runs", "rows", "inputs", "hidden", "layers", "outputs"))

    def drawn(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=generator) * case["scale"] / shape[-1] ** 0.5

    steps = torch.randn((runs, 3, rows, inputs), generator=generator) * case["scale"]
    trunks = [[(drawn(runs, hidden, inputs), drawn(runs, hidden)),
               (drawn(runs, layers - 1, hidden, hidden), drawn(runs, layers - 1, hidden))] for _ in range(2)]
    heads = [(drawn(runs, outputs, hidden), drawn(runs, outputs)), (drawn(runs, 1, hidden), drawn(runs, 1))]
    return (steps[:, 1].to(torch.bfloat16), *fused_forward.autocast_operands([*trunks[0], *trunks[1], *heads]),
            case["shared"])


def draws(case: dict) -> list[torch.Tensor]:
    """The uniforms a rollout step draws for a categorical policy of the case's ``levels``, run by run and
    component by component (``ppo.uniforms``): every run's in one buffer, ``gap`` entries (another role's) after
    each run's, as ``RunPolicies.noise`` draws them; with ``apart``, each run's in a buffer of its own. The last
    rows draw the largest uniform ``torch.rand`` draws, past the sum of the probabilities where it rounds short."""
    generator = torch.Generator().manual_seed(case["seed"] + 1)
    rows, components, runs = case["rows"], len(case["levels"]), case["runs"]
    size = rows * components
    drawn = [torch.rand(size, generator=generator) for _ in range(runs)] if case.get("apart") else \
        torch.rand((runs, size + case.get("gap", 0)), generator=generator)[:, :size]
    parts = [part for run in drawn for part in run.split(rows)]
    for part in parts:
        part[-rows // 4:] = 1 - 2 ** -24
    return parts


BOUNDARY = 1e-5
"""How near a cumulative probability a draw may lie for sums in another order to tip its action."""


def decided(policy: torch.Tensor, uniforms: list[torch.Tensor], levels: list[int]) -> torch.Tensor:
    """bool[B]: the rows of one run's policy outputs [B, sum(levels)] whose every draw lies farther than
    ``BOUNDARY`` from each cumulative probability of its component that ``ppo.sample`` compares it with (all but
    the last), so that any order of the sums draws the same action."""
    cumulative = [head.exp().cumsum(1)[:, :-1] for head in ppo.split_heads(policy.float(), tuple(levels))]
    return torch.stack([((sums - draw[:, None]).abs() > BOUNDARY).all(1)
                        for sums, draw in zip(cumulative, uniforms)]).all(0)


def main() -> None:
    differences = []
    for case in json.loads(sys.argv[1]):
        arguments = weights(case)
        eager = fused_forward.actor_critic(*arguments)
        kernel = fused_forward.launch(*arguments)
        found: dict[str, Any] = {name: float((mine.float() - theirs.float()).abs().max()) for name, mine, theirs in
                                 zip(("policy", "value"), kernel, eager)}
        outputs = arguments[9].shape[1]
        found |= {"dtypes": [str(t.dtype) for t in kernel], "eager_dtypes": [str(t.dtype) for t in eager],
                  "policy_shapes": [list(policy.shape) for policy in (kernel[0], eager[0])],
                  "policy_padding": float(kernel[0][..., outputs:].float().abs().sum())}
        kernel = kernel[0][..., :outputs], kernel[1]
        if "levels" in case:  # sampled in the kernel, against the same sampling of the kernel's own outputs
            uniforms = draws(case)
            actions, log_prob, values = fused_sampling.launch_sample(*arguments, uniforms=uniforms,
                                                                    levels=case["levels"])
            components = len(case["levels"])
            expected = [categorical_terms.sample(kernel[0][run], uniforms[run * components:(run + 1) * components],
                                                 case["levels"]) for run in range(case["runs"])]
            expected_actions, expected_log_prob = (torch.stack(part) for part in zip(*expected))
            clear = torch.stack([decided(kernel[0][run], uniforms[run * components:(run + 1) * components],
                                         case["levels"]) for run in range(case["runs"])])
            found |= {"same_actions": torch.equal(actions[clear], expected_actions[clear]),
                      "undecided_rows": int((~clear).sum()), "actions_dtype": str(actions.dtype),
                      "sampled_log_prob": float((log_prob - expected_log_prob)[clear].abs().max()),
                      "same_values": torch.equal(values, kernel[1])}
        differences.append(found)
    print(json.dumps(differences))


if __name__ == "__main__":
    main()
