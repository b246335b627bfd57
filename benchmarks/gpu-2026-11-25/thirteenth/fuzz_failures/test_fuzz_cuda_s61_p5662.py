"""Found by `kfuse fuzz --seed 61` (program 5662, backend cuda): mismatch.

    output 0: Arrays are not equal

    Mismatched elements: 8 / 8 (100%)
    First 5 mismatches are at indices:
     [0, 0, 0]: 0 (ACTUAL), 18446744073709551612 (DESIRED)
     [0, 1, 0]: 0 (ACTUAL), 18446744073709551612 (DESIRED)
     [1, 0, 0]: 0 (ACTUAL), 18446744073709551612 (DESIRED)
     [1, 1, 0]: 0 (ACTUAL), 18446744073709551612 (DESIRED)
     [2, 0, 0]: 0 (ACTUAL), 18446744073709551612 (DESIRED)
    Max absolute difference among violations: 4
    Max relative difference among violations: 2.16840434e-19
     ACTUAL: array([[[0],
            [0]],
    ...
     DESIRED: array([[[18446744073709551612],
            [18446744073709551612]],
    ...
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = a0.copy()
    v0[v0 > 1000.0] = 4
    v0[v0 != 0] = a0[v0 != 0] - np.int64(5)
    return v0


def _inputs():
    a0 = np.array([1, 1, 1, 1, 1, 1, 1, 1], dtype=np.uint64).reshape((4, 2, 1))
    return [a0]


def test_fuzz_cuda_s61_p5662():
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
