"""Found by `kfuse fuzz --seed 71` (program 7729, backend cuda): mismatch.

    output 0: Arrays are not equal

    Mismatched elements: 1 / 1 (100%)
     ACTUAL: array(True)
     DESIRED: array(False)
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = np.logical_or(np.int32(-2), a0)
    v1 = v0.var(ddof=1)
    v2 = np.signbit(np.where((v1 == v1), v1, 0.0))
    return v2


def _inputs():
    a0 = np.array([0], dtype=np.int16).reshape(())
    return [a0]


def test_fuzz_cuda_s71_p7729():
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
        if True and e.dtype.kind == "f":   # zeros keep NumPy's sign
            zero = (a == 0) & (e == 0)
            np.testing.assert_array_equal(np.signbit(a)[zero], np.signbit(e)[zero])
