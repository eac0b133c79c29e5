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

from warpsim.train import categorical_terms, fused_forward, fused_sampling


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
    each run's, as ``RunPolicies.noise`` draws them; with ``apart``, each run's in a buffer of its own."""
    generator = torch.Generator().manual_seed(case["seed"] + 1)
    rows, levels, runs = case["rows"], case["levels"], case["runs"]
    size = rows * sum(levels)
    drawn = [torch.rand(size, generator=generator) for _ in range(runs)] if case.get("apart") else \
        torch.rand((runs, size + case.get("gap", 0)), generator=generator)[:, :size]
    return [part.view(rows, level) for run in drawn for part, level in
            zip(run.split([rows * level for level in levels]), levels)]


def main() -> None:
    differences = []
    for case in json.loads(sys.argv[1]):
        arguments = weights(case)
        eager = fused_forward.actor_critic(*arguments)
        kernel = fused_forward.launch(*arguments)
        found: dict[str, Any] = {name: float((mine.float() - theirs.float()).abs().max()) for name, mine, theirs in
                                 zip(("policy", "value"), kernel, eager)}
        found |= {"dtypes": [str(t.dtype) for t in kernel], "eager_dtypes": [str(t.dtype) for t in eager]}
        if "levels" in case:  # sampled in the kernel, against the same sampling of the kernel's own outputs
            uniforms = draws(case)
            actions, log_prob, values = fused_sampling.launch_sample(*arguments, uniforms=uniforms,
                                                                    levels=case["levels"])
            components = len(case["levels"])
            expected = [categorical_terms.sample(kernel[0][run], uniforms[run * components:(run + 1) * components],
                                                 case["levels"]) for run in range(case["runs"])]
            expected_actions, expected_log_prob = (torch.stack(part) for part in zip(*expected))
            found |= {"same_actions": torch.equal(actions, expected_actions), "actions_dtype": str(actions.dtype),
                      "sampled_log_prob": float((log_prob - expected_log_prob).abs().max()),
                      "same_values": torch.equal(values, kernel[1])}
        differences.append(found)
    print(json.dumps(differences))


if __name__ == "__main__":
    main()
