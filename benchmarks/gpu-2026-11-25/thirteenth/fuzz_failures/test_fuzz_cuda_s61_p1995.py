"""Found by `kfuse fuzz --seed 61` (program 1995, backend cuda): mismatch.

    output 0: Arrays are not equal

    Mismatched elements: 2 / 15 (13.3%)
    Mismatch at indices:
     [2, 2]: 18446744073709551615 (ACTUAL), 0 (DESIRED)
     [3, 1]: 18446744073709551615 (ACTUAL), 0 (DESIRED)
    Max absolute difference among violations: 1
    Max relative difference among violations: inf
     ACTUAL: array([[                   1,                    1,                    1],
           [                   1,                    1,                    1],
           [                   1,                    3, 18446744073709551615],...
     DESIRED: array([[                   1,                    1,                    1],
           [                   1,                    1,                    1],
           [                   1,                    3,                    0],...
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = a0 * 1
    v0[v0 != 0] = a0[v0 != 0] * np.int32(1)
    return v0


def _inputs():
    a0 = np.array([1, 1, 1, 1, 1, 1, 1, 3, 18446744073709551615, 3470283249983127256, 18446744073709551614, 2, 5, 14069536305281640607, 5], dtype=np.uint64).reshape((5, 3))
    return [a0]


def test_fuzz_cuda_s61_p1995():
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
