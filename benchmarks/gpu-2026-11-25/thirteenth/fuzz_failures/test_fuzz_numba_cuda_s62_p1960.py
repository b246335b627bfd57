"""Found by `kfuse fuzz --seed 62` (program 1960, backend numba-cuda): mismatch.

    output 0: Not equal to tolerance rtol=1e-11, atol=1e-13

    Mismatched elements: 1 / 1 (100%)
    Mismatch at index:
     [0, 0, 0]: 0.0 (ACTUAL), 0.5 (DESIRED)
    Max absolute difference among violations: 0.5
    Max relative difference among violations: 1.
     ACTUAL: array([[[0.]]])
     DESIRED: array([[[0.5]]])
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = a0.mean(keepdims=True)
    return v0


def _inputs():
    a0 = np.array([9223372036854775806, -9223372036854775807, 1, 1], dtype=np.int64).reshape((4, 1, 1))
    return [a0]


def test_fuzz_numba_cuda_s62_p1960():
    args = _inputs()
    with np.errstate(all="ignore"):
        expected = fuzz_fn(*[a.copy() for a in args])
    actual = kfuse.jit(fuzz_fn, backend="numba-cuda")(*args)
    if not isinstance(expected, tuple):
        expected, actual = (expected,), (actual,)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_matches_numpy(a, e, reductions=True)
        a, e = np.asarray(a), np.asarray(e)
        if True and e.dtype.kind == "f":   # zeros keep NumPy's sign
            zero = (a == 0) & (e == 0)
            np.testing.assert_array_equal(np.signbit(a)[zero], np.signbit(e)[zero])
