"""CPU schedules (kfuse.codegen.cpu_schedule): the loop order chosen from the arguments' strides
(``rows``: reduced dims inside; ``cols``: a contiguous kept dim inside, per-column accumulators),
collapsed reshape reads (``flat``) and threads per call, through ``kfuse.jit`` against NumPy.

Every case asserts the schedule printed in the program's ``cpu`` stage, so a wrongly rendered
order cannot pass by falling back to the other one. Sizes are primes (no dim merges, partial
vectors); shapes past 1024 columns run several column blocks, the last one partial."""
from __future__ import annotations

import os

import numpy as np
import pytest

import kfuse
from kfuse.codegen import cpu_schedule as CS
from tests.tolerance import assert_matches_numpy

os.environ.setdefault("KFUSE_AUTOTUNE", "off")
# one jit function per kind of body, shared by every case: each case is a new signature
pytestmark = pytest.mark.filterwarnings("ignore::kfuse.runtime.cache.RecompileWarning")


def _norm(x, axes):
    """Three phases (max, mean, sum of squares) and a full-shape output."""
    m = x.max(axis=axes)
    y = x - x.mean(axis=axes, keepdims=True)
    return y / np.sqrt((y * y).sum(axis=axes, keepdims=True) + 1), m


def _ints(x, axes):
    return x.sum(axis=axes), x.min(axis=axes), (x > 3).any(axis=axes)


def _argmax(x, axis):
    return x.argmax(axis=axis), x.argmin(axis=axis)


NORM = kfuse.jit(_norm, backend="cpu", static_argnames=("axes",))
INTS = kfuse.jit(_ints, backend="cpu", static_argnames=("axes",))
ARGS = kfuse.jit(_argmax, backend="cpu", static_argnames=("axis",))


def _schedules(jf) -> list[str]:
    """The schedules of the reduce kernels of the program ``jf`` ran last."""
    prog = list(jf._programs.values())[-1].program
    return [line.split("schedule: ")[1].rstrip('"') for line in prog.stages["cpu"].splitlines()
            if '"""reduce:' in line]


def _layout(shape, dtype, layout, rng):
    """An array of ``shape``: C-contiguous, a transposed view (memory order reversed), a sliced
    view (steps and offsets, still C-ordered), or a channels-last view of a 4-D array."""
    def make(s):
        a = rng.standard_normal(s) * 4
        return a.astype(dtype) if np.dtype(dtype).kind == "f" else np.rint(a).astype(dtype)
    if layout == "C":
        return make(shape)
    if layout == "T":
        return make(shape[::-1]).T
    if layout == "slice":
        base = make(tuple(2 * e + 1 for e in shape))
        return base[tuple(slice(1, None, 2) for _ in shape)]
    assert layout == "last" and len(shape) == 4           # NCHW view of NHWC memory
    n, c, h, w = shape
    return make((n, h, w, c)).transpose(0, 3, 1, 2)


def _expected(x, axes, chunked: bool = True) -> str:
    """rows when the fastest memory axis is reduced, else cols over that axis, in row chunks
    (cpu_chunks) where that axis is the only kept one and the accumulators allow it."""
    dims = [d for d in range(x.ndim) if x.shape[d] > 1]
    fast = min(dims, key=lambda d: abs(x.strides[d]))
    if fast in axes or len(axes) == x.ndim:
        return "order=rows"
    alone = not [d for d in dims if d != fast and d not in axes]
    return f"order=cols(i{fast})" + (" chunks" if chunked and alone else "")


SHAPES = {2: (7, 13), 3: (5, 7, 11), 4: (3, 5, 7, 11)}
AXES = {2: [(0,), (1,), (0, 1)],
        3: [(0,), (1,), (2,), (0, 1), (1, 2), (0, 2), (0, 1, 2)],
        4: [(0,), (1,), (3,), (0, 1, 2), (1, 2), (0, 2, 3), (0, 1, 2, 3)]}
CASES = [(nd, ax, lay) for nd, axs in AXES.items() for ax in axs for lay in ("C", "T", "slice")]
CASES += [(4, (0, 2, 3), "last"), (4, (1, 2), "last"), (4, (0,), "last")]


@pytest.mark.parametrize("nd,axes,layout", CASES)
def test_float32_every_axis_and_layout(nd, axes, layout):
    x = _layout(SHAPES[nd], np.float32, layout, np.random.default_rng(len(axes)))
    for g, w in zip(NORM(x, axes), _norm(x, axes)):
        assert_matches_numpy(g, w, reductions=True)
    assert set(_schedules(NORM)) == {_expected(x, axes)}, _schedules(NORM)


DTYPE_CASES = [(dt, nd, ax, lay) for dt in ("float64", "float16")
               for nd, ax in ((2, (0,)), (3, (1,)), (3, (0, 2)), (4, (0, 1, 2)), (3, (2,)))
               for lay in ("C", "T")]


@pytest.mark.parametrize("dt,nd,axes,layout", DTYPE_CASES)
def test_float_dtypes(dt, nd, axes, layout):
    x = _layout(SHAPES[nd], dt, layout, np.random.default_rng(nd))
    for g, w in zip(NORM(x, axes), _norm(x, axes)):
        assert_matches_numpy(g, w, reductions=True)
    assert set(_schedules(NORM)) == {_expected(x, axes)}


@pytest.mark.parametrize("dt", ["int32", "int64", "uint8"])
@pytest.mark.parametrize("nd,axes,layout", [(2, (0,), "C"), (3, (0, 1), "C"), (3, (1,), "T"),
                                            (4, (0, 1, 2), "last"), (2, (1,), "C")])
def test_int_reductions(dt, nd, axes, layout):
    x = _layout(SHAPES[nd], dt, layout, np.random.default_rng(1))
    for g, w in zip(INTS(x, axes), _ints(x, axes)):
        assert_matches_numpy(g, w)
    assert set(_schedules(INTS)) == {_expected(x, axes)}


@pytest.mark.parametrize("shape,axis", [((7, 13), 0), ((5, 7, 11), 1), ((5, 7, 11), 0)])
def test_argmax_first_occurrence_and_nan(shape, axis):
    x = np.rint(np.random.default_rng(2).standard_normal(shape)).astype(np.float32)  # many ties
    x[2, 3] = np.nan
    for g, w in zip(ARGS(x, axis), _argmax(x, axis)):
        assert_matches_numpy(g, w)
    assert set(_schedules(ARGS)) == {_expected(x, (axis,), chunked=False)}


@pytest.mark.parametrize("shape,axes,sched", [((7, 2053), (0,), "order=cols(i1) chunks"),
                                             ((3, 7, 1031), (1,), "order=cols(i2)")])
def test_several_column_blocks(shape, axes, sched):
    """Past 1024 columns the kept dim runs in blocks (the last one partial), and the parallel loop
    covers (first other kept dim x blocks)."""
    x = np.random.default_rng(3).standard_normal(shape)
    for g, w in zip(NORM(x, axes), _norm(x, axes)):
        assert_matches_numpy(g, w, reductions=True)
    assert set(_schedules(NORM)) == {sched}
    assert CS.col_block(shape[-1], 1) < shape[-1]


def _groupnorm(x, g, b):
    n, c, h, w = x.shape
    y = x.reshape(n, 4, -1)
    y = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-5)
    return y.reshape(n, c, h, w) * g[None, :, None, None] + b[None, :, None, None]


GN = kfuse.jit(_groupnorm, backend="cpu")


@pytest.mark.parametrize("layout", ["C", "last", "slice"])
def test_groupnorm_reads_collapsed(layout):
    """The reshape's unravel reads the contiguous 4-D input collapsed (``flat=in0[1:]``, no
    division per element); a view that cannot be collapsed keeps the unravelled reads."""
    rng = np.random.default_rng(4)
    x = _layout((3, 8, 5, 7), np.float32, layout, rng)
    g, b = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    assert_matches_numpy(GN(x, g, b), _groupnorm(x, g, b), reductions=True)
    prog = list(GN._programs.values())[-1].program
    text = prog.stages["cpu"]
    reduce_line = next(line for line in text.splitlines() if '"""reduce:' in line)
    assert ("flat=in0[1:]" in reduce_line) == (layout == "C"), reduce_line


def test_unravel_matcher():
    from kfuse.codegen import kernel_ir as K
    L = K.add(K.mul(K.IVar("i1"), K.IVar("s3")), K.IVar("i2"))
    s4, s5 = K.IVar("s4"), K.IVar("s5")
    idx = (K.IVar("i0"), K.floordiv(L, K.mul(s4, s5)), K.mod(K.floordiv(L, s4), s5), K.mod(L, s4))
    assert CS._unravel_of(idx, 1) == (L, ("s5", "s4"))
    assert CS._unravel_of(idx, 0) is None
    assert CS._unravel_of(idx[:3] + (K.mod(L, s5),), 1) is None     # sizes do not nest
    assert CS.unit_var(L) == "i2" and CS.unit_var(K.mod(L, s4)) == "i2"
    assert CS.unit_var(K.floordiv(L, s4)) is None


def test_threads_per_call(monkeypatch):
    from kfuse.runtime import cpu as rt

    class _K:
        parallel_ok = True
        loops = 1
    k = _K()
    k.work = rt.PAR_MIN_WORK - 1
    assert rt.auto_threads(k, 8) == 1                   # small: one thread, no fork/join
    k.work = rt.BUSY_PAR_MIN_WORK * 4
    assert rt.auto_threads(k, 1) == 1                   # KFUSE_CPU_THREADS=1 caps it
    assert rt.auto_threads(k, 2) == 2
    k.loops = 8                                         # eight forks and joins a call: on a busy
    monkeypatch.setattr(rt, "machine_busy", lambda: True)   # machine one thread, as NumPy
    assert rt.auto_threads(k, 2) == 1
    monkeypatch.setattr(rt, "machine_busy", lambda: False)
    assert rt.auto_threads(k, 2) == 2
    k.parallel_ok = False
    assert rt.auto_threads(k, 2) == 1
