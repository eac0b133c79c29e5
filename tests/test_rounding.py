"""warpsim.kernels.rounding: float32 products and sums that round as NumPy's do.

Under the simulator the helpers are plain float32 operations; on a GPU they are
libdevice's round-to-nearest intrinsics, which the compiler never fuses. The inputs
are chosen where one fused multiply-add (one rounding) differs from NumPy's two.
"""

import numpy as np
import pytest
from numba import cuda

from warpsim.kernels.rounding import add, mul, squared_distance, sub

NUM_VALUES = 512


@cuda.jit
def rounded_operations(a, b, c, out):
    """a, b, c float32[M]; out float32[4, M]: a*b+c, a*b-c, squared_distance(a, b), a*a+b*b unfused."""
    k = cuda.grid(1)
    if k < a.shape[0]:
        out[0, k] = add(mul(a[k], b[k]), c[k])
        out[1, k] = sub(mul(a[k], b[k]), c[k])
        out[2, k] = squared_distance(a[k], b[k])
        out[3, k] = a[k] * a[k] + b[k] * b[k]


def numpy_expected(a, b, c):
    return np.stack([a * b + c, a * b - c, a * a + b * b, a * a + b * b])


def inputs_where_fusing_differs(seed: int = 0):
    """float32[M] a, b, c where rn(a*a + rn(b*b)) or rn(a*b + c) differs from NumPy's result."""
    rng = np.random.default_rng(seed)
    a, b = (rng.uniform(-10, 10, 64 * NUM_VALUES).astype(np.float32) for _ in range(2))
    wide = np.float64
    fused_d2 = (wide(a) * wide(a) + wide(b * b)).astype(np.float32)
    differs = fused_d2 != a * a + b * b
    assert differs.sum() >= NUM_VALUES, "not enough inputs where a fused multiply-add rounds differently"
    a, b = a[differs][:NUM_VALUES], b[differs][:NUM_VALUES]
    return a, b, (b * b).astype(np.float32)


def run(a, b, c):
    out = np.zeros((4, len(a)), np.float32)
    rounded_operations[(len(a) + 127) // 128, 128](a, b, c, out)
    return out


def test_helpers_compute_what_numpy_computes_under_the_simulator():
    a, b, c = inputs_where_fusing_differs()
    a, b, c = a[:64], b[:64], c[:64]  # the simulator runs one Python thread per value
    np.testing.assert_array_equal(run(a, b, c), numpy_expected(a, b, c))


def test_squared_distance_is_three_roundings_not_a_float64_sum():
    a, b, c = inputs_where_fusing_differs()
    a, b = a[:16], b[:16]
    exact = (np.float64(a) ** 2 + np.float64(b) ** 2).astype(np.float32)
    result = run(a, b, c[:16])[2]
    np.testing.assert_array_equal(result, a * a + b * b)
    assert np.any(result != exact), "the inputs must tell apart NumPy's roundings from one rounding"


@pytest.mark.gpu
def test_helpers_round_as_numpy_on_the_gpu_where_plain_code_is_fused():
    a, b, c = inputs_where_fusing_differs()
    out = run(a, b, c)
    expected = numpy_expected(a, b, c)
    np.testing.assert_array_equal(out[:3], expected[:3])
    assert np.any(out[3] != expected[3]), "plain a*a + b*b was expected to be fused on the GPU"
