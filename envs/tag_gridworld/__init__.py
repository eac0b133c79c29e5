"""tag_gridworld (docs/tag_rules.md section 2): NumPy reference, Numba CUDA kernels and glue."""

from warpsim.envs.tag_gridworld.env import TagGridworld
from warpsim.envs.tag_gridworld.params import TagGridworldParams

ENVIRONMENT = TagGridworld
"""The class warpsim registers for this folder, under its ``name``."""

CHECK_PARAMS = dict(num_taggers=3, grid_length=3, episode_length=6, closing_reward_for_tagger=0.3)
"""Parameters small enough for the CUDA simulator, with episodes short enough that a few
dozen steps cover resets and the optional closing reward on: the test suite runs
``warpsim.check`` with them."""

__all__ = ["CHECK_PARAMS", "ENVIRONMENT", "TagGridworld", "TagGridworldParams"]
