"""Found by `kfuse fuzz --seed 49` (program 5821, backend cuda): mismatch.

    output 0: Not equal to tolerance rtol=2e-05, atol=1e-06

    Mismatched elements: 1 / 2 (50%)
    Mismatch at index:
     [0]: 2.875546932220459 (ACTUAL), 2.8753397464752197 (DESIRED)
    Max absolute difference among violations: 0.00020719
    Max relative difference among violations: 7.205609e-05
     ACTUAL: array([2.875547,      nan], dtype=float32)
     DESIRED: array([2.87534,     nan], dtype=float32)
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = np.log10(a0)
    v1 = np.fmod(a0, v0)
    return v1


def _inputs():
    a0 = np.array([3028, 1], dtype=np.int16).reshape((2,))
    return [a0]


def test_fuzz_cuda_s49_p5821():
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
