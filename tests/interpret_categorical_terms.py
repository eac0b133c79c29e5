"""Runs the categorical terms' Triton kernels through Triton's interpreter on the CPU against their torch
formulas (the ops' CPU implementations), for each case given as JSON on the command line; prints each case's
largest differences as JSON. Run with ``TRITON_INTERPRET=1`` set, as tests/test_categorical_terms.py does:
Triton reads it when imported.

    TRITON_INTERPRET=1 python tests/interpret_categorical_terms.py '[{"rows": 70, "levels": [21, 21], ...}]'
"""

import json
import sys

import torch

from warpsim.train import categorical_terms


def operands(case: dict, device: str = "cpu") -> tuple:
    """Logits [2, rows, sum(levels)] of the case's dtype and scale (with ``row_entries``, a slice of rows that
    wide), actions, and the outputs' gradients, on ``device``."""
    generator = torch.Generator().manual_seed(case["seed"])
    rows, levels = case["rows"], case["levels"]
    entries = case.get("row_entries", sum(levels))
    logits = (torch.randn((2, rows, entries), generator=generator) * case["scale"]).to(getattr(torch, case["dtype"]))
    actions = torch.stack([torch.randint(0, level, (2, rows), generator=generator) for level in levels], -1)
    gradients = torch.randn((2, 2, rows), generator=generator).to(device)
    return logits.to(device)[..., :sum(levels)], actions.to(device, torch.int32), gradients[0], gradients[1]


def main() -> None:
    differences = []
    for case in json.loads(sys.argv[1]):
        logits, actions, log_prob_gradient, entropy_gradient = operands(case)
        levels = case["levels"]
        kernel = categorical_terms.launch(logits, actions, levels)
        reference = categorical_terms.categorical_terms(logits, actions, levels)
        kernel_gradient = categorical_terms.launch_backward(log_prob_gradient, entropy_gradient, logits, actions,
                                                            levels)
        gradient = categorical_terms.categorical_terms_backward(log_prob_gradient, entropy_gradient, logits, actions,
                                                                levels)
        differences.append({name: float((mine.float() - theirs.float()).abs().max()) for name, mine, theirs in
                            zip(("log_prob", "entropy", "gradient"), (*kernel, kernel_gradient),
                                (*reference, gradient))}
                           | {"gradient_dtype": str(kernel_gradient.dtype),
                              "gradient_row_entries": kernel_gradient.shape[-1],
                              "padding": float(kernel_gradient[..., sum(levels):].float().abs().sum()),
                              "read_in_place": categorical_terms.rows_of(logits).data_ptr() == logits.data_ptr(),
                              "largest_gradient": float(gradient.float().abs().max())})
    print(json.dumps(differences))


if __name__ == "__main__":
    main()
