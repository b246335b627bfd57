"""0-d results on NumPy inputs come back as NumPy gives them: a ufunc's, a reduction's or a
contraction's 0-d result (``x.sum()``) as a NumPy scalar, an argument or a view of a 0-d array as a
0-d ndarray (CuPy and torch keep their 0-d arrays and tensors)."""
import numpy as np
import pytest

import kfuse

V = np.arange(1.0, 4.0, dtype=np.float32)
M = np.arange(12.0).reshape(3, 4)
Z = np.array(1.5)

CASES = {
    "sum": (lambda x: x.sum(), V),
    "mean and row max": (lambda x: (x.mean(), x.max(axis=0)), M),
    "argmax": (lambda x: x.argmax(), M),
    "ufunc of 0-d": (lambda x: np.exp(x), Z),
    "0-d arithmetic": (lambda x: x * 2 + 1, Z),
    "vector dot": (lambda x: x @ x, V),
    "np.dot": (lambda x: np.dot(x, x), V),
    "einsum": (lambda x: np.einsum("i,i", x, x), V),
    "element": (lambda x: x[1, 2], M),
    "astype of a sum": (lambda x: x.sum().astype(np.float64), V),
    "dict of both": (lambda x: {"s": x.sum(), "y": x * 2}, V),
    # NumPy keeps these 0-d arrays
    "argument": (lambda x: x, Z),
    "view": (lambda x: x[...], Z),
    "copy": (lambda x: x.copy(), Z),
    "where": (lambda x: np.where(x > 0, x, 0.0), Z),
    "reshape": (lambda x: x.reshape(()), np.ones(1)),
}


def _kinds(v):
    if isinstance(v, tuple):
        return tuple(_kinds(i) for i in v)
    if isinstance(v, dict):
        return {k: _kinds(i) for k, i in v.items()}
    return type(v), getattr(v, "dtype", None), np.ndim(v)


@pytest.mark.parametrize("name", list(CASES))
def test_zero_d_results_match_numpy_types(name):
    fn, arg = CASES[name]
    want = fn(arg.copy())
    got = kfuse.jit(fn)(arg.copy())
    assert _kinds(got) == _kinds(want), (got, want)
    np.testing.assert_allclose(np.asarray(got if not isinstance(got, (tuple, dict)) else 0),
                               np.asarray(want if not isinstance(want, (tuple, dict)) else 0))


def test_sum_is_a_numpy_scalar():
    s = kfuse.jit(lambda x: x.sum())(V)
    assert type(s) is np.float32 and s == np.float32(6.0)


def test_allclose_is_a_scalar():
    """NumPy's np.allclose gives a Python bool; kfuse too on NumPy inputs (not a 0-d array)."""
    got = kfuse.jit(lambda x: np.allclose(x, x))(V)
    assert got is True
