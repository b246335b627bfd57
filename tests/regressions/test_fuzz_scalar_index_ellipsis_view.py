"""cpu seed 2201 #3698 (2026-11-27): ``a[a.argmax(), ...]`` is a 0-d view in NumPy (an integer
index with ``...``), so a later write into ``a`` shows in it; kfuse returned the value read before
the write (a 0-d result at a traced integer was always a copy)."""
import numpy as np

import kfuse


def later_write(a):
    v = a[a.argmax(), ...]
    a[a != 0] = a[a != 0] - 1000
    return v


def write_through(a):
    v = a[a.argmax(), ...]
    v[...] = 7
    w = a[a.argmin()]                   # no ...: a scalar copy, as NumPy's
    a[:] = 3
    return a * 1, w


def test_scalar_index_with_ellipsis_is_a_view():
    for fn in (later_write, write_through):
        want_arg, got_arg = np.arange(1, 8), np.arange(1, 8)
        want, got = fn(want_arg), kfuse.jit(fn, backend="cpu")(got_arg)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(got_arg, want_arg)
