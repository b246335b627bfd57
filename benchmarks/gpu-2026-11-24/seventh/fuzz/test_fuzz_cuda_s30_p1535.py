"""Found by `kfuse fuzz --seed 30` (program 1535, backend cuda): mismatch.

    output 0: Not equal to tolerance rtol=0.05, atol=0.01

    nan location mismatch:
     ACTUAL: array([[[ 0.,  0.,  0.,  0.],
            [ 0.,  0.,  0.,  0.],
            [ 0.,  0.,  0.,  0.],...
     DESIRED: array([[[ 0.,  0.,  0.,  0.],
            [ 0.,  0.,  0.,  0.],
            [ 0.,  0.,  0.,  0.],...
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = a0 @ np.swapaxes(a0, -1, -2)
    v1 = np.subtract(v0, v0)
    return v1


def _inputs():
    a0 = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1728.0, 1.5, -0.39013671875, -3.0, -4.0, -0.335205078125, -inf, 2.5, -2.9375, 2.6796875, 3.693359375, -1.6611328125, -0.0, -1.0, -1.5, nan, 2.0078125, -2.80078125, 6.0, 352.75], dtype=np.float16).reshape((5, 4, 2))
    return [a0]


def test_fuzz_cuda_s30_p1535():
    args = _inputs()
    with np.errstate(all="ignore"):
        expected = fuzz_fn(*[a.copy() for a in args])
    actual = kfuse.jit(fuzz_fn, backend="cuda")(*args)
    if not isinstance(expected, tuple):
        expected, actual = (expected,), (actual,)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_matches_numpy(a, e, reductions=True)
        a, e = np.asarray(a), np.asarray(e)
        if False and e.dtype.kind == "f":   # zeros keep NumPy's sign
            zero = (a == 0) & (e == 0)
            np.testing.assert_array_equal(np.signbit(a)[zero], np.signbit(e)[zero])
