"""Found by `kfuse fuzz --seed 65` (program 5063, backend cuda): mismatch.

    output 0: Arrays are not equal

    Mismatched elements: 1 / 28 (3.57%)
    Mismatch at index:
     [0, 1, 1]: 41849543192652896 (ACTUAL), 41849543192652888 (DESIRED)
    Max absolute difference among violations: 8
    Max relative difference among violations: 1.91160987e-16
     ACTUAL: array([[[               23,                16,                 1,
                            16,                 1,                 0,
                             1],...
     DESIRED: array([[[               23,                16,                 1,
                            16,                 1,                 0,
                             1],...
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0, a1):
    v0 = (a0 ** a1)
    v1 = np.clip(np.where(np.isfinite(v0), v0, 0), -9.223372036854776e+18, 4.611686018427388e+18).astype(np.int64)
    return v1


def _inputs():
    a0 = np.array([6, 5, 1, 5, 1, 0, 1, 2, 3148538324, 5, 1, 2054243527, 5, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], dtype=np.uint32).reshape((2, 2, 7))
    a1 = np.array([1.75], dtype=np.float32).reshape(())
    return [a0, a1]


def test_fuzz_cuda_s65_p5063():
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
