"""Found by `kfuse fuzz --seed 41` (program 3720, backend cuda): mismatch.

    output 0: Arrays are not equal

    Mismatched elements: 1 / 1 (100%)
    Mismatch at index:
     [0]: 1 (ACTUAL), 65534 (DESIRED)
    Max absolute difference among violations: 3
    Max relative difference among violations: 4.57777642e-05
     ACTUAL: array([1], dtype=uint16)
     DESIRED: array([65534], dtype=uint16)
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0, a1):
    v0 = np.square(a0)
    v1 = v0.std(keepdims=True)
    v2 = np.where((v1 > 0), a1, (-2))
    return v2


def _inputs():
    a0 = np.array([64.64517489924327], dtype=np.float64).reshape(())
    a1 = np.array([1], dtype=np.uint16).reshape((1,))
    return [a0, a1]


def test_fuzz_cuda_s41_p3720():
    args = _inputs()
    with np.errstate(all="ignore"):
        expected = fuzz_fn(*[a.copy() for a in args])
    actual = kfuse.jit(fuzz_fn, backend="cuda")(*args)
    if not isinstance(expected, tuple):
        expected, actual = (expected,), (actual,)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_matches_numpy(a, e, reductions=True)
        a, e = np.asarray(a), np.asarray(e)
        if True and e.dtype.kind == "f":   # zeros keep NumPy's sign
            zero = (a == 0) & (e == 0)
            np.testing.assert_array_equal(np.signbit(a)[zero], np.signbit(e)[zero])
