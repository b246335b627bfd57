"""Found by `kfuse fuzz --seed 32` (program 6699, backend cuda): mismatch.

    output 0: Not equal to tolerance rtol=2e-05, atol=1e-06

    Mismatched elements: 2 / 14 (14.3%)
    Mismatch at indices:
     [1, 0]: 6.363969802856445 (ACTUAL), 6.363219261169434 (DESIRED)
     [1, 5]: 6.363969802856445 (ACTUAL), 6.363219261169434 (DESIRED)
    Max absolute difference among violations: 0.00075054
    Max relative difference among violations: 0.00011795
     ACTUAL: array([[5.628519e-01, 5.628519e-01, 5.628519e-01, 5.628519e-01,
            5.628519e-01, 5.628519e-01, 5.628519e-01],
           [6.363970e+00,          nan, 1.687594e-04, 5.628519e-01,
                     nan, 6.363970e+00, 1.687594e-04]], dtype=float32)
     DESIRED: array([[5.628545e-01, 5.628545e-01, 5.628545e-01, 5.628545e-01,
            5.628545e-01, 5.628545e-01, 5.628545e-01],
           [6.363219e+00,          nan, 1.687594e-04, 5.628545e-01,
                     nan, 6.363219e+00, 1.687594e-04]], dtype=float32)
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = np.exp(a0)
    v1 = np.expm1(v0)
    v2 = (v1 % v0)
    return v2


def _inputs():
    a0 = np.array([1, 1, 1, 1, 1, 1, 1, 2, 32766, -4, 1, 28857, 2, -4], dtype=np.int16).reshape((2, 7))
    return [a0]


def test_fuzz_cuda_s32_p6699():
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
