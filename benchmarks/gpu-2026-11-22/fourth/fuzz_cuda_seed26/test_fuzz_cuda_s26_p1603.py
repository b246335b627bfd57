"""Found by `kfuse fuzz --seed 26` (program 1603, backend cuda): mismatch.

    output 0: Not equal to tolerance rtol=2e-05, atol=1e-06

    Mismatched elements: 1 / 36 (2.78%)
    Mismatch at index:
     [2, 1, 1]: 1.683837890625 (ACTUAL), 1.68389892578125 (DESIRED)
    Max absolute difference among violations: 6.1035156e-05
    Max relative difference among violations: 3.624633e-05
     ACTUAL: array([[[1.175201, 1.175201, 1.175201],
            [1.175201, 1.175201, 1.175201],
            [1.175201, 1.175201, 1.175201]],...
     DESIRED: array([[[1.175201, 1.175201, 1.175201],
            [1.175201, 1.175201, 1.175201],
            [1.175201, 1.175201, 1.175201]],...
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = np.sinh(a0)
    v1 = np.remainder(v0, 2.0)
    return v1


def _inputs():
    a0 = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -3.0, 5510.94580078125, 0.0, -0.49198681116104126, -7.0, 6.0, -1.0, 2.5, 1.0, 0.5, -1.3201117515563965, 2.0, 2.730419635772705, -2.0, -5.0, -6.0, -0.25, -2.386972665786743], dtype=np.float32).reshape((4, 3, 3))
    return [a0]


def test_fuzz_cuda_s26_p1603():
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
