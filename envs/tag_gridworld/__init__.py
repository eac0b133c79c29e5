"""tag_gridworld (TAG_SPEC section 2): NumPy reference, Numba CUDA kernels and glue."""

from warpsim.envs.tag_gridworld.env import TagGridworld
from warpsim.envs.tag_gridworld.params import TagGridworldParams

ENVIRONMENT = TagGridworld
"""The class warpsim registers for this folder, under its ``name``."""

__all__ = ["ENVIRONMENT", "TagGridworld", "TagGridworldParams"]
