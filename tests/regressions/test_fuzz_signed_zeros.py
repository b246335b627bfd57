"""Signed-zero disagreements with NumPy found by `kfuse fuzz` (CPU backend). Each test failed
on the code as of the fuzzing session (fixed since); see docs/FUZZING.md for the diagnosis."""
import numpy as np
import pytest

import kfuse


def _same_zeros(actual, expected):
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.dtype == e.dtype and a.shape == e.shape
    np.testing.assert_array_equal(a, e)
    real = ~np.isnan(e)   # a NaN's sign bit is not part of NumPy's contract (it differs per loop)
    np.testing.assert_array_equal(np.signbit(a)[real], np.signbit(e)[real])


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_sign_of_negative_zero(dt):            # kfuse fuzz --seed 2, program 125
    def fuzz_fn(a0):
        return np.sign(a0 % a0)
    a0 = np.array([-139.125, 1.0, -0.0, 0.0], dtype=dt)
    _same_zeros(kfuse.jit(fuzz_fn, backend="cpu")(a0), fuzz_fn(a0))


@pytest.mark.parametrize("name", ["fmin", "fmax", "minimum", "maximum"])
def test_min_max_of_opposite_zeros(name):      # kfuse fuzz --seed 3, program 60
    uf = getattr(np, name)

    def fuzz_fn(a0):
        return uf(a0, -0.0), uf(-a0, 0.0)
    a0 = np.array([1.0, 0.0, -1.0, 0.0], dtype=np.float32)
    for a, e in zip(kfuse.jit(fuzz_fn, backend="cpu")(a0), fuzz_fn(a0)):
        _same_zeros(a, e)


@pytest.mark.parametrize("fname", ["sum", "mean"])
def test_sum_mean_of_0d_negative_zero(fname):  # kfuse fuzz --seed 0, program 168
    def fuzz_fn(a0):
        return getattr(np, fname)(a0, keepdims=True)
    a0 = np.array(-0.0, dtype=np.float32)
    _same_zeros(kfuse.jit(fuzz_fn, backend="cpu")(a0), fuzz_fn(a0))
