"""Float32 arithmetic that rounds after every operation, as NumPy does.

On a GPU the compiler contracts ``a * b + c`` into one fused multiply-add, rounded
once, where NumPy rounds the product and then the sum. One ulp is enough to swap two
near-equal neighbour distances or to flip a tag, so a kernel that must agree with its
NumPy reference writes every product that feeds a sum or a difference with ``mul``:
``mul`` is libdevice's ``fmul_rn`` (PTX ``mul.rn.f32``), which the compiler never
fuses. ``add`` and ``sub`` are ``fadd_rn`` and ``fsub_rn`` for the same reason.

Numba's CUDA simulator does not implement libdevice (``fmul_rn`` returns nan there),
and it never contracts: under the simulator these are plain float32 operations
(arguments cast to float32, as libdevice's float32 functions cast theirs).
The choice is made once, at import, from ``numba.config.ENABLE_CUDASIM``.
"""

import numba
import numpy as np
from numba import cuda
from numba.cuda import libdevice

if numba.config.ENABLE_CUDASIM:

    @cuda.jit(device=True)
    def mul(a, b):
        """a * b in float32, rounded to nearest (never fused into an addition)."""
        return np.float32(a) * np.float32(b)

    @cuda.jit(device=True)
    def add(a, b):
        """a + b in float32, rounded to nearest (never fused with a product)."""
        return np.float32(a) + np.float32(b)

    @cuda.jit(device=True)
    def sub(a, b):
        """a - b in float32, rounded to nearest (never fused with a product)."""
        return np.float32(a) - np.float32(b)

else:

    @cuda.jit(device=True)
    def mul(a, b):
        """a * b in float32, rounded to nearest (never fused into an addition)."""
        return libdevice.fmul_rn(a, b)

    @cuda.jit(device=True)
    def add(a, b):
        """a + b in float32, rounded to nearest (never fused with a product)."""
        return libdevice.fadd_rn(a, b)

    @cuda.jit(device=True)
    def sub(a, b):
        """a - b in float32, rounded to nearest (never fused with a product)."""
        return libdevice.fsub_rn(a, b)


@cuda.jit(device=True)
def squared_distance(dx, dy):
    """dx * dx + dy * dy with three roundings, as NumPy computes it on float32 arrays."""
    return add(mul(dx, dx), mul(dy, dy))
