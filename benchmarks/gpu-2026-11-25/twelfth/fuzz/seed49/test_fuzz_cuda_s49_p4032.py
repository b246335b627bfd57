"""Found by `kfuse fuzz --seed 49` (program 4032, backend cuda): mismatch.

    output 0: Not equal to tolerance rtol=2e-05, atol=1e-06

    Mismatched elements: 1 / 35 (2.86%)
    Mismatch at index:
     [4, 2]: -0.012073904275894165 (ACTUAL), -0.012067615985870361 (DESIRED)
    Max absolute difference among violations: 6.28829e-06
    Max relative difference among violations: 0.00052109
     ACTUAL: array([[ 0.09691 ,       nan,  0.123366,       nan,       nan,       nan,
                  nan],
           [ 0.09691 ,       nan,  0.123366,       nan,       nan,       nan,...
     DESIRED: array([[ 0.09691 ,       nan,  0.123366,       nan,       nan,       nan,
                  nan],
           [ 0.09691 ,       nan,  0.123366,       nan,       nan,       nan,...
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0, a1):
    v0 = np.log10(a1)
    v1 = np.fmod(a0, v0)
    return v1


def _inputs():
    a0 = np.array([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -3, 3, 6, 6, 0, -4, 6, -54, -5, 114, 6, 127, -2, -74, -2, 5, 0, 83], dtype=np.int8).reshape((5, 7))
    a1 = np.array([0.5, -1.0, 1.4973621368408203, 1.0, 1.0, 1.0, 1.0], dtype=np.float32).reshape((1, 7))
    return [a0, a1]


def test_fuzz_cuda_s49_p4032():
    args = _inputs()
    with np.errstate(all="ignore"):
        expected = fuzz_fn(*[a.copy() for a in args])
    actual = kfuse.jit(fuzz_fn, backend="cuda")(*args)
    if not isinstance(expected, tuple):
        expected, actual = (expected,), (actual,)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_matches_numpy(a, e, reductions=False)
        a, e = np.asarray(a), np.asarray(e)
        if True and e.dtype.kind == "f":   # zeros keep NumPy's sign
            zero = (a == 0) & (e == 0)
            np.testing.assert_array_equal(np.signbit(a)[zero], np.signbit(e)[zero])
