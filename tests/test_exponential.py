"""warpsim.kernels.exponential: exp and softplus, one formula each for the kernels and the NumPy
references, accurate to float32."""

import numpy as np
import pytest
from numba import cuda

from warpsim.kernels.exponential import EXP_CEILING, EXP_FLOOR, exp, exp_device, softplus, softplus_device

EDGES = [0.0, -0.0, 1e-30, -1e-30, 1e-7, -1e-7, 80.0, -80.0, -79.99, 200.0, -300.0]
VALUES = np.concatenate([np.linspace(-90, 90, 40001, dtype=np.float32), np.array(EDGES, np.float32)])


def test_softplus_is_within_four_ten_millionths_of_the_true_value():
    exact = np.logaddexp(0, VALUES.astype(np.float64))
    inside = VALUES >= EXP_FLOOR
    relative = np.abs(softplus(VALUES[inside]).astype(np.float64) - exact[inside]) / exact[inside]
    assert relative.max() < 4e-7
    assert np.all(softplus(VALUES[~inside]) == 0), "exp below -80 is taken as 0"
    assert softplus(np.float32(np.inf)) == np.inf and softplus(np.float32(-np.inf)) == 0


@pytest.mark.slow(seconds=12)
def test_the_kernels_compute_the_references_bits():
    """Under the simulator here; the PTX test (test_kernel_compile.py) shows the GPU compiler fuses nothing."""

    @cuda.jit
    def apply(values, out):
        i = cuda.grid(1)
        if i < values.shape[0]:
            out[i] = softplus_device(values[i])

    values = np.ascontiguousarray(VALUES[::7])
    out = np.zeros_like(values)
    apply[(len(values) + 127) // 128, 128](values, out)
    np.testing.assert_array_equal(out, softplus(values))


@pytest.mark.parametrize("x", [np.float32(3.5), np.array([[-1.0, 2.0], [0.25, -40.0]], np.float32)])
def test_scalars_and_arrays_keep_their_shape_in_float32(x):
    result = softplus(x)
    assert result.dtype == np.float32 and result.shape == np.shape(x)


def test_exp_is_within_two_ten_millionths_of_the_true_value_from_minus_80_to_3():
    edges = np.array([0.0, -0.0, 1e-8, 2.302585], np.float32)
    y = np.concatenate([np.linspace(-80, 3, 50001, dtype=np.float32), edges])
    relative = np.abs(exp(y).astype(np.float64) - np.exp(y.astype(np.float64))) / np.exp(y.astype(np.float64))
    assert relative.max() < 2e-7
    assert exp(np.float32(-81)) == 0 and exp(np.float32(5)) == exp(EXP_CEILING)


def test_the_kernels_exp_is_the_references():
    @cuda.jit
    def apply(values, out):
        i = cuda.grid(1)
        if i < values.shape[0]:
            out[i] = exp_device(values[i])

    values = np.linspace(-85, 4, 997, dtype=np.float32)
    out = np.zeros_like(values)
    apply[(len(values) + 127) // 128, 128](values, out)
    np.testing.assert_array_equal(out, exp(values))
