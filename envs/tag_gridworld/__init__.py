"""tag_gridworld (TAG_SPEC section 2): NumPy reference, Numba CUDA kernels and glue."""

from warpsim.envs.tag_gridworld.env import TagGridworld
from warpsim.envs.tag_gridworld.params import TagGridworldParams

__all__ = ["TagGridworld", "TagGridworldParams"]
