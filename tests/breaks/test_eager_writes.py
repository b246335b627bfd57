"""An unknown function run eagerly at a graph break may write into the arrays it gets: a write
into a view reaches the view's base as NumPy's does (fuzz cpu seed 100 #1004: ``np.add.at`` into a
reshaped argument was run on a private copy and the write was lost); a write through a reshape,
which NumPy sends to the base or to a copy depending on memory layout, is refused."""
import numpy as np
import pytest

import kfuse
from kfuse.errors import UnsupportedError


def through_views(a):
    v = a[:, 1:].T
    np.fill_diagonal(v[0], 7)           # (fill_diagonal is not traced: a graph break)
    np.fill_diagonal(v, -1)
    return v * 2, a + 1


def through_a_part(z):
    np.fill_diagonal(z.imag, 5)
    return z


@pytest.mark.parametrize("fn, dtype", [(through_views, np.float32), (through_views, np.complex128),
                                       (through_a_part, np.complex64)])
def test_writes_reach_the_base(fn, dtype):
    a = (np.arange(5 * 6 * 5).reshape(5, 6, 5) % 7 - 3).astype(dtype)
    if fn is through_a_part:
        a = a[0] + 1j * a[1]
    want_arg, got_arg = a.copy(), a.copy()
    want = fn(want_arg)
    got = kfuse.jit(fn, backend="cpu")(got_arg)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got_arg, want_arg)


def test_a_write_through_a_reshape_is_refused_and_writes_nothing():
    def f(a):
        b = a + 0
        a[0] = 9
        np.fill_diagonal(b.reshape(4, 6), 0)
        return b
    a = np.ones((6, 4))
    with pytest.raises(UnsupportedError, match="reshape"):
        kfuse.jit(f, backend="cpu")(a)
    np.testing.assert_array_equal(a, np.ones((6, 4)))


def test_a_read_through_a_reshape_runs():
    def f(a):
        return np.fft.rfft(a.reshape(-1)).real * 2
    a = np.random.default_rng(0).standard_normal((8, 16))
    np.testing.assert_allclose(kfuse.jit(f, backend="cpu")(a), f(a), rtol=1e-12, atol=1e-12)


def test_a_function_the_array_library_lacks_is_refused_clearly(monkeypatch):
    """On the GPU an eager call gets CuPy arrays, and CuPy has no np.fmax.at (cuda seed 21 #1106:
    NumPy's TypeError "operand type(s) all returned NotImplemented from __array_ufunc__" reached
    the caller); here the call is made to fail that way."""
    from kfuse.breaks import session

    def lacking(func, args, kwargs):
        raise TypeError("operand type(s) all returned NotImplemented from __array_ufunc__(...)")
    monkeypatch.setattr(session, "call", lacking)

    def f(a):
        b = a + 1
        np.fill_diagonal(b, 0)
        return b
    with pytest.raises(UnsupportedError, match="fill_diagonal.*numpy does not implement it"):
        kfuse.jit(f, backend="cpu")(np.ones((3, 3)))



def test_an_unknown_function_reading_a_broadcast_view():
    """A broadcast view is read-only (NumPy's too): nothing is written back after the call (the
    write-back through it raised NumPy's read-only ValueError)."""
    def f(a):
        return np.unique(np.broadcast_to(a, (3, a.size)), return_counts=True)[1] * 2
    a = np.array([3.0, 1.0, 3.0, 2.0])
    np.testing.assert_array_equal(kfuse.jit(f, backend="cpu")(a), f(a))
