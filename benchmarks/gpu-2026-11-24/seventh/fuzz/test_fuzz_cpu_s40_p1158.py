"""Found by `kfuse fuzz --seed 40` (program 1158, backend cpu): mismatch.

    output 0: Arrays are not equal

    Mismatched elements: 1 / 1 (100%)
    Max absolute difference among violations: -9223372036854775808
    Max relative difference among violations: 1.
     ACTUAL: array(0)
     DESIRED: array(-9223372036854775808)
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = np.var(a0, keepdims=True, ddof=1)
    v1 = v0.sum(keepdims=True, dtype=np.int64)
    return v1


def _inputs():
    a0 = np.array([0.0], dtype=np.float64).reshape(())
    return [a0]


def test_fuzz_cpu_s40_p1158():
    args = _inputs()
    with np.errstate(all="ignore"):
        expected = fuzz_fn(*[a.copy() for a in args])
    actual = kfuse.jit(fuzz_fn, backend="cpu")(*args)
    if not isinstance(expected, tuple):
        expected, actual = (expected,), (actual,)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_matches_numpy(a, e, reductions=True)
        a, e = np.asarray(a), np.asarray(e)
        if True and e.dtype.kind == "f":   # zeros keep NumPy's sign
            zero = (a == 0) & (e == 0)
            np.testing.assert_array_equal(np.signbit(a)[zero], np.signbit(e)[zero])
