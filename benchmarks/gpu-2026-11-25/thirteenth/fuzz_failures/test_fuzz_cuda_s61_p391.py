"""Found by `kfuse fuzz --seed 61` (program 391, backend cuda): mismatch.

    output 0: Arrays are not equal

    Mismatched elements: 3 / 14 (21.4%)
    Mismatch at indices:
     [3, 1]: 0 (ACTUAL), 4294966406 (DESIRED)
     [5, 0]: 0 (ACTUAL), 4294967295 (DESIRED)
     [6, 0]: 4294967295 (ACTUAL), 0 (DESIRED)
    Max absolute difference among violations: 890
    Max relative difference among violations: 2.07219316e-07
     ACTUAL: array([[         3,          3],
           [         3,          3],
           [         3,          3],...
     DESIRED: array([[         3,          3],
           [         3,          3],
           [         3,          3],...
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0, a1):
    v0 = a0.copy()
    v0[v0 != 0] = a1[v0 != 0] * 3
    return v0


def _inputs():
    a0 = np.array([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], dtype=np.uint32).reshape((7, 2))
    a1 = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -296.75, 1.0, 1.5, -0.41796875, 0.5, inf, 4.0], dtype=np.float16).reshape((7, 2))
    return [a0, a1]


def test_fuzz_cuda_s61_p391():
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
