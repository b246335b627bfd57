"""Found by `kfuse fuzz --seed 66` (program 817, backend numba-cuda): mismatch.

    output 0: Not equal to tolerance rtol=0.0002, atol=1e-05

    nan location mismatch:
     ACTUAL: array(0., dtype=float32)
     DESIRED: array(nan, dtype=float32)
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = a0.astype(np.float32)
    v1 = np.prod(v0, axis=(0,))
    return v1


def _inputs():
    a0 = np.array([4940318926206233851, 6, -4, -9223372036854775807, 0], dtype=np.int64).reshape((5,))
    return [a0]


def test_fuzz_numba_cuda_s66_p817():
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
