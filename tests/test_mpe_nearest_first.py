"""The MPE references' nearest-first order (``warpsim.kernels.mpe.nearest_first``): a stable sort's first
columns, found without sorting every column."""

import numpy as np
import pytest

from warpsim.kernels.mpe import nearest_first, searched


def distances(rng, shape: tuple[int, ...], levels: int) -> np.ndarray:
    """float32 squared distances of ``levels`` values, so that ties are many, some rows all inf, some inf
    entries (what ``searched`` leaves of bodies no search finds)."""
    d2 = rng.integers(0, levels, shape).astype(np.float32) / np.float32(7)
    d2[rng.random(shape) < 0.2] = np.nan
    d2[..., :2, :] = np.inf
    return searched(d2)


@pytest.mark.parametrize("shape", [(40, 31), (3, 25, 24)])
@pytest.mark.parametrize("levels", [2, 5, 1000])
@pytest.mark.parametrize("count", [1, 3, 10, 23, 24, 31, 40])
def test_the_nearest_first_are_a_stable_sorts_first_columns(shape, levels, count):
    d2 = distances(np.random.default_rng(count * levels), shape, levels)
    order = nearest_first(d2, count)
    np.testing.assert_array_equal(order, np.argsort(d2, axis=-1, kind="stable")[..., :count])
    assert order.dtype == np.int64
