"""warpsim.kernels.trig: one float32 sin/cos formula, the same bits in a kernel and in NumPy."""

import warnings

import numpy as np
import pytest
from numba import cuda

from warpsim.kernels.trig import sin_cos, sin_cos_device

EDGES = np.array([0, np.pi / 4, np.pi / 2, np.pi, 3 * np.pi / 2, 2 * np.pi, -np.pi / 2, 1e-30, -0.0, 8192, -8192,
                  np.nextafter(np.float32(2 * np.pi), np.float32(0))], np.float32)


@cuda.jit
def sin_cos_kernel(x, sine, cosine):
    """x float32[M]; sine, cosine float32[M] (written)."""
    k = cuda.grid(1)
    if k < x.shape[0]:
        sine[k], cosine[k] = sin_cos_device(x[k])


def run_kernel(x):
    sine, cosine = np.zeros_like(x), np.zeros_like(x)
    sin_cos_kernel[(len(x) + 127) // 128, 128](x, sine, cosine)
    return sine, cosine


def headings(count: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([EDGES, rng.uniform(0, 2 * np.pi, count).astype(np.float32),
                           rng.uniform(-8192, 8192, count).astype(np.float32)])


def test_kernel_and_numpy_twin_give_the_same_bits_under_the_simulator():
    x = headings(24)
    sine, cosine = run_kernel(x)
    expected_sine, expected_cosine = sin_cos(x)
    np.testing.assert_array_equal(sine.view(np.int32), expected_sine.view(np.int32))
    np.testing.assert_array_equal(cosine.view(np.int32), expected_cosine.view(np.int32))


@pytest.mark.parametrize("low, high", [(0, 2 * np.pi), (-8192, 8192)])
def test_accuracy_against_float64(low, high):
    x = np.concatenate([EDGES, np.random.default_rng(1).uniform(low, high, 1_000_000).astype(np.float32)])
    x = x[(x >= low) & (x <= high)]
    for got, true in zip(sin_cos(x), (np.sin(x.astype(np.float64)), np.cos(x.astype(np.float64)))):
        assert got.dtype == np.float32
        error = np.abs(got.astype(np.float64) - true)
        assert error.max() <= 1e-7
        large = np.abs(true) >= 2.0**-8
        ulps = error[large] / np.spacing(np.abs(true[large]).astype(np.float32))
        assert ulps.max() <= 1.6


def test_scalars_and_arrays_of_any_shape():
    sine, cosine = sin_cos(np.float32(np.pi / 6))
    assert sine.shape == () and abs(float(sine) - 0.5) < 1e-7 and abs(float(cosine) - np.sqrt(3) / 2) < 1e-7
    grid = np.linspace(0, 6, 12, dtype=np.float32).reshape(3, 4)
    assert sin_cos(grid)[1].shape == (3, 4)


@pytest.mark.gpu
def test_kernel_on_the_gpu_gives_numpys_bits():
    x = headings(1 << 20)
    sine, cosine = run_kernel(x)
    expected_sine, expected_cosine = sin_cos(x)
    np.testing.assert_array_equal(sine.view(np.int32), expected_sine.view(np.int32))
    np.testing.assert_array_equal(cosine.view(np.int32), expected_cosine.view(np.int32))


def test_nan_gives_nan_without_a_numpy_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sine, cosine = sin_cos(np.array([np.nan, 1.0], np.float32))
    assert np.isnan(sine[0]) and np.isnan(cosine[0]) and np.isfinite(sine[1])
