"""float32 rounded to bfloat16, as the 16 bits to store: the same arithmetic for the NumPy
reference and the kernels, so that both store the same bits.

A bfloat16 is the high half of a float32. Rounding to nearest, ties to even, adds 0x7FFF
and the lowest bit kept to the float32's bits and keeps their high half, as torch's
``.to(torch.bfloat16)`` does: values past bfloat16's largest round to inf, subnormals
stay subnormal, the sign of zero is kept. A NaN becomes the quiet NaN 0x7FC0, as in torch's
scalar conversion (its vectorised ones give other NaNs): the payload may lie only in the
dropped half, which would leave an inf.

Numba has no bfloat16 arrays: a bfloat16 tensor reaches the kernels and the reference as
int16 (``warpsim.device.kernel_view``), and they store these bits into it.
:func:`store_observation` picks the store from the array's dtype: on a GPU when the kernel
compiles (a float32 kernel is what it was without it), on the simulator as it runs.
"""

import numba
import numpy as np
from numba import cuda, types
from numba.core.extending import overload
from numba.cuda import libdevice

QUIET_NAN = 0x7FC0
"""The bits every NaN rounds to."""
ROUNDING_BIAS = np.uint32(0x7FFF)
"""Added with the lowest kept bit: a tie rounds to the even neighbour."""
HALF = np.uint32(16)
ONE = np.uint32(1)


def bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """int16[...]: the bits of float32 ``values`` (any shape) rounded to bfloat16."""
    values = np.asarray(values, np.float32)
    bits = values.view(np.uint32)
    rounded = (bits >> HALF) & ONE  # in place from here: one temporary the size of the values
    rounded += ROUNDING_BIAS
    rounded += bits  # wraps only for NaNs, replaced below
    rounded >>= HALF
    return np.where(np.isnan(values), np.uint32(QUIET_NAN), rounded).astype(np.uint16).view(np.int16)


@cuda.jit(device=True)
def bfloat16_bits_device(value):
    """value float32; returns int16: its bits rounded to bfloat16, as :func:`bfloat16_bits`."""
    if value != value:
        return np.int16(QUIET_NAN)
    bits = float_bits(value)  # defined below, for the simulator or for a GPU
    return np.int16((bits + ROUNDING_BIAS + ((bits >> HALF) & ONE)) >> HALF)


def _store_float32(observations, e, i, index, value):
    """observations float32[E, N, D]; value float32, stored as it is."""
    observations[e, i, index] = value


def _store_bfloat16(observations, e, i, index, value):
    """observations int16[E, N, D]; value float32, stored as its bfloat16 bits."""
    observations[e, i, index] = bfloat16_bits_device(value)


if numba.config.ENABLE_CUDASIM:

    @cuda.jit(device=True)
    def float_bits(value):
        """value float32; returns its bits, uint32."""
        return np.float32(value).view(np.uint32)

    @cuda.jit(device=True)
    def store_observation(observations, e, i, index, value):
        """observations float32 or int16[E, N, D] (bfloat16 bits); e, i, index int; value float32: entry
        ``index`` of agent i's observation in environment e, rounded to bfloat16 in an int16 array."""
        store = _store_bfloat16 if observations.dtype == np.int16 else _store_float32
        store(observations, e, i, index, value)

else:

    @cuda.jit(device=True)
    def float_bits(value):
        """value float32; returns its bits, uint32."""
        return np.uint32(libdevice.float_as_int(value))

    def store_observation(observations, e, i, index, value):
        """observations float32 or int16[E, N, D] (bfloat16 bits); e, i, index int; value float32: entry
        ``index`` of agent i's observation in environment e, rounded to bfloat16 in an int16 array
        (typed by the overload below, which picks the store when the kernel compiles)."""

    @overload(store_observation, target="cuda")
    def _store_for_dtype(observations, e, i, index, value):
        return _store_bfloat16 if observations.dtype == types.int16 else _store_float32
