"""Runs the discounted scan's Triton kernel through Triton's interpreter on the CPU against the loop
(``discounted_scan``'s CPU implementation), for each shape given as JSON on the command line; prints,
for each, whether the two agree bit for bit. Run with ``TRITON_INTERPRET=1`` set, as
tests/test_discounted_scan.py does: Triton reads it when imported.

    TRITON_INTERPRET=1 python tests/interpret_discounted_scan.py '[[5, 3, 7], ...]'
"""

import json
import sys

import torch

from warpsim.train import discounted_scan


def operands(shape: list[int], seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """delta of the shape; decay in [0, 1), a third of it 0 (episodes ending)."""
    generator = torch.Generator().manual_seed(seed)
    decay = torch.rand(shape, generator=generator) * (torch.rand(shape, generator=generator) > 0.3)
    return torch.randn(shape, generator=generator) * 10, decay


def main() -> None:
    agree = []
    for seed, shape in enumerate(json.loads(sys.argv[1])):
        delta, decay = operands(shape, seed)
        agree.append(torch.equal(discounted_scan.launch(delta, decay), discounted_scan.discounted_scan(delta, decay)))
    print(json.dumps(agree))


if __name__ == "__main__":
    main()
