"""cpu seed 2201 #1776 (2026-11-27): index arrays that broadcast to no element are not checked
against the axis, as NumPy reads (and checks) none: ``x[[False, False], a]`` with ``a`` holding 2
for an axis of size 1 is an empty result in NumPy; kfuse raised IndexError."""
import numpy as np
import pytest

import kfuse


def test_empty_broadcast_reads_no_index():
    x = np.zeros((2, 1))
    a = np.array([[2], [2]], np.uint64)
    f = kfuse.jit(lambda x, a: (x[[False, False], a] + 1, x[np.array([], int)[:, None], np.array([[5]])]),
                  backend="cpu")
    for got, want in zip(f(x, a), (x[[False, False], a] + 1, x[np.array([], int)[:, None], np.array([[5]])])):
        assert got.shape == want.shape and got.dtype == want.dtype


def test_a_non_empty_one_is_still_checked():
    x = np.zeros((2, 1))
    f = kfuse.jit(lambda x, a: x[np.array([0])[:, None], a], backend="cpu")
    with pytest.raises(IndexError, match="out of bounds"):
        f(x, np.array([5]))
