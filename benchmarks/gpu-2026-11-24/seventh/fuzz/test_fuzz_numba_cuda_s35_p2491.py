"""Found by `kfuse fuzz --seed 35` (program 2491, backend numba-cuda): mismatch.

    output 0: Arrays are not equal

    Mismatched elements: 1 / 14 (7.14%)
    Mismatch at index:
     [3, 1]: 9223372036854775807 (ACTUAL), -9223372036854775808 (DESIRED)
    Max absolute difference among violations: 1
    Max relative difference among violations: -1.08420217e-19
     ACTUAL: array([[                   0,                    0],
           [                   0,                    0],
           [                   1,                   -7],...
     DESIRED: array([[                   0,                    0],
           [                   0,                    0],
           [                   1,                   -7],...
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = np.prod(a0, axis=(0,), dtype=np.int64)
    return v0


def _inputs():
    a0 = np.array([0.7059807877676825, -0.5138773637284442, 0.0, -0.7722342946616667, 1.0, -7.0, 0.23979486547043605, inf, 4.562763737700549, -1.5, -0.033317506414207276, 1.570267338524193, -0.8004034753613465, nan, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], dtype=np.float64).reshape((2, 7, 2))
    return [a0]


def test_fuzz_numba_cuda_s35_p2491():
    args = _inputs()
    with np.errstate(all="ignore"):
        expected = fuzz_fn(*[a.copy() for a in args])
    actual = kfuse.jit(fuzz_fn, backend="numba-cuda")(*args)
    if not isinstance(expected, tuple):
        expected, actual = (expected,), (actual,)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_matches_numpy(a, e, reductions=True)
        a, e = np.asarray(a), np.asarray(e)
        if True and e.dtype.kind == "f":   # zeros keep NumPy's sign
            zero = (a == 0) & (e == 0)
            np.testing.assert_array_equal(np.signbit(a)[zero], np.signbit(e)[zero])
