"""Issue 35: (a) an in-place operator on a NumPy or Python scalar argument (``s += t``) rebinds the
name, as NumPy scalars are immutable: it raised AttributeError ('memoryview' object has no attribute
'ptr'), a same_kind casting error or a broadcast error NumPy does not raise; (b) a ``kfuse.jit``
function called inside another is inlined into the caller's trace (one plan, fused across the
call), as ``jax.jit`` does: it raised UnsupportedError (conversion of a tracer to an array)."""
import numpy as np
import pytest

import kfuse


def _same(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want):
        assert type(g) is type(w), (type(g), type(w))   # Python arithmetic stays a Python number
        assert np.asarray(g).dtype == np.asarray(w).dtype and np.shape(g) == np.shape(w)
        np.testing.assert_array_equal(g, w)


def add_then_use(s, t, a):
    s += t
    return a + s, s


def add_array(s, a):
    s += a
    s *= 2
    return s


SCALARS = [(np.float64(1.5), np.float64(2.0)), (np.int64(1), np.uint64(2)), (np.int64(3), np.int64(4)),
           (np.float32(1.0), np.int64(2)), (np.int8(100), 100), (2.5, np.float32(1.0)), (3, 4), (True, 2.5)]


@pytest.mark.parametrize("s,t", SCALARS, ids=repr)
def test_scalar_argument_updated_in_place(s, t):
    a = np.arange(3, dtype=np.float32)
    with np.errstate(all="ignore"):
        want = add_then_use(s, t, a)
    _same(kfuse.jit(add_then_use, backend="cpu")(s, t, a), want)


@pytest.mark.parametrize("s", [np.float64(1.5), np.int64(2), np.uint8(3), 1.5, 2], ids=repr)
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint16"])
def test_scalar_argument_plus_array_becomes_the_array(s, dtype):
    a = np.arange(6, dtype=dtype).reshape(2, 3)
    with np.errstate(all="ignore"):
        want = add_array(s, a)
    _same(kfuse.jit(add_array, backend="cpu")(s, a), want)


def test_numpy_scalar_argument_is_not_written():
    def f(s):
        s[()] = 1.0
        return s
    with pytest.raises(TypeError):
        f(np.float64(0.0))
    with pytest.raises(TypeError):
        kfuse.jit(f, backend="cpu")(np.float64(0.0))


@kfuse.jit(static_argnames=("k",), backend="cpu")
def _inner(x, k, scale=2.0):
    return x * scale + k, x - k


@kfuse.jit(backend="cpu")
def _update(p, g, lr):
    p -= lr * g


def _outer(x):
    a, b = _inner(x, 3, scale=0.5)
    return np.exp(a) * b


def test_nested_jit_is_inlined_and_fused():
    x = np.linspace(-1, 1, 33)
    np.testing.assert_allclose(kfuse.jit(_outer)(x), np.exp(x * 0.5 + 3) * (x - 3), rtol=1e-12)
    plan = kfuse.explain(_outer, x)
    assert len(plan.groups) == 1                 # the callee's ops in the caller's one kernel


def test_nested_jit_writes_into_the_callers_arguments():
    def step(p, g):
        _update(p, g, lr=0.5)
        _update(p, g, 0.25)
        return p.sum()
    p, g = np.ones(5), np.arange(5.0)
    want_p = p - 0.75 * g
    assert kfuse.jit(step, backend="cpu")(p, g) == want_p.sum()
    np.testing.assert_array_equal(p, want_p)


def test_nested_jit_static_argument_must_be_static_in_the_caller():
    def bad(x, k):
        return _inner(x, k)[0]
    with pytest.raises(kfuse.UnsupportedError, match="static argument 'k'"):
        kfuse.jit(bad, backend="cpu")(np.ones(3), 2.0)
    ok = kfuse.jit(bad, backend="cpu", static_argnames="k")
    np.testing.assert_array_equal(ok(np.ones(3), 2), np.ones(3) * 2 + 2)


def test_nested_jit_bad_call_raises_pythons_error():
    def bad(x):
        return _inner(x)
    with pytest.raises(TypeError, match="_inner"):
        kfuse.jit(bad, backend="cpu")(np.ones(3))


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "numba-cuda"])
def test_gpu_nested_jit_and_scalar_update(run_jit, backend):
    def f(x):
        s = np.float32(2.0)
        s += x
        return _outer(x), s
    x = np.linspace(-1, 1, 33).astype(np.float32)
    got = run_jit(f, backend, x)
    want = f(x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5)
        assert g.dtype == w.dtype
