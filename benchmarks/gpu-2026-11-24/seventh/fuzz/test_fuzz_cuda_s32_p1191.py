"""Found by `kfuse fuzz --seed 32` (program 1191, backend cuda): mismatch.

    output 0: Arrays are not equal

    Mismatched elements: 1 / 1 (100%)
    Mismatch at index:
     [0]: False (ACTUAL), True (DESIRED)
     ACTUAL: array([False])
     DESIRED: array([ True])
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0, a1):
    v0 = np.float_power(a1, a0)
    v1 = (v0 >= 3.0)
    return v1


def _inputs():
    a0 = np.array([1], dtype=np.int16).reshape(())
    a1 = np.array([3], dtype=np.int16).reshape((1,))
    return [a0, a1]


def test_fuzz_cuda_s32_p1191():
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
