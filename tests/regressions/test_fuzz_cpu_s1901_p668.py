"""Found by `kfuse fuzz --seed 1901` (program 668, backend cpu): mismatch. np.add.at of a float16
value into a uint8 array computes in float16 and casts each sum back (NumPy); kfuse summed the
values in int32 first (the histogram rewrite, right only for an integer loop).

    output 0: Arrays are not equal

    Mismatched elements: 1 / 7 (14.3%)
    Mismatch at index:
     [1]: 1 (ACTUAL), 0 (DESIRED)
    Max absolute difference among violations: 1
    Max relative difference among violations: inf
     ACTUAL: array([1, 1, 1, 1, 1, 1, 1], dtype=uint8)
     DESIRED: array([1, 0, 1, 1, 1, 1, 1], dtype=uint8)
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0, a1):
    v0 = a1
    np.add.at(v0, (a1.astype(np.int32) % 7), a0)
    return v0


def _inputs():
    a0 = np.array([-0.006259918212890625], dtype=np.float16).reshape(())
    a1 = np.array([1, 1, 1, 1, 1, 1, 1], dtype=np.uint8).reshape((7,))
    return [a0, a1]


def test_fuzz_cpu_s1901_p668():
    args = _inputs()
    with np.errstate(all="ignore"):
        want_args = [a.copy() for a in args]
        expected = fuzz_fn(*want_args)
    actual = kfuse.jit(fuzz_fn, backend="cpu")(*args)
    if not isinstance(expected, tuple):
        expected, actual = (expected,), (actual,)
    assert len(actual) == len(expected)
    for a, e in zip(list(actual) + args, list(expected) + want_args):   # the arguments written too
        assert_matches_numpy(a, e, reductions=False)
        a, e = np.asarray(a), np.asarray(e)
        if True and e.dtype.kind == "f":   # zeros keep NumPy's sign
            zero = (a == 0) & (e == 0)
            np.testing.assert_array_equal(np.signbit(a)[zero], np.signbit(e)[zero])
