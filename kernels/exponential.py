"""Float32 exp and softplus, log(1 + exp(x)), bit-identical on the GPU, under the simulator and in NumPy.

The multi-particle environments push touching bodies apart with a force that grows as the
softplus of their overlap (MPE's contact response), and simple_tag penalises a good agent
that leaves the arena by an exponential. libdevice's ``expf`` and ``log1pf`` and NumPy's are
each accurate to an ulp or two, but not the same ulps, so, as in ``warpsim.kernels.trig``,
the kernels and their NumPy references share one formula written once, in which every
operation is a float32 product, sum, difference or quotient rounded to nearest
(``warpsim.kernels.rounding`` on the device): both sides compute the same bits.

- exp(y), -80 <= y <= 3: n = the integer nearest y / ln 2, r = y - n ln 2 (Cody-Waite, ln 2 in
  two parts: the first has 16 significant bits, so n times it is exact for |n| < 2**8), exp(r)
  by its Taylor polynomial of degree 7 (|r| <= ln 2 / 2: truncation below 6e-9), times 2**n
  made of exact powers of two. Below -80 it is 0; above 3 it is exp(3) (its callers cap it lower).
- softplus(x) = max(x, 0) + log1p(exp(-|x|)), with log1p(z), 0 <= z <= 1, as 2 atanh(s),
  s = z / (2 + z) <= 1/3, by its odd series to s**17 (truncation below 2e-9 relative); for x
  below -80 it is 0 (the true value is under 2e-35).

Accuracy (tested against float64): exp within 2e-7 relative over [-80, 3], softplus within
4e-7 over [-80, 80].
"""

import numpy as np
from numba import cuda

from warpsim.kernels.rounding import add, mul, sub

ZERO = np.float32(0)
ONE = np.float32(1)
TWO = np.float32(2)
LOG2_E = np.float32(1.4426950408889634)
LN2_HIGH = np.float32(0.693145751953125)
"""ln 2 to 16 significant bits: n times it is exact for |n| < 2**8."""
LN2_LOW = np.float32(1.4286068203094172e-06)
ROUNDER = np.float32(1.5 * 2**23)
"""y + ROUNDER - ROUNDER is y rounded to the nearest integer (|y| < 2**22)."""
EXP_FLOOR = np.float32(-80)
"""Below it exp is taken as 0: 2**n stays a normal float32."""
EXP_CEILING = np.float32(3)
"""Above it exp is taken as exp(3): 2**n, n <= 5, is made of the powers of two below."""
EXP_COEFFICIENTS = tuple(np.float32(1 / factorial) for factorial in (2, 6, 24, 120, 720, 5040))
"""exp r = 1 + r + r**2 (1/2 + r (1/6 + r (1/24 + ...)))."""
ATANH_COEFFICIENTS = tuple(np.float32(1 / k) for k in (3, 5, 7, 9, 11, 13, 15, 17))
"""atanh s = s (1 + s**2 (1/3 + s**2 (1/5 + ...)))."""
POWERS_OF_HALF = tuple((1 << bit, np.float32(2.0 ** -(1 << bit))) for bit in range(7))
"""(2**b, 2**-(2**b)): 2**-m for 0 <= m < 128 is the product over the bits b of m."""
POWERS_OF_TWO = tuple((1 << bit, np.float32(2.0 ** (1 << bit))) for bit in range(3))
"""(2**b, 2**(2**b)): 2**m for 0 <= m < 8."""


def _exp_formula(mul, add, sub, select, maximum, minimum, to_int):
    """exp(y) for -80 <= y <= 3 over the given float32 operations, ``select(condition, a, b)`` and ``to_int``."""
    e2, e3, e4, e5, e6, e7 = EXP_COEFFICIENTS

    def exp(y):
        clamped = minimum(maximum(y, EXP_FLOOR), EXP_CEILING)
        n = sub(add(mul(clamped, LOG2_E), ROUNDER), ROUNDER)
        r = sub(sub(clamped, mul(n, LN2_HIGH)), mul(n, LN2_LOW))
        tail = add(e6, mul(r, e7))
        tail = add(e5, mul(r, tail))
        tail = add(e4, mul(r, tail))
        tail = add(e3, mul(r, tail))
        tail = add(e2, mul(r, tail))
        power = add(add(ONE, r), mul(mul(r, r), tail))
        whole = to_int(n)
        halvings = select(whole < 0, -whole, 0)
        for bit, factor in POWERS_OF_HALF:
            power = select((halvings & bit) != 0, mul(power, factor), power)
        doublings = select(whole > 0, whole, 0)
        for bit, factor in POWERS_OF_TWO:
            power = select((doublings & bit) != 0, mul(power, factor), power)
        return select(y < EXP_FLOOR, ZERO, power)

    return exp


def _log1p_formula(mul, add, divide):
    """log(1 + z) for 0 <= z <= 1 over the given float32 operations."""
    a3, a5, a7, a9, a11, a13, a15, a17 = ATANH_COEFFICIENTS

    def log1p_of_unit(z):
        s = divide(z, add(TWO, z))
        s2 = mul(s, s)
        series = add(a15, mul(s2, a17))
        series = add(a13, mul(s2, series))
        series = add(a11, mul(s2, series))
        series = add(a9, mul(s2, series))
        series = add(a7, mul(s2, series))
        series = add(a5, mul(s2, series))
        series = add(a3, mul(s2, series))
        return mul(TWO, add(s, mul(mul(s, s2), series)))

    return log1p_of_unit


def _softplus_formula(add, maximum, absolute, exp, log1p_of_unit):
    """max(x, 0) + log1p(exp(-|x|)) over the given operations."""

    def softplus(x):
        return add(maximum(x, ZERO), log1p_of_unit(exp(-absolute(x))))

    return softplus


@cuda.jit(device=True)
def _select_device(condition, if_true, if_false):
    return if_true if condition else if_false


@cuda.jit(device=True)
def _divide_device(a, b):
    return np.float32(a) / np.float32(b)


@cuda.jit(device=True)
def _maximum_device(a, b):
    return max(np.float32(a), np.float32(b))


@cuda.jit(device=True)
def _minimum_device(a, b):
    return min(np.float32(a), np.float32(b))


@cuda.jit(device=True)
def _absolute_device(a):
    return abs(np.float32(a))


@cuda.jit(device=True)
def _to_int_device(a):
    return np.int32(a)


exp_device = cuda.jit(device=True)(_exp_formula(mul, add, sub, _select_device, _maximum_device, _minimum_device,
                                                 _to_int_device))
"""exp of one float32 y, in a kernel; twin of ``exp``."""
_log1p_device = cuda.jit(device=True)(_log1p_formula(mul, add, _divide_device))
softplus_device = cuda.jit(device=True)(_softplus_formula(add, _maximum_device, _absolute_device, exp_device,
                                                          _log1p_device))
"""softplus of one float32 x, in a kernel; twin of ``softplus``."""

_exp_numpy = _exp_formula(np.multiply, np.add, np.subtract, np.where, np.maximum, np.minimum,
                          lambda a: np.asarray(a).astype(np.int32))
_softplus_numpy = _softplus_formula(np.add, np.maximum, np.abs, _exp_numpy,
                                    _log1p_formula(np.multiply, np.add, np.divide))


def exp(y) -> np.ndarray:
    """exp of a float32 array (or scalar), elementwise, as the kernels compute it."""
    return np.asarray(_exp_numpy(np.asarray(y, np.float32)), np.float32)


def softplus(x) -> np.ndarray:
    """softplus of a float32 array (or scalar), elementwise, as the kernels compute it."""
    return np.asarray(_softplus_numpy(np.asarray(x, np.float32)), np.float32)
