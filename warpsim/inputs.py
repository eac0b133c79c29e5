"""Values a caller hands an environment (actions, reset masks) as torch tensors, with a clear
error for anything that cannot be one."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from warpsim.errors import InvalidTypeError, InvalidValueError


def as_input_tensor(value: Any, what: str) -> torch.Tensor:
    """A tensor from a tensor, NumPy array or nested list given as ``what``; a clear error for
    anything that cannot be one (strings, objects, ragged lists, meta tensors)."""
    if isinstance(value, torch.Tensor):
        if value.is_meta:
            raise InvalidValueError(f"{what} is a meta tensor of shape {tuple(value.shape)}, which holds no "
                                    f"values; give a tensor on the CPU or a GPU")
        return value
    if isinstance(value, (str, bytes)):
        raise InvalidTypeError(f"{what} is a {type(value).__name__} ({value[:40]!r}); give a tensor or NumPy array")
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as error:
        raise InvalidValueError(f"{what} cannot be made an array ({type(value).__name__}): "
                                f"{str(error).splitlines()[0]}") from None
    if array.dtype.kind not in "biuf":
        raise InvalidTypeError(f"{what} have NumPy dtype {array.dtype} ({type(value).__name__}); give numbers "
                               f"(integers for actions, bools for a mask)")
    if array.dtype.kind == "u" and array.dtype.itemsize > 1:  # torch compares no wide unsigned ints
        # The bound in the array's own dtype: a Python int above uint32's range overflows NumPy's cast.
        bound = array.dtype.type(min(np.iinfo(array.dtype).max, np.iinfo(np.int64).max))
        array = np.asarray(np.minimum(array, bound), dtype=np.int64)  # a 0-d array stays an array
    if any(stride < 0 for stride in array.strides):  # a reversed view, which torch cannot wrap
        array = array.copy()
    return torch.from_numpy(array)
