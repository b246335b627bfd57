"""Found by `kfuse fuzz --seed 55` (program 817, backend cuda): crash.

    kfuse raised CompileError: kfuse: reduction <argmin i64[1, 2, 3]> read at an index not aligned with the reduce domain (3, 2, 3) (axes (0,))
    Traceback (most recent call last):
      File "/work/main/kfuse/codegen/lower.py", line 99, in _value
        return self.value(node.inputs[0], self.move_index(node, index))
               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
      File "/work/main/kfuse/codegen/lower.py", line 80, in value
        res = self._value(node, index)
              ^^^^^^^^^^^^^^^^^^^^^^^^
      File "/work/main/kfuse/codegen/lower.py", line 101, in _value
        return self.reduce_value(node, index)
               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
      File "/work/main/kfuse/codegen/lower.py", line 193, in reduce_value
        raise CompileError(f"kfuse: reduction {node!r} read at an index not aligned with the "
    kfuse.errors.CompileError: kfuse: reduction <argmin i64[1, 2, 3]> read at an index not aligned with the reduce domain (3, 2, 3) (axes (0,))
"""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

nan, inf = float("nan"), float("inf")


def fuzz_fn(a0, a1):
    v0 = np.argmin(a0, axis=-3, keepdims=True)
    v1 = np.where((a1 > 0), v0, (-3))
    v2 = v1.T
    return v2


def _inputs():
    a0 = np.array([1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0], dtype=np.int32).reshape((3, 2, 3))
    a1 = np.array([1.0, 1.0, 1.0], dtype=np.float64).reshape((3, 1, 1))
    return [a0, a1]


def test_fuzz_cuda_s55_p817():
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
