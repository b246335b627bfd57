"""Found by `kfuse fuzz --seed 61` (program 5838, backend cuda): mismatch.

    output 0: Arrays are not equal

    Mismatched elements: 3 / 4 (75%)
    Mismatch at indices:
     [0, 0, 0]: 0 (ACTUAL), 251 (DESIRED)
     [0, 0, 1]: 0 (ACTUAL), 251 (DESIRED)
     [0, 0, 3]: 0 (ACTUAL), 252 (DESIRED)
    Max absolute difference among violations: 5
    Max relative difference among violations: 0.01992032
     ACTUAL: array([[[0, 0, 0, 0]]], dtype=uint8)
     DESIRED: array([[[251, 251,   0, 252]]], dtype=uint8)
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0, a1):
    v0 = a0.min()
    v1 = a0 * 1
    v1[-1] -= v0
    v1[v1 != 0] = a1[v1 != 0] - 5
    return v1


def _inputs():
    a0 = np.array([1, 1, 0, 1], dtype=np.uint8).reshape((1, 1, 4))
    a1 = np.array([0.0, 0.0, 1.0, 1.0], dtype=np.float32).reshape((1, 1, 4))
    return [a0, a1]


def test_fuzz_cuda_s61_p5838():
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
        if False and e.dtype.kind == "f":   # zeros keep NumPy's sign
            zero = (a == 0) & (e == 0)
            np.testing.assert_array_equal(np.signbit(a)[zero], np.signbit(e)[zero])
