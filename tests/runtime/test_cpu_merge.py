"""Merged loops of the CPU schedules (kfuse.codegen.cpu_merge) and the column order's exp passes
(cpu_cols: sums of helper values added in a loop of their own, a value staged in the output),
through ``kfuse.jit`` against NumPy.

Shapes are odd and past ``cpu_merge.MIN_ELEMENTS``, so that short loops merge; every case asserts
what the program's ``cpu`` stage renders (the merges, or none where a view's memory does not nest),
so a schedule that falls back to another cannot pass."""
from __future__ import annotations

import os

import numpy as np
import pytest

import kfuse
from kfuse.codegen import cpu_merge
from tests.tolerance import assert_matches_numpy

os.environ.setdefault("KFUSE_AUTOTUNE", "off")
pytestmark = pytest.mark.filterwarnings("ignore::kfuse.runtime.cache.RecompileWarning")

SHAPE = (3, 17, 19, 23)             # 22287 elements; every loop shorter than cpu_merge.SHORT
assert np.prod(SHAPE) >= cpu_merge.MIN_ELEMENTS and max(SHAPE) < cpu_merge.SHORT


def _pixel_norm(x, axes):
    """A statistics pass, a full-shape output, and a max (another accumulator kind)."""
    return x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + 1e-8), x.max(axis=axes)


NORM = kfuse.jit(_pixel_norm, backend="cpu", static_argnames=("axes",))


def _schedules(jf, kind="reduce") -> list[str]:
    prog = list(jf._programs.values())[-1].program
    return [line.split("schedule: ")[1].rstrip('"') for line in prog.stages["cpu"].splitlines()
            if f'"""{kind}:' in line]


def _source(jf) -> str:
    return list(jf._programs.values())[-1].program.stages["cpu"]


def _layout(shape, layout, rng, dtype=np.float32):
    """C-contiguous, reversed memory (a transposed view), a sliced view (memory that does not
    nest: no merge), or an NCHW view of NHWC memory."""
    if layout == "C":
        return rng.standard_normal(shape).astype(dtype)
    if layout == "T":
        return rng.standard_normal(shape[::-1]).astype(dtype).T
    if layout == "slice":
        return rng.standard_normal(tuple(e + 2 for e in shape)).astype(dtype)[1:-1, 1:-1, 2:, :-2]
    n, c, h, w = shape
    return rng.standard_normal((n, h, w, c)).astype(dtype).transpose(0, 3, 1, 2)


def _merges(x, axes) -> str:
    """The merges the schedule should render, worked out from ``x``'s strides alone: in the kept
    dims' nest and the reduced dims', innermost pair first, neighbours merge while the inner one
    is short and ``x``'s memory nests (the outputs are fresh, C-contiguous)."""
    shape, strides, out = list(x.shape), list(x.strides), []
    for nest in ([d for d in range(x.ndim) if d not in axes], list(axes)):
        while len(nest) >= 2:
            a, b = nest[-2], nest[-1]
            if b != a + 1 or shape[b] >= cpu_merge.SHORT or strides[a] != strides[b] * shape[b]:
                break
            out.append(f"i{a}*i{b}")
            shape[a], strides[a] = shape[a] * shape[b], strides[b]
            nest.pop()
    return "merge=" + ",".join(out) if out else ""


AXES = [(0,), (1,), (2,), (3,), (0, 1), (2, 3), (1, 2, 3), (0, 2, 3), (0, 1, 2, 3)]


@pytest.mark.parametrize("layout", ["C", "T", "slice", "last"])
@pytest.mark.parametrize("axes", AXES)
def test_reductions_every_axis_and_layout(axes, layout):
    x = _layout(SHAPE, layout, np.random.default_rng(len(axes)))
    for g, w in zip(NORM(x, axes), _pixel_norm(x, axes)):
        assert_matches_numpy(g, w, reductions=True)
    want = _merges(x, axes)
    got = _schedules(NORM)
    assert got and all(s.endswith(want) if want else "merge" not in s for s in got), (got, want)


def test_merges_seen_by_the_cases():
    """The cases above merge (C-contiguous) and do not (a transposed view)."""
    x = _layout(SHAPE, "C", np.random.default_rng(0))
    assert _merges(x, (1,)) == "merge=i2*i3" and _merges(x, (0, 1, 2, 3)) == "merge=i2*i3,i1*i2"
    assert _merges(_layout(SHAPE, "T", np.random.default_rng(0)), (1,)) == ""


def test_pixel_norm_runs_the_merged_columns():
    """Channels of NCHW reduced with H x W columns in one block of the cols order."""
    x = _layout((2, 9, 31, 37), "C", np.random.default_rng(0))
    for g, w in zip(NORM(x, (1,)), _pixel_norm(x, (1,))):
        assert_matches_numpy(g, w, reductions=True)
    assert set(_schedules(NORM)) == {"order=cols(i2) merge=i2*i3"}
    assert "in0: float32[3d]" in _source(NORM)


def _permute_scale(x):
    return np.transpose(x, (0, 2, 1, 3)) * 0.5


def _swap_add(x, y):
    return np.transpose(x, (0, 2, 1)) + y


@pytest.mark.parametrize("layout", ["C", "slice"])
def test_permuted_copy_merges_in_its_loop_order(layout):
    x = _layout(SHAPE, layout, np.random.default_rng(1))
    f = kfuse.jit(_permute_scale, backend="cpu")
    got, want = f(x), _permute_scale(x)
    np.testing.assert_array_equal(got, want)
    # NumPy's K order: the result laid out as x (its axes' memory order)
    assert np.argsort(got.strides).tolist() == np.argsort(want.strides).tolist()
    (s,) = _schedules(f, "elementwise")
    assert s.startswith("order=rows perm=[0, 2, 1, 3]")
    # the loop nest i0, i2, i1, i3: (i1, i3) merge, then i2 with them (every loop is short)
    assert s.endswith("merge=i1*i3,i2*i1") if layout == "C" else "merge" not in s


def test_elementwise_that_does_not_nest_keeps_its_loops():
    """x's swapped axes are not neighbours in y's order: nothing merges, the values are NumPy's."""
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((5, 37, 101)).astype(np.float32), rng.standard_normal((5, 101, 37)).astype(np.float32)
    f = kfuse.jit(_swap_add, backend="cpu")
    np.testing.assert_array_equal(f(x, y), _swap_add(x, y))
    assert all("merge" not in s for s in _schedules(f, "elementwise"))


def _softmax0(x):
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def _logsumexp0(x):
    m = x.max(axis=0)
    return np.log(np.exp(x - m).sum(axis=0)) + m


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("shape", [(37, 1501), (5, 7, 301), (300, 3)])
def test_column_softmax_stages_its_exp_in_the_output(shape, dtype):
    """The exp-and-sum pass adds its float32 summands in a loop of their own (``csrc``) and
    stores them in the output, which the last pass reads back (float32 only)."""
    x = (np.random.default_rng(3).standard_normal(shape) * 3).astype(dtype)
    f = kfuse.jit(_softmax0, backend="cpu")
    assert_matches_numpy(f(x), _softmax0(x), reductions=True)
    g = kfuse.jit(_logsumexp0, backend="cpu")
    assert_matches_numpy(g(x), _logsumexp0(x), reductions=True)
    (s,) = _schedules(f)
    assert s.startswith("order=cols")
    src = _source(f)
    assert ("csrc_" in src) == (dtype != np.float64)
    staged = [ln.strip() for ln in src.splitlines() if ln.strip().startswith("v") and "= out0[" in ln]
    assert bool(staged) == (dtype == np.float32), staged
    assert ("csrc_" in _source(g)) == (dtype != np.float64)


def test_full_sum_merges_into_blocks():
    x = np.random.default_rng(4).standard_normal((7, 33, 129, 5)).astype(np.float32)
    f = kfuse.jit(lambda x: (x * x).sum(), backend="cpu")
    assert_matches_numpy(f(x), (x * x).sum(), reductions=True)
    (s,) = _schedules(f)
    assert s.startswith("order=blocks") and "merge=" in s


def _logsumexp_rows(x):
    m = x.max(axis=-1, keepdims=True)
    return np.log(np.exp(x - m).sum(axis=-1)) + m[:, 0]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("n", [7, 1000, 4099])
def test_row_sum_of_exp_adds_in_its_own_loop(n, dtype):
    """The rows order's float64 sum of float32 exp values: the exp loop stores them in a row
    (``sw_``) and a loop of its own adds them; NumPy's values, NaN and infinities included."""
    x = (np.random.default_rng(n).standard_normal((5, n)) * 4).astype(dtype)
    x[1, 0], x[2, :] = np.inf, -np.inf
    x[3, n // 2] = np.nan
    f = kfuse.jit(_logsumexp_rows, backend="cpu")
    with np.errstate(all="ignore"):
        assert_matches_numpy(f(x), _logsumexp_rows(x), reductions=True)
    src = _source(f)
    assert ("sw_" in src) == (dtype != np.float64)
    if dtype != np.float64:
        assert "_radd(acc_v5, np.float64(sw_v5[i1]))" in src


def _batchnorm_nhwc(x):
    """Statistics over (N, H, W) of NHWC: the cols order's one-pass variance reads a shift at
    the first element, x[0, 0, 0, c], which the merged loops read as x[0, c]."""
    m = x.mean(axis=(0, 1, 2))
    v = x.var(axis=(0, 1, 2))
    return (x - m) / np.sqrt(v + 1e-5)


@pytest.mark.parametrize("layout", ["C", "slice"])
def test_variance_shift_reads_the_merged_buffer(layout):
    x = _layout((3, 17, 19, 23), layout, np.random.default_rng(5))
    x += 3                                  # (in place: a view stays a view)
    f = kfuse.jit(_batchnorm_nhwc, backend="cpu")
    assert_matches_numpy(f(x), _batchnorm_nhwc(x), reductions=True)
    (s,) = _schedules(f)
    assert s.startswith("order=cols(i3)")
    assert s.endswith(_merges(x, (0, 1, 2))) and ("merge" in s) == (layout == "C")


def _bce(x, y):
    return np.mean(np.maximum(x, 0.0) - x * y + np.log1p(np.exp(-np.abs(x))))


@pytest.mark.parametrize("shape", [(301, 1031), (50, 3, 1031), (70001,), (333, 700)])
def test_full_mean_of_helpers_adds_in_its_own_loop(shape):
    """The blocks order's float64 sum of exp/log1p values: the summands of the last loop go to a
    row (a block's, where the loops merged into one), added in a loop of their own."""
    rng = np.random.default_rng(len(shape))
    x, y = rng.standard_normal(shape).astype(np.float32), (rng.random(shape) < 0.5).astype(np.float32)
    f = kfuse.jit(_bce, backend="cpu")
    assert_matches_numpy(f(x, y), _bce(x, y), reductions=True)
    (s,) = _schedules(f)
    assert s.startswith("order=blocks")
    src = _source(f)
    assert "sw_" in src and "np.float64(sw_" in src


@pytest.mark.parametrize("axes", [(1, 2), (0, 2)])
def test_sum_of_exp_over_several_dims_adds_per_innermost_loop(axes):
    x = (np.random.default_rng(6).standard_normal((4, 7, 1031)) * 3).astype(np.float32)

    def f(x):
        m = x.max(axis=axes, keepdims=True)
        return np.log(np.exp(x - m).sum(axis=axes)) + m.squeeze(axes)
    jf = kfuse.jit(f, backend="cpu")
    assert_matches_numpy(jf(x), f(x), reductions=True)
    assert "sw_" in _source(jf)
