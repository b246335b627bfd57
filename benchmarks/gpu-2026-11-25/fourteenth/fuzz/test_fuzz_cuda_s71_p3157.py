"""Found by `kfuse fuzz --seed 71` (program 3157, backend cuda): mismatch.

    output 0: Not equal to tolerance rtol=1e-12, atol=1e-14

    Mismatched elements: 1 / 4 (25%)
    Mismatch at index:
     [0, 0]: -6.0 (ACTUAL), -7.0 (DESIRED)
    Max absolute difference among violations: 1.
    Max relative difference among violations: 0.14285714
     ACTUAL: array([[ -6.],
           [-23.],
           [  0.],
           [  0.]])
     DESIRED: array([[ -7.],
           [-23.],
           [  0.],
           [  0.]])
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0, a1):
    v0 = np.float_power(a0, a1)
    v1 = (a1 // v0)
    return v1


def _inputs():
    a0 = np.array([6], dtype=np.uint64).reshape(())
    a1 = np.array([-1.0, -1.5, 1.0, 1.0], dtype=np.float64).reshape((4, 1))
    return [a0, a1]


def test_fuzz_cuda_s71_p3157():
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
