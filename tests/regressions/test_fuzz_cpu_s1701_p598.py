"""Bug 41 (cpu seed 1701 #598, the scatter kind, 2026-11-26), on every backend's trace: NumPy's
``ufunc.at`` converts a Python float value with ``np.asarray`` (float64), so
``np.minimum.at(f16, i, -0.0)`` computes in float64, whose loop keeps the second of two equal zeros
(-0.0 lands); kfuse narrowed the extremes to float16, whose loop keeps the first (+0.0 stayed).
The extremes are no longer narrowed (``trace/scatter._NARROWABLE``)."""
import numpy as np
import pytest

import kfuse


def min_at_view(a0, a1):
    v0 = np.zeros_like(a0)
    np.minimum.at(v0[:, ::2], a1, (-0.0))
    return v0


def max_at(a0, a1):
    v0 = np.full_like(a0, -0.0)
    np.maximum.at(v0, a1, 0.0)
    return v0


@pytest.mark.parametrize("fn", [min_at_view, max_at])
def test_extremes_at_keep_numpy_zero_signs_on_the_cpu(fn):
    a0 = np.array([0.0, 0.0, 1.0, 1.0], dtype=np.float16).reshape((4, 1))
    a1 = np.array([0, 1], dtype=np.uint16).reshape((2, 1))
    want = fn(a0.copy(), a1)
    got = kfuse.jit(fn, backend="cpu")(a0.copy(), a1)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
