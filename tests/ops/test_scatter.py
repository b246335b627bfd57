"""Writes at index positions (``x[idx] = v``, ``x[idx] += v``, ``ufunc.at``, ``np.put``,
``np.put_along_axis``) on every backend against NumPy, the arguments written included.

On the CPU a scatter runs its elements in C order, one at a time, so results are NumPy's bit for
bit, repeated positions included (the last assignment lands; ``np.add.at`` adds every one in
order). On a GPU the elements run in parallel: a plain assignment to a repeated position lands one
of the values (NumPy leaves which unspecified), so the GPU cases here repeat positions only under
``ufunc.at``; integer, boolean, max and min combines are exact, float sums within the tolerance
table (their order is the atomics')."""
import numpy as np
import pytest

import kfuse
from kfuse.errors import UnsupportedError
from tolerance import assert_matches_numpy


I = np.array([4, 0, -1, 2])              # distinct positions of a length-6 axis (-1 is 5)
D = np.array([1, 3, 3, -1, 1, 1, 0])     # repeated positions


def _x(dtype="float64", shape=(6, 5)):
    rng = np.random.default_rng(5)
    if np.dtype(dtype).kind == "f":
        return (rng.integers(-8, 8, shape) * 0.25).astype(dtype)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    return rng.integers(0 if dtype.startswith("u") else -50, 50, shape).astype(dtype)


# name -> (function, arguments, whether a GPU result is exact); each function writes into its
# first argument and returns something computed from it
CASES = {
    "set_rows": (lambda x, i: _set(x, i, x[0] * 3), (_x(), I), True),
    "set_scalar": (lambda x, i: _set(x, i, -1.5), (_x(), I), True),
    "set_cols": (lambda x, i: _set(x, (slice(None), i[:3]), 7.0), (_x(), I), True),
    "set_pairs": (lambda x, i: _set(x, (i, i[::-1]), x[i, 1] + 1), (_x(), I), True),
    "set_slice_and_array": (lambda x, i: _set(x, (slice(1, None), i[:2] % 5), 0.0), (_x(), I), True),
    "set_int_and_array": (lambda x, i: _set(x, (2, i[:3] % 5), 9.0), (_x(), I), True),
    "set_into_view": (lambda x, i: _view_set(x, i), (_x(), I), True),
    "set_into_transpose": (lambda x, i: (_set(x.T, (slice(None), i[:3] % 5), 2.0), x)[1], (_x(), I), True),
    "iadd_rows": (lambda x, i: _iadd(x, i), (_x(), I), True),
    "set_then_read": (lambda x, i: _set_then_read(x, i), (_x(), I), True),
    "set_computed_index": (lambda x, i: _set(x, np.abs(i) % 6, x[1] * 0.5), (_x(), I), True),
    "add_at": (lambda x, i: _at(np.add, x, i, 1.0), (_x(), D), False),
    "add_at_rows": (lambda x, i: _at(np.add, x, i, x[0]), (_x(), D), False),
    "add_at_int8": (lambda x, i: _at(np.add, x, i, 100), (_x("int8"), D), True),
    "add_at_int32_float": (lambda x, i: _at(np.add, x, i, 1.5), (_x("int32"), D), True),
    "add_at_uint8_sub": (lambda x, i: _at(np.subtract, x, i, 7), (_x("uint8"), D), True),
    "add_at_int64": (lambda x, i: _at(np.add, x, (i, i[::-1] % 5), -3), (_x("int64"), D), True),
    "add_at_float32": (lambda x, i: _at(np.add, x, i, x[1] * 0.5), (_x("float32"), D), False),
    # NumPy computes these in float64 and rounds back each time: float32 adds give the same values
    "add_at_float32_one": (lambda x, i: _at(np.add, x, (i, i % 5), 1), (_x("float32"), D), True),
    "max_at_float16_float32": (lambda x, i: _at(np.maximum, x, i, x[0].astype(np.float32)), (_x("float16"), D), True),
    "add_at_float16": (lambda x, i: _at(np.add, x, i, np.float16(0.25)), (_x("float16"), D), True),
    "or_at_bool": (lambda x, i: _at(np.logical_or, x, i, True), (_x("bool"), D), True),
    "max_at": (lambda x, i: _at(np.maximum, x, i, x[2] + 1), (_x(), D), True),
    "min_at_cols": (lambda x, i: _at(np.minimum, x, (slice(None), i % 5), -0.5), (_x("float32"), D), True),
    "max_at_int16": (lambda x, i: _at(np.maximum, x, i, 3), (_x("int16"), D), True),
    "multiply_at": (lambda x, i: _at(np.multiply, x, i, 2.0), (_x(), D), True),
    "add_at_slice": (lambda x, i: _at(np.add, x, slice(1, 3), x[0]), (_x(), D), True),
    "put": (lambda x, i: _put(x, i, [7.0, 8.0]), (_x(), I), True),
    "put_wrap": (lambda x, i: _put(x, i * 7, x[0, :3], mode="wrap"), (_x(), I), True),
    "put_clip": (lambda x, i: _put(x, i * 9, -2.0, mode="clip"), (_x(), I), True),
    "put_method": (lambda x, i: (x.put(i, 0.5), x)[1], (_x(), I), True),
    "put_along_axis": (lambda x, i: _pal(x, 1), (_x(), I), True),
    "put_along_axis0": (lambda x, i: _pal(x, 0), (_x("int32"), I), True),
}


# combines numba-cuda has no exact atomic for (codegen/numba_cuda_scatter.py): refused there
# (the 8-bit adds of as many values as elements are summed in int32 first, which numba-cuda has)
NUMBA_CUDA_REFUSED = {"max_at_float16_float32", "add_at_float16", "add_at_int32_float", "or_at_bool",
                      "max_at", "min_at_cols", "max_at_int16", "multiply_at"}


def _set(x, key, v):
    x[key] = v
    return x * 1


def _view_set(x, i):
    v = x[1:]
    v[i % 5, 1:3] = -4.0
    return v.sum(axis=1)


def _iadd(x, i):
    x[i] += 1.0
    return x


def _set_then_read(x, i):
    x[i] = x[i] * 2
    return x[i[::-1]] + x[0]


def _at(ufunc, x, key, b):
    ufunc.at(x, key, b)
    return x + (x if x.dtype == np.bool_ else 0)


def _put(x, i, v, mode="raise"):
    np.put(x, i, v, mode=mode)
    return x


def _pal(x, axis):
    idx = np.argmax(x, axis=axis, keepdims=True)
    np.put_along_axis(x, idx, 100, axis=axis)
    return x.sum(axis=axis)


def _run(backend, fn, args, cupy_for):
    f = kfuse.jit(fn, backend=backend)
    if backend == "cpu":
        got_args = [a.copy() for a in args]
        return f(*got_args), got_args
    cp = cupy_for(backend)
    dev = [cp.asarray(a) for a in args]
    out = f(*dev)
    return cp.asnumpy(out), [cp.asnumpy(a) for a in dev]


@pytest.mark.parametrize("case", sorted(CASES))
def test_scatter_matches_numpy(case, backend, cupy_for):
    fn, args, gpu_exact = CASES[case]
    want_args = [a.copy() for a in args]
    want = fn(*want_args)
    if backend == "numba-cuda" and case in NUMBA_CUDA_REFUSED:
        with pytest.raises(UnsupportedError, match="no exact atomic on the numba-cuda backend"):
            _run(backend, fn, args, cupy_for)
        return
    got, got_args = _run(backend, fn, args, cupy_for)
    for g, w in zip([got] + got_args, [want] + want_args):
        assert g.dtype == w.dtype and g.shape == w.shape
        if backend == "cpu" or gpu_exact:
            np.testing.assert_array_equal(g, w)
        else:
            assert_matches_numpy(g, w, reductions=True)


def test_repeated_positions_last_assignment_lands_on_cpu():
    def f(x, i, v):
        x[i] = v
        return x
    x, v = np.zeros(5), np.arange(7.0)
    got = kfuse.jit(f, backend="cpu")(x.copy(), D, v)
    want = np.zeros(5)
    want[D] = v
    np.testing.assert_array_equal(got, want)


def test_scatter_fuses_values_and_indices():
    def f(x, i, v):
        x[np.abs(i) % 6] = v * 2 + 1
        return x
    plan = kfuse.jit(f).lower(_x(), I, np.ones((4, 5)), backend="cpu").plan
    sc = [g for g in plan.groups if g.kind == "scatter"]
    assert len(sc) == 1
    assert {"absolute", "remainder", "multiply", "add", "scatter"} <= set(sc[0].ops)
    assert "scatter (assignment)" in sc[0].reason


def test_scatter_readers_run_in_a_later_kernel():
    def f(x, i):
        np.add.at(x, i, 1.0)
        return x * 2
    plan = kfuse.jit(f).lower(np.zeros(7), D, backend="cpu").plan     # the domain is x's shape
    kinds = [g.kind for g in plan.groups]
    assert kinds.index("scatter") < kinds.index("elementwise")
    from kfuse.fusion.legality import classify
    sc = next(g for g in plan.groups if g.kind == "scatter").anchor
    reader = next(g for g in plan.groups if g.kind == "elementwise").nodes
    shape, why = classify([sc, *[n for n in reader if n.op.value == "multiply"]],
                          {n: k for k, n in enumerate(plan.graph.nodes())})
    assert shape is None and "complete only when the scatter's kernel ends" in why


def test_out_of_range_index_raises_and_writes_nothing_back():
    def f(x, i):
        x[i] = 0.0
        return x
    x = _x()
    before = x.copy()
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 6"):
        kfuse.jit(f, backend="cpu")(x, np.array([0, 6]))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("fn, error, match", [
    (lambda x: x.__setitem__([0, 9], 1.0), IndexError, "index 9 is out of bounds"),
    (lambda x: np.subtract.at(x > 0, [0], True), TypeError, "boolean subtract"),
    (lambda x: np.add.at(x, [0, 1], np.ones(3)), ValueError, "not broadcastable"),
    (lambda x: x.__setitem__([0, 1], np.ones((3, 5))), ValueError, "could not broadcast"),
    (lambda x: np.add.at(np.zeros(6), [0], x[0, 0]), UnsupportedError, "np.add.at into a NumPy array"),
    (lambda x: np.negative.at(x, [0]), UnsupportedError, "np.negative.at"),
    (lambda x: np.add.at(x, x[:, 0] > 0, 1.0), UnsupportedError, "traced boolean mask"),
    (lambda x: np.put(x, [0], 1.0, mode="bad"), ValueError, "clipmode"),
    (lambda x: np.broadcast_to(x[0], (3, 5)).__setitem__([0], 1.0), ValueError, "read-only"),
    (lambda x: np.put_along_axis(x, np.zeros((6,), np.intp), 1.0, axis=1), ValueError, "same number of dimensions"),
])
def test_errors_name_the_line(fn, error, match):
    with pytest.raises(error, match=match) as e:
        kfuse.jit(fn, backend="cpu", fullgraph=True)(_x())
    assert "test_scatter.py" in str(e.value) + "".join(getattr(e.value, "__notes__", []))


def test_scatter_into_a_dead_intermediate_writes_in_place(backend, cupy_for):
    """``y = x * 2; y[i] = ...``: y's buffer is the scatter's output (no copy) unless y is still
    read (by the scatter's own values, a later kernel or as a result)."""
    def f(x, i):
        y = x * 2
        y[i] = 1.0
        return y + 1
    def g(x, i):
        y = x.sum(axis=1)
        y[i] = y[i[::-1]] * 3                 # the values read y's buffer before the write
        return y + 1
    args = (_x(), I)
    for fn, in_place in ((f, True), (g, False)):
        plan = kfuse.jit(fn).lower(*args, backend="cpu").plan
        sc = next(k for k in plan.groups if k.kind == "scatter")
        assert plan.scatters_in_place(sc) == in_place
        want = fn(*[a.copy() for a in args])
        got, _ = _run(backend, fn, args, cupy_for)
        for w, o in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
            np.testing.assert_array_equal(np.asarray(o), w)


def test_scatter_into_an_argument_writes_it_in_place_after_the_checks():
    """``np.add.at(t, ids, g)`` into an argument: the index check runs first, then the scatter
    writes the caller's array itself (no copy of it, none back); an index out of range raises
    before anything is written."""
    def f(t, ids, g):
        np.add.at(t, ids, g)
        return t
    t, g = np.zeros((8, 3)), np.ones((4, 3))
    jf = kfuse.jit(f, backend="cpu")
    plan = jf.lower(t, np.array([1, 1, 7, 0]), g).plan
    assert [plan.scatters_into_argument(k) for k in plan.groups] == [False, True]   # the check first
    assert jf(t, np.array([1, 1, 7, 0]), g) is t
    np.testing.assert_array_equal(t.sum(axis=1), [3, 6, 0, 0, 0, 0, 0, 3])
    with pytest.raises(IndexError, match="out of bounds"):
        jf(t, np.array([1, 9, 0, 0]), g)
    np.testing.assert_array_equal(t.sum(axis=1), [3, 6, 0, 0, 0, 0, 0, 3])


def test_scatter_into_an_argument_still_read_writes_a_copy():
    def f(t, ids):
        old = t * 1                      # read after the scatter in a later kernel: t's old value
        t[ids] = 0.0
        return old.sum() + t.sum()
    plan = kfuse.jit(f).lower(np.ones(6), I, backend="cpu").plan
    sc = next(k for k in plan.groups if k.kind == "scatter")
    want_t = np.ones(6)
    want = f(want_t, I)
    t = np.ones(6)
    assert kfuse.jit(f, backend="cpu")(t, I) == want
    np.testing.assert_array_equal(t, want_t)
    assert not plan.scatters_into_argument(sc) or all(sc.id > k.id for k in plan.groups if sc.anchor.inputs[0] in k.inputs and k is not sc)
