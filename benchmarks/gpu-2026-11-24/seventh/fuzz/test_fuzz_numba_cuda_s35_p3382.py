"""Found by `kfuse fuzz --seed 35` (program 3382, backend numba-cuda): mismatch.

    output 0: Arrays are not equal

    Mismatched elements: 1 / 35 (2.86%)
    Mismatch at index:
     [0, 3, 0]: -1 (ACTUAL), 1 (DESIRED)
    Max absolute difference among violations: 2
    Max relative difference among violations: 2.
     ACTUAL: array([[[ 0],
            [-1],
            [-1],...
     DESIRED: array([[[ 0],
            [-1],
            [-1],...
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = -a0
    v1 = np.floor_divide(v0, np.where((a0 == 0) | (a0 == -1), 3, a0))
    return v1


def _inputs():
    a0 = np.array([-1, 2174, -4, -32768, 2792, -1, 3, -6, 32766, 32766, 10923, 0, 32766, 3, 4, 3, -3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], dtype=np.int16).reshape((7, 5, 1))
    return [a0]


def test_fuzz_numba_cuda_s35_p3382():
    args = _inputs()
    with np.errstate(all="ignore"):
        expected = fuzz_fn(*[a.copy() for a in args])
    actual = kfuse.jit(fuzz_fn, backend="numba-cuda")(*args)
    if not isinstance(expected, tuple):
        expected, actual = (expected,), (actual,)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_matches_numpy(a, e, reductions=False)
        a, e = np.asarray(a), np.asarray(e)
        if True and e.dtype.kind == "f":   # zeros keep NumPy's sign
            zero = (a == 0) & (e == 0)
            np.testing.assert_array_equal(np.signbit(a)[zero], np.signbit(e)[zero])
