"""Found by `kfuse fuzz --seed 49` (program 6525, backend cuda): mismatch.

    output 0: Not equal to tolerance rtol=1e-12, atol=1e-14

    Mismatched elements: 1 / 5 (20%)
    Mismatch at index:
     [1, 0]: 2.9999999999999996 (ACTUAL), 0.0 (DESIRED)
    Max absolute difference among violations: 3.
    Max relative difference among violations: inf
     ACTUAL: array([[nan],
           [ 3.],
           [ 0.],...
     DESIRED: array([[nan],
           [ 0.],
           [ 0.],...
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = np.log2(a0)
    v1 = np.fmod(v0, 3)
    return v1


def _inputs():
    a0 = np.array([-1.2923799920074581, 8.0, 1.0, 1.0, 1.0], dtype=np.float64).reshape((5, 1))
    return [a0]


def test_fuzz_cuda_s49_p6525():
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
