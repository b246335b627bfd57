"""Issue 35: ``np.nanprod``, ``np.nanvar``/``np.nanstd`` (``ddof``, ``axis``, ``keepdims``,
``dtype``, ``where``, all-NaN slices, ``ddof`` past the count) and ``np.copyto`` (a write into an
argument; ``casting=``, ``where=``, NumPy's exception types) were refused; now traced (CPU)."""
import warnings

import numpy as np
import pytest

import kfuse
from tests.tolerance import assert_matches_numpy


def _data(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5)).astype(dtype)
    if x.dtype.kind == "f":
        x[0, 1] = x[2, 3] = x[2, 0] = np.nan
        x[3] = np.nan                               # an all-NaN row
    else:
        x = (x * 4).astype(dtype)
    return x


def _check(fn, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (NumPy's "Degrees of freedom <= 0" and the like)
        want = fn(*args)
    got = kfuse.jit(fn, backend="cpu")(*args)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, want):
        assert type(g) is type(w) or isinstance(g, np.ndarray) == isinstance(w, np.ndarray)
        assert_matches_numpy(g, w, reductions=True)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "bool"])
def test_nanprod(dtype):
    _check(lambda x: (np.nanprod(x), np.nanprod(x, axis=1), np.nanprod(x, axis=0, keepdims=True),
                      np.nanprod(x, axis=1, dtype=np.float64)), _data(dtype))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int64", "uint8"])
@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
def test_nanvar_nanstd(dtype, name):
    f = getattr(np, name)
    _check(lambda x: (f(x), f(x, axis=1), f(x, axis=0, ddof=1), f(x, axis=1, keepdims=True, ddof=2),
                      f(x, axis=(0, 1), keepdims=True), f(x, axis=1, ddof=9), f(x, dtype=np.float64),
                      f(x, axis=1, correction=1)), _data(dtype))


def test_nanvar_where_and_mean():
    x = _data("float64")
    w = np.array([True, False, True, True, True])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = np.nanmean(x, axis=1, keepdims=True)
    _check(lambda a, ww, mm: (np.nanvar(a, axis=1, where=ww), np.nanstd(a, axis=1, mean=mm)), x, w, m)


def test_copyto_into_arguments():
    def f(d, s, m, k):
        np.copyto(d, s * 2)
        np.copyto(m, 7, where=s > 0)
        np.copyto(k, s, casting="unsafe")
    s = np.array([1.5, -2.0, 3.0])
    args = [np.zeros((2, 3)), s, np.zeros(3, np.int16), np.zeros(3, np.int8)]
    want = [a.copy() for a in args]
    f(*want)
    assert kfuse.jit(f, backend="cpu")(*args) is None
    for g, w in zip(args, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def _errors(fn, *args):
    with pytest.raises(Exception) as want:
        fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    with pytest.raises(type(want.value)):
        kfuse.jit(fn, backend="cpu")(*args)


@pytest.mark.parametrize("fn", [
    lambda d, s: np.copyto(d, s),                           # float64 into int64, same_kind
    lambda d, s: np.copyto(d, 1.5),
    lambda d, s: np.copyto(d, s[:2], casting="unsafe"),     # shapes
    lambda d, s: np.copyto(d, 1, where=[True, False]),
    lambda d, s: np.copyto(d, 1, where=d),                  # an int mask (safe cast to bool)
    lambda d, s: np.copyto(d, 3, casting="bad"),
    lambda d, s: np.copyto(d.astype(np.uint8), 300),
    lambda d, s: np.copyto(s + 1, s),                       # fine: a new traced array
    lambda d, s: np.copyto(np.float64(1.0), s),
])
def test_copyto_errors_are_numpys(fn):
    d, s = np.zeros(3, np.int64), np.ones(3)
    try:
        fn(d.copy(), s.copy())
    except Exception:  # noqa: BLE001
        _errors(fn, d, s)
    else:
        kfuse.jit(fn, backend="cpu")(d, s)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_full_nanmax_nanmin_are_numpy_scalars(dtype):
    x = np.array([np.nan, -0.0, -3.0, np.nan], dtype)
    for fn in (np.nanmax, np.nanmin):
        got, want = kfuse.jit(lambda a: fn(a), backend="cpu")(x), fn(x)
        assert type(got) is type(want) and np.signbit(got) == np.signbit(want) and got == want
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nans = np.full((2, 3), np.nan, dtype)
        nans[0, 1] = 0.0
        _check(lambda a: (np.nanmax(a), np.nanmin(a, axis=1), np.nanmax(a, axis=0, keepdims=True)), nans)
