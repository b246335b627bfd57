"""Found by `kfuse fuzz --seed 45` (program 5197, backend cuda): mismatch.

    output 0: Not equal to tolerance rtol=1e-11, atol=1e-13

    Mismatched elements: 1 / 1 (100%)
    Mismatch at index:
     [0]: -0.4 (ACTUAL), -0.8 (DESIRED)
    Max absolute difference among violations: 0.4
    Max relative difference among violations: 0.5
     ACTUAL: array([-0.4])
     DESIRED: array([-0.8])
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = a0.mean(axis=-2)
    return v0


def _inputs():
    a0 = np.array([6, -9223372036854775807, -4, 9223372036854775807, -4], dtype=np.int64).reshape((5, 1))
    return [a0]


def test_fuzz_cuda_s45_p5197():
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
