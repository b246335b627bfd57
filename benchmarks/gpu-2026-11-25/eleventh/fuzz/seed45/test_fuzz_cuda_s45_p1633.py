"""Found by `kfuse fuzz --seed 45` (program 1633, backend cuda): mismatch.

    output 0: Not equal to tolerance rtol=0.0002, atol=1e-05

    Mismatched elements: 2 / 49 (4.08%)
    Mismatch at indices:
     [4, 6]: 78043.0 (ACTUAL), 78018.0 (DESIRED)
     [6, 4]: 78043.0 (ACTUAL), 78018.0 (DESIRED)
    Max absolute difference among violations: 25.
    Max relative difference among violations: 0.00032044
     ACTUAL: array([[ 6.300000e+01, -2.363130e+05,  6.000000e+00,  1.962600e+04,
            -9.826200e+04, -1.966050e+05,  2.827350e+05],
           [-2.363130e+05,  2.322398e+09, -2.621140e+05,  2.497360e+05,...
     DESIRED: array([[ 6.300000e+01, -2.363130e+05,  6.000000e+00,  1.962600e+04,
            -9.826200e+04, -1.966050e+05,  2.827350e+05],
           [-2.363130e+05,  2.322398e+09, -2.621140e+05,  2.497360e+05,...
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = a0.astype(np.float32)
    v1 = v0.T @ v0
    return v1


def _inputs():
    a0 = np.array([3, -4, -3, 6560, 5, -3, -4051, -3, 13228, 0, 6, 0, 0, 3, 6, -32768, 5, -6, 4, -32767, 32766, -3, 3, 5, 0, 32767, -2, -32767, 0, -32767, 3, 0, 32766, 1, 32767], dtype=np.int16).reshape((5, 7))
    return [a0]


def test_fuzz_cuda_s45_p1633():
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
