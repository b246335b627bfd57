"""The chunked ``cols`` order (kfuse.codegen.cpu_chunks): column statistics whose only kept loop
is the contiguous one, their rows cut into chunks added separately and combined in chunk order.

Every case runs at sizes giving several chunks (the last one partial, odd column counts), checks
the schedule printed in the program's ``cpu`` stage and the number of chunks the runtime passes,
compares with NumPy (a float64 reference where NumPy's own float32 sum drifts), and runs the
kernel on one thread and on the pool: the chunks depend on the sizes only, so the bits agree."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

import kfuse
from kfuse.codegen import cpu_chunks, cpu_schedule as CS
from tests.runtime.test_cpu_schedules import _norm as _colstats     # three loop phases, a full-shape output
from tests.tolerance import assert_matches_numpy

os.environ.setdefault("KFUSE_AUTOTUNE", "off")
pytestmark = pytest.mark.filterwarnings("ignore::kfuse.runtime.cache.RecompileWarning")


def _softmax0(x):
    e = np.exp(x - x.max(axis=0))
    return e / e.sum(axis=0)


def _standardize(x):
    return (x - x.mean(axis=0)) / np.sqrt(x.var(axis=0) + 1e-5), x.min(axis=0)


def _ints(x):
    return x.sum(axis=0), x.max(axis=0), (x > 3).any(axis=0), (x > -9).all(axis=0)


def _nanmean(x):
    ok = ~np.isnan(x)
    return np.where(ok, x, 0.0).sum(axis=0) / np.maximum(ok.sum(axis=0), 1).astype(np.float32), np.max(x, axis=0)


def _reference(fn, x):
    """``fn`` on a float64 copy of a float32 input, each result cast to NumPy's dtype for ``x``:
    what a float32 column sum should give (NumPy's own adds the rows in float32)."""
    def tup(o):
        return o if isinstance(o, tuple) else (o,)
    dtypes = [np.asarray(o).dtype for o in tup(fn(x))]
    wide = tup(fn(x.astype(np.float64))) if x.dtype == np.float32 else tup(fn(x))
    return [np.asarray(o).astype(d) for o, d in zip(wide, dtypes)]


def _program(jf):
    return list(jf._programs.values())[-1].program


def _chunks(prog, x) -> list[int]:
    """The chunks of the first reduced dim each chunked kernel of ``prog`` (the program of
    ``x``'s sizes) runs ``x`` in."""
    out = []
    for k in prog.kernels:
        sched = k.variants.last
        if not sched.chunks:
            continue
        outs = [np.empty(s, d) for s, d in k.out_specs]
        nin = len(k.kir.inputs)
        args, _ = CS.call_args(k.kir, sched, [x] * nin, tuple([x] * nin + outs + k.size_args), nin, 2)
        cb, rb = int(args[-2]), int(args[-1])
        inner = [d for d in k.kir.loop_dims(k.kir.inner) if d not in {b for _, b in sched.merge}]
        out.append(-(-CS.extents(k.kir, sched)[inner[0]] // rb))
        assert cb >= 1
    return out


def _one_and_many(jf, args):
    """The program's results on one thread and on the pool (every kernel forced each way)."""
    prog = _program(jf)
    got = []
    for variant in ("seq", "par"):
        for k in prog.kernels:
            prog.set_variant(k.group.id, variant, 2 if variant == "par" else 1)
        got.append(prog(list(args)))
    return got


@pytest.mark.parametrize("layout", ["C", "T", "slice"])
@pytest.mark.parametrize("shape", [(3001, 257), (2053, 131)])
def test_column_statistics_in_chunks(shape, layout):
    """C order (axis 0 reduced), a transposed view (``x.T``'s axis 1 reduced, axis 0 kept and
    contiguous) and a sliced view with a row pitch."""
    base = (np.random.default_rng(0).standard_normal(shape) * 3 + 1).astype(np.float32)
    if layout == "T":
        x, axis, col = base.T, 1, 0
    elif layout == "slice":
        x, axis, col = np.pad(base, ((1, 2), (3, 0)))[1:-2, 3:], 0, 1
    else:
        x, axis, col = base, 0, 1
    jf = kfuse.jit(_colstats, backend="cpu", static_argnames=("axes",))
    got = jf(x, (axis,))
    for g, w in zip(got, _reference(lambda a: _colstats(a, (axis,)), x)):
        assert_matches_numpy(g, w, reductions=True)
    text = _program(jf).stages["cpu"]
    assert f"order=cols(i{col}) chunks" in text, text
    assert all(n >= 2 for n in _chunks(_program(jf), x)), _chunks(_program(jf), x)
    one, many = _one_and_many(jf, [x])
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("fn", [_softmax0, _standardize, _nanmean])
def test_multi_phase_kernels(fn):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4099, 67)).astype(np.float32) * 2
    if fn is _nanmean:
        x[rng.random(x.shape) < 0.05] = np.nan
        x[4000:, 5] = np.nan                            # a NaN only in the last chunk: the max is NaN
    jf = kfuse.jit(fn, backend="cpu")
    got = jf(x)
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, _reference(fn, x)):
        assert_matches_numpy(g, w, reductions=True)
    prog = _program(jf)
    assert min(_chunks(prog, x)) >= 2
    # a chunk's partials through its row's view: indexed [u, j], the parallel variant's loop
    # did not vectorise (LLVM could not tell two accumulators' arrays apart)
    text = prog.stages["cpu"]
    assert "[u, j]" not in text and "= pacc_" in text and "[u]" in text, text
    if fn is _nanmean:
        assert np.isnan(got[1][5]) and np.isnan(got[1]).sum() == np.isnan(fn(x)[1]).sum()
    one, many = _one_and_many(jf, [x])
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dt", ["int32", "int64", "uint8"])
def test_integer_and_boolean_accumulators(dt):
    rng = np.random.default_rng(2)
    x = np.rint(rng.standard_normal((5003, 61)) * 4).astype(dt)
    jf = kfuse.jit(_ints, backend="cpu")
    for g, w in zip(jf(x), _ints(x)):
        assert_matches_numpy(g, w)                     # exact: integer sums wrap as NumPy's
    assert min(_chunks(_program(jf), x)) >= 2


def test_float16_max_and_mean():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4001, 97)).astype(np.float16)
    jf = kfuse.jit(_colstats, backend="cpu", static_argnames=("axes",))
    for g, w in zip(jf(x, (0,)), _colstats(x, (0,))):
        assert_matches_numpy(g, w, reductions=True)
    assert "chunks" in _program(jf).stages["cpu"]


@pytest.mark.parametrize("axes", [(0, 1, 2), (0, 1)])
def test_several_reduced_dims(axes):
    """Channels-last statistics: the first reduced dim in chunks, the others looped inside."""
    rng = np.random.default_rng(4)
    shape = (40, 13, 17, 64) if len(axes) == 3 else (257, 33, 37)
    x = rng.standard_normal(shape).astype(np.float32)
    jf = kfuse.jit(_colstats, backend="cpu", static_argnames=("axes",))
    for g, w in zip(jf(x, axes), _reference(lambda a: _colstats(a, axes), x)):
        assert_matches_numpy(g, w, reductions=True)
    assert "chunks" in _program(jf).stages["cpu"]
    assert min(_chunks(_program(jf), x)) >= 2


def test_columns_in_blocks_run_one_chunk():
    """Several column blocks share the threads: one chunk, the plain cols order's arithmetic."""
    x = np.random.default_rng(5).standard_normal((50, 2053)).astype(np.float32)
    jf = kfuse.jit(_colstats, backend="cpu", static_argnames=("axes",))
    for g, w in zip(jf(x, (0,)), _reference(lambda a: _colstats(a, (0,)), x)):
        assert_matches_numpy(g, w, reductions=True)
    assert set(_chunks(_program(jf), x)) == {1}
    assert cpu_chunks.chunk_rows(2, 10 ** 6, 1) == 10 ** 6
    assert cpu_chunks.chunk_rows(1, 10 ** 6, 512) == math.ceil(cpu_chunks.CHUNK_ELEMENTS / 512)


def test_new_size_reuses_the_chunked_kernel():
    """Chunks are a run-time argument: a size with one chunk and one with many run one source."""
    jf = kfuse.jit(lambda x: x.sum(axis=0), backend="cpu")
    small = np.random.default_rng(6).standard_normal((9, 5)).astype(np.float32)
    big = np.random.default_rng(7).standard_normal((6007, 129)).astype(np.float32)
    for x in (small, big):
        assert_matches_numpy(jf(x), x.astype(np.float64).sum(0).astype(np.float32), reductions=True)
    assert jf.compile_count == 1
    first, second = [e.program for e in jf._programs.values()]
    assert _chunks(first, small) == [1] and min(_chunks(second, big)) >= 2
    assert first.kernels[0].source == second.kernels[0].source
