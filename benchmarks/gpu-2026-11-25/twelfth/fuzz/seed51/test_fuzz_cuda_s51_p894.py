"""Found by `kfuse fuzz --seed 51` (program 894, backend cuda): mismatch.

    output 0: Not equal to tolerance rtol=1e-11, atol=1e-13

    Mismatched elements: 4 / 25 (16%)
    Mismatch at indices:
     [2, 4, 0]: -3.141592653589793 (ACTUAL), 3.141592653589793 (DESIRED)
     [3, 4, 0]: -3.141592653589793 (ACTUAL), 3.141592653589793 (DESIRED)
     [4, 2, 0]: -3.141592653589793 (ACTUAL), 3.141592653589793 (DESIRED)
     [4, 3, 0]: -3.141592653589793 (ACTUAL), 3.141592653589793 (DESIRED)
    Max absolute difference among violations: 6.28318531
    Max relative difference among violations: 2.
     ACTUAL: array([[[ 2.677945],
            [ 2.677945],
            [-2.677945],...
     DESIRED: array([[[ 2.677945],
            [ 2.677945],
            [-2.677945],...
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = np.matvec(a0, a0)
    v1 = np.arctan2(v0, (-2))
    return v1


def _inputs():
    a0 = np.array([1.0, 1.0, -1.0, -3.5, 0.0], dtype=np.float64).reshape((5, 1, 1))
    return [a0]


def test_fuzz_cuda_s51_p894():
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
