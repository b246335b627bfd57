"""Found by `kfuse fuzz --seed 43` (program 1602, backend numba-cuda): mismatch.

    output 0: signed zero differs at (0, 0): kfuse np.float16(0.0), numpy np.float16(-0.0)
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0, a1):
    v0 = (a1 < a0)
    v1 = v0.astype(np.float32)
    v2 = np.maximum(v1, (-0.0))
    return v2


def _inputs():
    a0 = np.array([1], dtype=np.uint16).reshape(())
    a1 = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0], dtype=np.float16).reshape((3, 2))
    return [a0, a1]


def test_fuzz_numba_cuda_s43_p1602():
    args = _inputs()
    with np.errstate(all="ignore"):
        expected = fuzz_fn(*[a.copy() for a in args])
    actual = kfuse.jit(fuzz_fn, backend="numba-cuda")(*args)
    if not isinstance(expected, tuple):
        expected, actual = (expected,), (actual,)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_matches_numpy(a, e, reductions=False)
        a, e = np.asarray(a), np.asarray(e)
        if True and e.dtype.kind == "f":   # zeros keep NumPy's sign
            zero = (a == 0) & (e == 0)
            np.testing.assert_array_equal(np.signbit(a)[zero], np.signbit(e)[zero])
