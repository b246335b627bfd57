"""Found by `kfuse fuzz --seed 45` (program 4895, backend cuda): mismatch.

    output 0: Arrays are not equal

    Mismatched elements: 1 / 1 (100%)
    Mismatch at index:
     [0]: 3 (ACTUAL), 0 (DESIRED)
    Max absolute difference among violations: 3
    Max relative difference among violations: inf
     ACTUAL: array([3])
     DESIRED: array([0])
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = np.arctan2(a0, 1000.0)
    v1 = v0.argmax(axis=0, keepdims=True)
    return v1


def _inputs():
    a0 = np.array([6422250001165041712, 1, 1, 18446744073709551615], dtype=np.uint64).reshape((4,))
    return [a0]


def test_fuzz_cuda_s45_p4895():
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
