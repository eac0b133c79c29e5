"""simple_adversary: MPE2's deception task on the kernels (docs/mpe.md)."""

from warpsim.envs.simple_adversary.env import SimpleAdversary
from warpsim.envs.simple_adversary.params import SimpleAdversaryParams

ENVIRONMENT = SimpleAdversary
"""The class warpsim registers for this folder, under its ``name``."""

CHECK_PARAMS = dict(N=3, max_cycles=4)
"""Parameters small enough for the CUDA simulator, with episodes short enough that a few
dozen steps cover resets: the test suite runs ``warpsim.check`` with them."""

__all__ = ["CHECK_PARAMS", "ENVIRONMENT", "SimpleAdversary", "SimpleAdversaryParams"]
