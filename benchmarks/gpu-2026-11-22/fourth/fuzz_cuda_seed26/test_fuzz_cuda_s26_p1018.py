"""Found by `kfuse fuzz --seed 26` (program 1018, backend cuda): mismatch.

    output 0: Arrays are not equal

    Mismatched elements: 1 / 1 (100%)
     ACTUAL: array(1, dtype=uint64)
     DESIRED: array(0, dtype=uint64)
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = np.tanh(a0)
    v1 = np.clip(np.where(np.isfinite(v0), v0, 0), 0.0, 9.223372036854776e+18).astype(np.uint64)
    return v1


def _inputs():
    a0 = np.array([9.201723098754883], dtype=np.float32).reshape(())
    return [a0]


def test_fuzz_cuda_s26_p1018():
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
