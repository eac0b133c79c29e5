"""tag_continuous (TAG_SPEC section 1): NumPy reference, Numba CUDA kernels and glue."""

from warpsim.envs.tag_continuous.env import TagContinuous
from warpsim.envs.tag_continuous.params import TagContinuousParams

__all__ = ["TagContinuous", "TagContinuousParams"]
