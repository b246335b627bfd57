"""Item assignment and in-place operators through ``kfuse.jit`` on every backend against NumPy
(kfuse/trace/mutation.py): writes into regions, through views (slices, reversed slices,
transposes, added axes) and back, boolean-mask writes, augmented assignment with NumPy's
casting rule, aliases that see the write and scalars that do not."""
import numpy as np
import pytest

import kfuse
from kfuse.errors import UnsupportedError
from tolerance import assert_matches_numpy


def region_writes(a):
    b = a.copy()
    b[0] = 1
    b[:, 2] += 3
    b[-1, ::-2] = a[0, :4]
    return b


def write_through_reversed_view(a):
    b = a * 2
    v = b[1:, ::-1]
    v[1] = -5
    return b, v


def write_through_transpose(a):
    b = a + 0
    t = b.T
    t[0, :] = 7
    b += 1
    return b, t


def mask_writes(a):
    b = a * 1
    b[b < 0] = 0
    rows = b[:, 0] > 1
    b[rows] = a[0]
    return b


def into_zeros_like(a):
    b = np.empty_like(a)
    b[...] = 0
    b[::2, 1::3] = a[::2, 1::3] * 3
    b[-1] = np.arange(a.shape[1])
    return b


def augmented(a):
    b = a.astype(np.float64)
    b *= 2.5
    b -= a
    b /= 3
    b **= 2
    return b


def scalars_rebind(a):
    b = a * 1
    s = b.sum()
    s += 1
    t = b[0, 0]
    u = t
    t += 10
    return b, s, t, u


def aliases_see_writes(a):
    b = a + 1
    c = b
    c += 1
    e = b[None, ..., None]
    e[0, 2, :, 0] = 9
    return b, c


def overlapping_copy(a):
    b = a.copy()
    b[1:3] = b[0:2]
    b[...] = b * 2
    b[2, 3] = -1
    return b


def write_then_reduce(a):
    b = a.copy()
    b[:, 0] = 0
    b[1] = b[1] - b[1].max()
    return b.sum(axis=1), np.exp(b - b.max(axis=1, keepdims=True))


def masked_update(a):
    b = a.copy()
    b[b > 0] *= 2
    m = a < 0
    b[m] = np.where(a[m] < -1, -1, a[m])
    return b


def masked_reductions(a):
    rows = a[:, 0] > 0
    return (a[a > 0].sum(), a[a > 1].mean(), np.max(a[a < 0]), a[a > 0].astype(np.float64).std(),
            a[rows].sum(axis=0), a[rows].max(axis=0, keepdims=True), (a[rows] ** 2).mean(axis=(0, 1)))


def selection_alias(a):
    s = a[a > 0]
    t = s
    s += 1
    b = np.zeros_like(a)
    b[a > 0] = t
    b[a < 0] = -a[a < 0]
    return b


FUNCS = [masked_update, masked_reductions, selection_alias, region_writes, write_through_reversed_view, write_through_transpose, mask_writes,
         into_zeros_like, augmented, scalars_rebind, aliases_see_writes, overlapping_copy,
         write_then_reduce]


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("fn", FUNCS, ids=lambda f: f.__name__)
def test_writes_match_numpy(backend, fn, dtype, cupy_for):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((5, 7)) * 4).astype(dtype)
    with np.errstate(all="ignore"):
        want = fn(a.copy())
    want = want if isinstance(want, tuple) else (want,)
    f = kfuse.jit(fn, backend=backend)
    with np.errstate(all="ignore"):
        if backend == "cpu":
            got = f(a)
        else:
            cp = cupy_for(backend)
            got = f(cp.asarray(a))
            got = tuple(cp.asnumpy(g) for g in got) if isinstance(got, tuple) else cp.asnumpy(got)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        assert_matches_numpy(g, w, reductions=True)


def _reshape_write(a):
    b = a.copy()
    r = b.reshape(-1)
    r[0] = 1
    return b


def _reshape_read_after_write(a):
    b = a.copy()
    r = b.reshape(-1)
    b[0] = 1
    return r


def _broadcast_write(a):
    v = np.broadcast_to(a[0], a.shape)
    v[0, 0] = 1
    return v


def _masked_other_mask(a):
    b = a * 2
    b[b > 3] = a[a > 3] * 2
    return b


def _return_selection(a):
    return a[a > 3]


def _selection_length(a):
    return a * len(a[a > 3])


def _int_iadd_float(a):
    b = a.copy()
    b += 1.5
    return b


def _non_broadcastable_iadd(a):
    b = a[0].copy()
    b += a
    return b


def _bad_value_shape(a):
    b = a.copy()
    b[0] = a[:2, :3]
    return b


@pytest.mark.parametrize("fn, error, text", [
    (_reshape_write, UnsupportedError, "through a reshape"),
    (_reshape_read_after_write, UnsupportedError, "reshaped array"),
    (_broadcast_write, ValueError, "read-only"),
    (_masked_other_mask, UnsupportedError, "different mask"),
    (_return_selection, UnsupportedError, "boolean-indexed array"),
    (_selection_length, UnsupportedError, "len() of a boolean-indexed array"),
    (_int_iadd_float, TypeError, "same_kind"),
    (_non_broadcastable_iadd, ValueError, "non-broadcastable output operand"),
    (_bad_value_shape, ValueError, "could not broadcast input array from shape (2,3) into shape (7,)"),
], ids=lambda v: getattr(v, "__name__", None) if callable(v) else None)
def test_refused_writes_name_the_line(fn, error, text):
    a = np.arange(35, dtype=np.int64).reshape(5, 7)
    with pytest.raises(error) as info:
        kfuse.jit(fn, fullgraph=True)(a)
    message = "\n".join([str(info.value)] + getattr(info.value, "__notes__", []))
    assert text in message
    assert "test_mutation.py:" in message
    if error is not UnsupportedError:       # NumPy raises the same type on the same code
        with pytest.raises(error) as numpy_info:
            fn(a.copy())
        assert type(info.value) is type(numpy_info.value)


def _constant_writes(a):
    b = a.astype(np.uint16)
    b[0] = np.int64(-1)             # a NumPy integer scalar wraps (GPU fuzz seed 61 #4430)
    b[1, :2] = np.float32(70000.5)  # a NumPy float scalar casts unsafely
    b[2] = True
    return b


def _python_int_out_of_range(a):
    b = a.astype(np.uint16)
    b[0] = -1                       # a Python int out of range raises, as in NumPy
    return b


def test_constants_convert_as_numpy_setitem_does():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    with np.errstate(all="ignore"):
        want = _constant_writes(a)
        got = kfuse.jit(_constant_writes)(a)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    with pytest.raises(OverflowError) as numpy_info:
        _python_int_out_of_range(a)
    with pytest.raises(OverflowError) as info:
        kfuse.jit(_python_int_out_of_range)(a)
    assert str(numpy_info.value) in str(info.value) and "test_mutation.py:" in str(info.value)


def ufunc_out(a):
    b = np.empty_like(a, dtype=np.float64)
    np.multiply(a, 2, out=b)
    c = np.zeros_like(a)
    np.add(a, 1, out=c, where=a > 0)
    q, r = np.zeros_like(a), np.zeros_like(a)
    np.divmod(a, 3, out=(q, r))
    np.clip(a[0], -2, 2, out=c[0])
    e = np.zeros_like(a, dtype=np.int16)
    np.clip(a * 1.5, -2.5, 2.5, out=e, casting="unsafe")
    d = np.zeros((3,) + a.shape[1:], a.dtype)[0] * a[:1]      # (1, n), broadcast into by out=
    np.negative(a[0], out=d)
    return b, c, q, r, d, e


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_ufunc_out_matches_numpy(backend, dtype, cupy_for):
    test_writes_match_numpy(backend, ufunc_out, dtype, cupy_for)


def _out_wrong_casting(a):
    b = np.zeros_like(a, dtype=np.int32)
    np.true_divide(a, 2, out=b)
    return b


def _out_too_small(a):
    b = np.zeros_like(a[0])
    np.add(a, 1, out=b)
    return b


@pytest.mark.parametrize("fn, error, text", [
    (_out_wrong_casting, TypeError, "same_kind"),
    (_out_too_small, ValueError, "non-broadcastable output operand with shape (7,)"),
], ids=lambda v: getattr(v, "__name__", None) if callable(v) else None)
def test_refused_out_names_the_line(fn, error, text):
    test_refused_writes_name_the_line(fn, error, text)


def optimizer_step(p, g, m, lr):
    """An in-place Adam-like update of its arguments, as NumPy code writes it."""
    m *= 0.9
    m += 0.1 * g
    p -= lr * m
    p[0] = 0                        # and a region write, and a write through a view
    p.T[-1] += 1
    return float(0) + np.abs(m).max()


def test_writes_into_arguments_reach_the_caller(backend, cupy_for):
    rng = np.random.default_rng(5)
    p, g, m = (rng.standard_normal((6, 5)).astype(np.float32) for _ in range(3))
    want_p, want_m = p.copy(), m.copy()
    want = optimizer_step(want_p, g, want_m, 0.01)
    f = kfuse.jit(optimizer_step, backend=backend)
    if backend == "cpu":
        got_p, got_m = p.copy(), m.copy()
        got = f(got_p, g, got_m, 0.01)
    else:
        cp = cupy_for(backend)
        dp, dm = cp.asarray(p), cp.asarray(m)
        got = cp.asnumpy(f(dp, cp.asarray(g), dm, 0.01))
        got_p, got_m = cp.asnumpy(dp), cp.asnumpy(dm)
    assert_matches_numpy(np.asarray(got), np.asarray(want))
    assert_matches_numpy(got_p, want_p)
    assert_matches_numpy(got_m, want_m)


def _write_first(a, b):
    a += b
    return a.sum()


def test_written_argument_must_not_alias_another():
    a = np.ones((4, 4), np.float32)
    with pytest.raises(UnsupportedError, match="shares memory with argument 'b'"):
        kfuse.jit(_write_first)(a, a[::-1])
    np.testing.assert_array_equal(a, 1)                 # nothing half-written
    with pytest.raises(ValueError, match="read-only"):
        kfuse.jit(_write_first)(np.broadcast_to(np.ones(4, np.float32), (4, 4)), a)
    b = np.ones((4, 4), np.float32)
    assert kfuse.jit(_write_first)(b, a) == 32 and (b == 2).all()


def _step_returning_arguments(p, g, m):
    m *= 0.9
    p -= 0.1 * g
    return p, {"m": m, "p2": p * 2}, [g]


def test_returned_written_argument_is_the_callers_array(backend, cupy_for):
    """NumPy returns the argument object a function wrote into; so does kfuse (with its final
    value), in every container of the return structure; an argument not written is itself too."""
    rng = np.random.default_rng(6)
    p, g, m = (rng.standard_normal((4, 3)).astype(np.float32) for _ in range(3))
    want_p, want_m = p.copy(), m.copy()
    want = _step_returning_arguments(want_p, g, want_m)
    xp = np if backend == "cpu" else cupy_for(backend)
    dp, dg, dm = (xp.asarray(a) for a in (p, g, m))
    got_p, got_d, got_l = kfuse.jit(_step_returning_arguments, backend=backend)(dp, dg, dm)
    assert got_p is dp and got_d["m"] is dm and got_l[0] is dg
    for got, w in [(got_p, want_p), (got_d["m"], want_m), (got_d["p2"], want[1]["p2"])]:
        assert_matches_numpy(np.asarray(got if xp is np else xp.asnumpy(got)), w)


def _selection_extremes(x):
    s = x[x > 10]
    return s.max(), s.min(axis=0), s.sum()


@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_empty_selection_max_raises_as_numpy(backend, dtype, cupy_for):
    """x[mask].max() of an empty selection raises NumPy's ValueError (a run-time check, naming the
    line), and returns NumPy's values when the selection is not empty."""
    x = np.arange(12).reshape(4, 3).astype(dtype)
    xp = np if backend == "cpu" else cupy_for(backend)
    f = kfuse.jit(_selection_extremes, backend=backend)
    got = f(xp.asarray(x + 5))
    for g, w in zip(got, _selection_extremes(x + 5)):
        np.testing.assert_array_equal(np.asarray(g if xp is np else xp.asnumpy(g)), w)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        _selection_extremes(x - 20)
    with pytest.raises(ValueError, match=r"reduction operation maximum which has no identity \(at .*test_mutation\.py"):
        f(xp.asarray(x - 20))
