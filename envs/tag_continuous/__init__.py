"""tag_continuous (TAG_SPEC section 1): NumPy reference, Numba CUDA kernels and glue."""

from warpsim.envs.tag_continuous.env import TagContinuous
from warpsim.envs.tag_continuous.params import TagContinuousParams

ENVIRONMENT = TagContinuous
"""The class warpsim registers for this folder, under its ``name``."""

__all__ = ["ENVIRONMENT", "TagContinuous", "TagContinuousParams"]
