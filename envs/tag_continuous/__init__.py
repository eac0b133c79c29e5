"""tag_continuous (docs/tag_rules.md section 1): NumPy reference, Numba CUDA kernels and glue."""

from warpsim.envs.tag_continuous.env import TagContinuous
from warpsim.envs.tag_continuous.params import TagContinuousParams

ENVIRONMENT = TagContinuous
"""The class warpsim registers for this folder, under its ``name``."""

CHECK_PARAMS = dict(num_taggers=2, num_runners=3, episode_length=5, tagging_distance=0.2)
"""Parameters small enough for the CUDA simulator, with episodes short enough that a few
dozen steps cover resets: the test suite runs ``warpsim.check`` with them."""

__all__ = ["CHECK_PARAMS", "ENVIRONMENT", "TagContinuous", "TagContinuousParams"]
