"""simple_tag: MPE2's predator-prey task on the kernels (docs/mpe.md)."""

from warpsim.envs.simple_tag.env import SimpleTag
from warpsim.envs.simple_tag.params import SimpleTagParams

ENVIRONMENT = SimpleTag
"""The class warpsim registers for this folder, under its ``name``."""

CHECK_PARAMS = dict(num_good=2, num_adversaries=2, num_obstacles=2, max_cycles=4)
"""Parameters small enough for the CUDA simulator, with episodes short enough that a few
dozen steps cover resets: the test suite runs ``warpsim.check`` with them."""

__all__ = ["CHECK_PARAMS", "ENVIRONMENT", "SimpleTag", "SimpleTagParams"]
