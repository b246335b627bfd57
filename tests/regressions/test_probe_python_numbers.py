"""Probe (user code): what a function returns that NumPy gives as a Python number stays one:
a Python int or float computed while tracing (``x.shape[0]``, ``len(x)``, ``float(n)``), a Python
number argument and Python arithmetic on it (``lr * 2``), ``np.allclose``'s bool; they came back
as 0-d arrays or NumPy scalars. And a Python int argument in ``if n > 0:``, ``float(n)`` or
``np.arange(n)`` is specialised on its value as a size is (it broke the graph, and its eager
comparison, two weak ints, resolved to NumPy's object loop, which the CPU kernel could not
compile); an empty ``max(initial=)`` reduced to 0-d is a NumPy scalar, as NumPy's."""
import numpy as np
import pytest

import kfuse


def _same(got, want):
    assert type(got) is type(want), (got, want)
    if isinstance(got, (tuple, list)):
        for g, w in zip(got, want):
            _same(g, w)
    elif isinstance(got, dict):
        assert got.keys() == want.keys()
        for k in got:
            _same(got[k], want[k])
    else:
        np.testing.assert_array_equal(got, want)


CASES = {
    "shape": (lambda x, a, n: (x * 2, x.shape[0], len(x), float(x.shape[1]), x.shape), ()),
    "arguments": (lambda x, a, n: (a, n, a * 2, n + 1, -a, x.sum() > 0), ()),
    "dict": (lambda x, a, n: {"n": x.size, "inf": float("inf"), "ok": True, "y": x + a}, ()),
    "allclose": (lambda x, a, n: (np.allclose(x, x + a), np.isclose(x, x).all()), ()),
    "empty_max": (lambda x, a, n: np.max(x[:0, 0], initial=-np.inf), ()),
}


@pytest.mark.parametrize("name", CASES)
def test_returned_numbers_keep_numpys_types(name):
    f, _ = CASES[name]
    jf = kfuse.jit(f, backend="cpu")
    for x, a, n in ((np.ones((3, 4)), 0.5, 3), (np.ones((5, 4)), 1e-9, 4), (np.ones((5, 4)), 2.5, 4)):
        _same(jf(x, a, n), f(x, a, n))


def test_int_argument_control_flow_is_specialised():
    def f(x, n):
        if n > 2:
            return x * 2
        return x - float(n)
    jf = kfuse.jit(f, backend="cpu")
    x = np.arange(4.0)
    for n in (3, 1, 3, 5):
        np.testing.assert_array_equal(jf(x, n), f(x, n))
    assert jf.compile_count == 3                    # one per value of n, no graph break
    assert "graph break" not in str(kfuse.explain(jf, x, 3))


def test_one_hot_of_an_int_argument():
    def one_hot(labels, n):
        return (labels[:, None] == np.arange(n)).astype(np.float32)
    jf = kfuse.jit(one_hot, backend="cpu")
    lab = np.array([0, 3, 1, 2])
    for n in (4, 6):
        np.testing.assert_array_equal(jf(lab, n), one_hot(lab, n))
    assert "graph break" not in str(kfuse.explain(jf, lab, 4))


def test_two_python_ints_compare_in_int64():
    f = lambda x, n: (x * (n > 2), n == 3)   # noqa: E731
    g = kfuse.jit(f, backend="cpu").trace(np.ones(2), 3)
    assert all(n.dtype != np.object_ for n in g.nodes())
