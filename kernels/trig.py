"""Float32 sine and cosine, bit-identical on the GPU, under the simulator and in NumPy.

libdevice's ``sinf``/``cosf`` and NumPy's ``sin``/``cos`` are both accurate to about an
ulp, but not the same ulp, and one ulp can flip a tag. So the kernels and their NumPy
references share one formula, written once below, in which every operation is a
float32 product, sum or difference rounded to nearest (``warpsim.kernels.rounding``
on the device, NumPy's own operations on arrays): IEEE 754 fixes each result, so both
sides compute the same bits by construction.

The formula: k = nearest integer to x * 2/pi; r = x - k * pi/2 in three parts
(Cody-Waite: the first two have 11 significant bits, so k * part is exact for
|k| < 2**13); sin r and cos r by polynomials in r**2 fitted for minimax relative error
on [-pi/4, pi/4]; the quadrant k mod 4 picks and signs the result. Accuracy for
|x| <= 8192 (tested): within 1e-7 of the true value (less than one float32 ulp of 1),
and within 1.6 ulps wherever |result| >= 2**-8; NumPy's own float32 sin and cos are
within 1.5 ulps. Near a zero of sin or cos the relative error grows (the reduction
carries pi/2 to 46 bits), the absolute one does not.
"""

import numpy as np
from numba import cuda

from warpsim.kernels.rounding import add, mul, sub

ONE = np.float32(1)
HALF = np.float32(0.5)
TWO_OVER_PI = np.float32(0.63661975)
ROUNDER = np.float32(1.5 * 2**23)
"""y + ROUNDER - ROUNDER is y rounded to the nearest integer (|y| < 2**22)."""
PI_OVER_2_HIGH = np.float32(1.5703125)
PI_OVER_2_MIDDLE = np.float32(4.837512969970703e-04)
PI_OVER_2_LOW = np.float32(7.54979e-08)
SIN_COEFFICIENTS = (np.float32(-0.16666655), np.float32(0.008332178), np.float32(-0.00019517299))
"""sin r = r + r**3 (S0 + S1 r**2 + S2 r**4)."""
COS_COEFFICIENTS = (np.float32(0.041666646), np.float32(-0.0013887368), np.float32(2.4438452e-05))
"""cos r = 1 - r**2 / 2 + r**4 (C0 + C1 r**2 + C2 r**4)."""


def _sin_cos_formula(mul, add, sub, select):
    """The shared formula over the given float32 operations and a ``select(condition, a, b)``."""
    s0, s1, s2 = SIN_COEFFICIENTS
    c0, c1, c2 = COS_COEFFICIENTS

    def sin_cos(x):
        k = sub(add(mul(x, TWO_OVER_PI), ROUNDER), ROUNDER)
        r = sub(sub(sub(x, mul(k, PI_OVER_2_HIGH)), mul(k, PI_OVER_2_MIDDLE)), mul(k, PI_OVER_2_LOW))
        z = mul(r, r)
        sine = add(r, mul(mul(r, z), add(s0, mul(z, add(s1, mul(z, s2))))))
        cosine = add(sub(ONE, mul(HALF, z)), mul(mul(z, z), add(c0, mul(z, add(c1, mul(z, c2))))))
        quadrant = np.int32(k) & 3
        odd = (quadrant & 1) == 1
        sine, cosine = select(odd, cosine, sine), select(odd, sine, cosine)
        sine = select((quadrant & 2) != 0, -sine, sine)
        cosine = select(((quadrant + 1) & 2) != 0, -cosine, cosine)
        return sine, cosine

    return sin_cos


@cuda.jit(device=True)
def _select_device(condition, if_true, if_false):
    return if_true if condition else if_false


sin_cos_device = cuda.jit(device=True)(_sin_cos_formula(mul, add, sub, _select_device))
"""(sin x, cos x) of one float32 x, in a kernel; twin of ``sin_cos``."""

_sin_cos_numpy = _sin_cos_formula(np.multiply, np.add, np.subtract, np.where)


def sin_cos(x) -> tuple[np.ndarray, np.ndarray]:
    """(sin x, cos x) of a float32 array (or scalar), elementwise, as the kernels compute them."""
    with np.errstate(invalid="ignore"):  # NaN in the state: its quadrant is undefined, and the result NaN anyway
        sine, cosine = _sin_cos_numpy(np.asarray(x, np.float32))
    return sine.astype(np.float32, copy=False), cosine.astype(np.float32, copy=False)
