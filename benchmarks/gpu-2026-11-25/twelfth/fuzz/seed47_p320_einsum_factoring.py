"""Found by `kfuse fuzz --seed 47` (program 320, backend cuda): mismatch.

    output 0: Not equal to tolerance rtol=0.0002, atol=1e-05

    nan location mismatch:
     ACTUAL: array([[[  7.],
            [  7.],
            [  7.],...
     DESIRED: array([[[  7.],
            [  7.],
            [  7.],...
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0):
    v0 = np.einsum('...ij,...jk->...ik', a0, a0)
    return v0


def _inputs():
    a0 = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.7467272281646729, 1.0, 0.7376344799995422, -1.6953858137130737, -inf, -1.5486117601394653, 332.7399597167969], dtype=np.float32).reshape((2, 7, 1))
    return [a0]


def test_fuzz_cuda_s47_p320():
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
        if False and e.dtype.kind == "f":   # zeros keep NumPy's sign
            zero = (a == 0) & (e == 0)
            np.testing.assert_array_equal(np.signbit(a)[zero], np.signbit(e)[zero])
