"""Runs the actor-critic Triton kernel through Triton's interpreter on the CPU, against the
eager computation (``fused_forward.actor_critic``'s CPU implementation), for each case given
as JSON on the command line; prints each case's largest differences as JSON. Run with
``TRITON_INTERPRET=1`` set, as tests/test_fused_forward.py does: Triton reads it when imported.

    TRITON_INTERPRET=1 python tests/interpret_actor_critic.py '[{"runs": 2, ...}]'
"""

import json
import sys

import torch

from warpsim.train import fused_forward


def weights(case: dict) -> tuple:
    """Random observations and networks of the case's shapes; the run dimension of the observations
    strided as a rollout's step is."""
    generator = torch.Generator().manual_seed(case["seed"])
    runs, rows, inputs, hidden, layers, outputs = (case[name] for name in
                                                   ("runs", "rows", "inputs", "hidden", "layers", "outputs"))

    def drawn(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=generator) * case["scale"] / shape[-1] ** 0.5

    steps = torch.randn((runs, 3, rows, inputs), generator=generator) * case["scale"]
    operands = fused_forward.autocast_operands
    trunks = [(*operands(drawn(runs, hidden, inputs), drawn(runs, hidden)),
               *operands(drawn(runs, layers - 1, hidden, hidden), drawn(runs, layers - 1, hidden))) for _ in range(2)]
    return (steps[:, 1].to(torch.bfloat16), *trunks[0], *trunks[1], *operands(drawn(runs, outputs, hidden),
            drawn(runs, outputs)), *operands(drawn(runs, 1, hidden), drawn(runs, 1)), case["shared"])


def main() -> None:
    differences = []
    for case in json.loads(sys.argv[1]):
        arguments = weights(case)
        eager = fused_forward.actor_critic(*arguments)
        kernel = fused_forward.launch(*arguments)
        differences.append({name: float((mine.float() - theirs.float()).abs().max()) for name, mine, theirs in
                            zip(("policy", "value"), kernel, eager)}
                           | {"dtypes": [str(t.dtype) for t in kernel], "eager_dtypes": [str(t.dtype) for t in eager]})
    print(json.dumps(differences))


if __name__ == "__main__":
    main()
