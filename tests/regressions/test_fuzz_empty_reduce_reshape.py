"""Found by `kfuse fuzz --backend numba-cuda --seed 22` (program 885), reproducible on every backend:
a mean over a non-empty axis of an array with a zero-length dim, then a reshape of the empty
result, raised CompileError in lowering ("reduction ... read at an index not aligned with the reduce
domain"): index maps through empty shapes are degenerate. The ``empty`` simplify pass
(kfuse/fusion/simplify.py) now turns every computed node with no elements into a broadcast
constant, so no kernel reads through such a map."""
import numpy as np
import pytest

import kfuse


@pytest.mark.parametrize("fn", [
    lambda a: a[1:].mean(axis=2, keepdims=True).reshape(2, -1),
    lambda a: (a * 2).sum(axis=2).T,
    lambda a: (a.max(axis=2, keepdims=True) + a[..., :1]).reshape(-1),
])
def test_empty_intermediates(fn):
    a = np.zeros((3, 0, 7), np.float32)
    expected = fn(a)
    got = kfuse.jit(fn, backend="cpu")(a)
    assert got.shape == expected.shape and got.dtype == expected.dtype
