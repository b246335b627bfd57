"""Bug 40 (found by the fuzzer's scatter kind, 2026-11-25/26), on every backend: indexing with a
traced integer scalar that NumPy holds as a Python int or NumPy scalar (``x[i]`` of an int
argument, ``x[v.argmin()]``, a ``np.int64`` argument) is basic indexing in NumPy, a view; kfuse
took a copy, so a write into the view (``row = x[i]; row *= 2``) never reached ``x`` and a write
into ``x`` never showed through the view: silently wrong results. A 0-d integer array index is
advanced indexing in NumPy (a copy) and stays one. A NumPy scalar argument also takes no
ndarray ``**`` fast path now (``np.True_ ** 2`` is int64, bug 23's class)."""
import numpy as np
import pytest


def write_seen_through_view(a):
    w = a[a[:, 0].argmin()]
    a[...] = 0.0
    return w


def write_through_view(a, i):
    row = a[i]
    row *= 2
    return a


def views_of_views(a, i):
    w = a[i]
    w[1:] = -1
    v = w[::-1]
    v += 10
    return a, w, v


def column_view(a, i):
    c = a[:, i]
    c -= 1
    a[0] = 5
    return c, a


def zero_d_array_index_copies(a, i):
    c = a[i]            # i a 0-d array: a copy, as in NumPy
    c += 1
    return a, c


X = np.arange(12.0).reshape(3, 4)
CASES = [(write_seen_through_view, (X,)), (write_through_view, (X, 1)), (write_through_view, (X, np.int64(-1))),
         (views_of_views, (X, 2)), (column_view, (X, np.int32(2))), (zero_d_array_index_copies, (X, np.array(1)))]


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


@pytest.mark.parametrize("fn, args", CASES, ids=[f"{c[0].__name__}-{type(c[1][-1]).__name__}" for c in CASES])
def test_scalar_index_is_a_view_as_in_numpy(fn, args, backend, cupy_for):
    import kfuse
    want = fn(*_copy(args))
    if backend == "cpu":
        got = kfuse.jit(fn, backend=backend)(*_copy(args))
    else:                   # (scalars stay scalars: a 0-d device array would index as an array)
        cp = cupy_for(backend)
        got = kfuse.jit(fn, backend=backend)(*[cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
        got = tuple(cp.asnumpy(g) for g in got) if isinstance(got, tuple) else cp.asnumpy(got)
    want, got = (want if isinstance(want, tuple) else (want,)), (got if isinstance(got, tuple) else (got,))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("v", [np.True_, np.array(True), np.int8(3)], ids=type)
def test_numpy_scalar_argument_power_dtype(v):
    import kfuse

    def f(x):
        return x ** 2
    assert kfuse.jit(f, backend="cpu")(v).dtype == f(v).dtype
