"""Integer-array indexing through ``kfuse.jit`` on every backend against NumPy: ``x[idx]``,
``x[:, idx]``, ``x[rows, cols]`` (broadcast, split by a slice), ints mixed with arrays, lists,
constant boolean lists, ``np.take`` (every mode), ``np.take_along_axis``, gathers of computed
values and at computed (traced) positions, fused with reductions. One GATHER per index
(kfuse/trace/indexing.py). Out-of-range indices raise NumPy's IndexError: constant ones while
tracing, traced ones after the call (and nothing is written back into the arguments)."""
import numpy as np
import pytest

import kfuse
from kfuse.errors import UnsupportedError
from kfuse.fusion import pipeline
from kfuse.ir.specs import spec_of_value
from kfuse.trace import trace_function
from tolerance import assert_matches_numpy


def cross_entropy(a, i, j, k):
    x = a.astype(np.float32)
    m = x.max(axis=1, keepdims=True)
    logp = x - (np.log(np.exp(x - m).sum(axis=1, keepdims=True)) + m)
    return -logp[np.arange(x.shape[0]), k[:, 0]].mean()


CASES = {
    "rows": lambda a, i, j, k: a[i],
    "cols": lambda a, i, j, k: a[:, j] * 2,
    "pairs": lambda a, i, j, k: a[i, j],
    "pairs-broadcast": lambda a, i, j, k: a[i[:, None], j[None, :3]],
    "int-and-array": lambda a, i, j, k: a[2, j] + a[i, -1],
    "split-by-slice": lambda a, i, j, k: a.reshape(3, 2, 8)[[0, 2, 1, 1, 0], :, j],
    "newaxis-ellipsis": lambda a, i, j, k: a[None, i, ...][..., ::2],
    "list": lambda a, i, j, k: a[[0, -1, 3]],
    "bool-list": lambda a, i, j, k: a[[True, False, True, False, False, True]],
    "bool-constant": lambda a, i, j, k: a[np.arange(6) % 4 != 1][:, 1:] + a[np.eye(6, 8, dtype=bool)].sum(),
    "take-axis": lambda a, i, j, k: np.take(a, j, axis=1) + a.take(i, axis=0)[:, :6].T,
    "take-flat": lambda a, i, j, k: np.take(a, k * 5),
    "take-wrap": lambda a, i, j, k: np.take(a, i * 7 - 3, axis=0, mode="wrap"),
    "take-clip": lambda a, i, j, k: np.take(a, j * 3, axis=1, mode="clip"),
    "take-along": lambda a, i, j, k: np.take_along_axis(a, k, axis=1),
    "take-along-broadcast": lambda a, i, j, k: np.take_along_axis(a, j[:4, None], axis=0),
    "argmax-gather": lambda a, i, j, k: a[np.arange(a.shape[0]), a.argmax(axis=1)],
    "flat-argmax": lambda a, i, j, k: a.ravel()[a.argmax()] + a[1].max(),
    "gather-then-sum": lambda a, i, j, k: a[i].sum(axis=1),
    "gather-then-rowmax": lambda a, i, j, k: a[:, j].max(axis=0),
    "computed-index": lambda a, i, j, k: a[(i + 1) % 6, k[:5, 1]],
    "gather-of-computed": lambda a, i, j, k: (a * 2 + 1)[i] - a[i],
    "cross-entropy": cross_entropy,
}
DTYPES = ["float32", "int32", "float16"]


def _inputs(dtype):
    rng = np.random.default_rng(11)
    a = (rng.standard_normal((6, 8)) * 4).astype(dtype)
    i = rng.integers(-6, 6, 5).astype(np.int64)
    j = rng.integers(-8, 8, 5).astype(np.int32)
    k = rng.integers(0, 8, (6, 3)).astype(np.uint8)
    return a, i, j, k


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_gathers_match_numpy(backend, name, dtype, cupy_for):
    fn = CASES[name]
    args = _inputs(dtype)
    with np.errstate(all="ignore"):
        want = np.asarray(fn(*args))
    f = kfuse.jit(fn, backend=backend)
    with np.errstate(all="ignore"):
        if backend == "cpu":
            got = np.asarray(f(*args))
        else:
            cp = cupy_for(backend)
            got = cp.asnumpy(f(*map(cp.asarray, args)))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_matches_numpy(got, want, reductions=True)


def test_a_gather_is_fused_with_its_consumer():
    """``table[idx] * 2 + 1``: one elementwise kernel reads the table where the indices point; a
    second, tiny one checks the indices' range."""
    specs = {"t": spec_of_value(np.zeros((100, 16), np.float32)), "i": spec_of_value(np.zeros(7, np.int64))}
    graph = trace_function(lambda t, i: t[i] * 2.0 + 1.0, specs)
    assert len(graph.checks) == 1 and "gather" in graph.as_text()
    plan = pipeline.plan(pipeline.optimize(graph))
    assert sorted(g.kind for g in plan.groups) == ["elementwise", "reduce"]


def test_traced_index_out_of_range_raises_and_writes_nothing(backend, cupy_for):
    def step(x, i):
        x += 1.0
        return x[i]
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    f = kfuse.jit(step, backend=backend)
    xp = np if backend == "cpu" else cupy_for(backend)
    host = np.asarray if xp is np else xp.asnumpy
    xd = xp.array(x)
    for bad in ([0, 4], [-5], [2, 1, 7]):
        with pytest.raises(IndexError, match=r"out of bounds for axis 0 with size 4 \(at .*test_indexing.py"):
            f(xd, xp.asarray(np.array(bad)))
        assert np.array_equal(host(xd), x)     # nothing written back
    got = f(xd, xp.asarray(np.array([-4, 3])))
    assert np.array_equal(host(got), (x + 1)[[-4, 3]])
    assert np.array_equal(host(xd), x + 1)


@pytest.mark.parametrize("fn, err, match", [
    (lambda a, i: a[[0, 9]], IndexError, "index 9 is out of bounds for axis 0 with size 6"),
    (lambda a, i: a[:, np.array([-9])], IndexError, "index -9 is out of bounds for axis 1 with size 8"),
    (lambda a, i: np.take(a, [50]), IndexError, "index 50 is out of bounds for axis 0 with size 48"),
    (lambda a, i: a[i.astype(np.float32)], IndexError, "arrays used as indices must be of integer"),
    (lambda a, i: a[i, i[:2]], IndexError, "shape mismatch: indexing arrays could not be broadcast"),
    (lambda a, i: a[i, i, i], IndexError, "too many indices for array"),
    (lambda a, i: np.take_along_axis(a, i, axis=0), ValueError, "same number of dimensions"),
    (lambda a, i: np.take(a, i, mode="bogus"), ValueError, "clipmode must be one of"),
])
def test_indexing_errors_match_numpy(fn, err, match):
    a, i = np.zeros((6, 8), np.float32), np.arange(5)
    with pytest.raises(err, match=match):
        fn(a, i)                              # NumPy's own error...
    with pytest.raises(err, match=match):
        kfuse.jit(fn)(a, i)                   # ...is kfuse's


@pytest.mark.parametrize("fn, match", [
    (lambda a, i: a[a[:, 0] > 0, i[:1]], "traced boolean array combined with other indices"),
    (lambda a, i: np.add.at(a, a[:, 0] > 0, 1), "np.add.at with a traced boolean mask"),
])
def test_unsupported_indexing_names_the_line(fn, match):
    with pytest.raises(UnsupportedError, match=match + ".*test_indexing.py"):
        kfuse.jit(fn, fullgraph=True)(np.zeros((6, 8), np.float32), np.arange(5))


def test_index_checks_can_be_turned_off(monkeypatch):
    """``KFUSE_INDEX_CHECKS=0``: no check kernels, no IndexError; an index out of range reads the
    nearest end (GATHER's own rule), as jax.jit does."""
    from kfuse import config
    monkeypatch.setenv("KFUSE_INDEX_CHECKS", "0")
    config.reload()
    try:
        f = kfuse.jit(lambda x, i: x[i] + 0.5)
        x = np.arange(12, dtype=np.float32).reshape(4, 3)
        got = f(x, np.array([1, 9, -2, -7]))
        assert np.array_equal(got, x[[1, 3, 2, 0]] + 0.5)
        assert f.trace(x, np.array([1])).checks     # the traced graph still has the check
    finally:
        monkeypatch.undo()
        config.reload()


def test_a_gather_of_computed_values_computes_only_the_gathered_ones():
    """``(x - lse)[rows, y]``: the gather is pushed through the subtraction and the broadcast
    (the ``gathers`` pass), so no kernel writes the full log-probabilities, only the row values."""
    def xent_logp(x, y):
        m = x.max(axis=1, keepdims=True)
        lse = np.log(np.exp(x - m).sum(axis=1, keepdims=True)) + m
        return -(x - lse)[np.arange(x.shape[0]), y].mean()
    specs = {"x": spec_of_value(np.zeros((64, 1000), np.float32)), "y": spec_of_value(np.zeros(64, np.int64))}
    plan = pipeline.plan(pipeline.optimize(trace_function(xent_logp, specs)))
    assert max(o.size for g in plan.groups for o in g.outputs) == 64
    x = np.random.default_rng(3).standard_normal((64, 1000)).astype(np.float32)
    y = np.random.default_rng(4).integers(-1000, 1000, 64)
    assert_matches_numpy(np.asarray(kfuse.jit(xent_logp)(x, y)), np.asarray(xent_logp(x, y)), reductions=True)


def test_a_python_int_index_is_traced_once(backend, cupy_for):
    """``x[i]`` with ``i`` a Python int argument is a gather at a run-time position: one compile
    serves every ``i`` (no recompile a row), and an ``i`` out of range raises NumPy's IndexError."""
    def row(x, i):
        return x[i] * 2, x[:, i - 1], x[i, i]
    f = kfuse.jit(row, backend=backend)
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    xp = np if backend == "cpu" else cupy_for(backend)
    host = np.asarray if xp is np else xp.asnumpy
    for i in (0, 2, -1, -3):
        for got, want in zip(f(xp.asarray(x), i), row(x, i)):
            assert np.array_equal(host(got), want)
    assert len(f._programs) == 1
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 3"):
        f(xp.asarray(x), 3)


def _row_update(x, i):
    row = x[i]
    row += 1
    return x[i - 1] * 2


def test_scalar_argument_index_is_checked_on_the_host(backend, cupy_for):
    """x[i] of a Python int (or NumPy scalar) argument: its range check reads nothing computed on
    the device, so on a GPU backend it runs on the host before any kernel (no flag read back a
    call; the CPU backend computes it in a kernel, which costs less there), raising NumPy's
    IndexError with nothing written; a 0-d array index stays a device check."""
    from kfuse.trace.reference import evaluate_nodes
    f = kfuse.jit(_row_update, backend=backend)
    x = np.arange(12.0).reshape(4, 3)
    g = f.trace(x, 2)
    assert not g.checks and len(g.host_checks) == 2 and "host check" in g.as_text()
    assert f.trace(x, np.array(2)).checks
    assert len(g.with_host_checks_on_device().checks) == 2
    for i, fails in ((2, False), (0, False), (4, True), (-5, True)):
        flags = evaluate_nodes([n for n, *_ in g.host_checks], lambda n: (x, i)[n.attr("index")])
        if fails:
            with pytest.raises(IndexError, match="index out of bounds for axis 0 with size 4"):
                g.raise_failed_host_checks(flags)
        else:
            g.raise_failed_host_checks(flags)
    xp = np if backend == "cpu" else cupy_for(backend)
    for i in (2, np.int64(-3), 0):
        want_x = x.copy()
        want = _row_update(want_x, i)
        got_x = xp.asarray(x)
        got = f(got_x, i)
        for a, b in ((got, want), (got_x, want_x)):
            np.testing.assert_array_equal(a if xp is np else xp.asnumpy(a), b)
    for i in (4, -5, np.int32(9)):
        got_x = xp.asarray(x)
        with pytest.raises(IndexError, match=r"index out of bounds for axis 0 with size 4 \(at .*test_indexing\.py"):
            f(got_x, i)
        np.testing.assert_array_equal(got_x if xp is np else xp.asnumpy(got_x), x)     # nothing written
