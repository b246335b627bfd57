"""Scan kernels compile on both GPU backends without a GPU: a thread a row (the ``col`` variant),
the running value started before the row's loop and updated in it, in order; PTX that ptxas
accepts for sm_90. A row variant is refused for them, by the emitters and by the autotuner.
Values are checked on a GPU by tests/ops/test_scans.py."""
import numpy as np
import pytest

import kfuse
from kfuse.autotune import prune, space
from kfuse.codegen import cuda, cuda_shapes, numba_cuda
from kfuse.codegen import kernel_ir as K
from kfuse.errors import CompileError
from kfuse.fusion.cost import get_device_spec
from tests.codegen.ptx_backends import compile_to_ptx


def running_sum(x, y):
    return np.cumsum(x * y, axis=1) / 3


def running_extremes(x, y):
    return np.maximum.accumulate(x, axis=0) + np.minimum.accumulate(y, axis=0)


def flat_product(x, y):
    return np.cumprod(x + y)


FUNCS = [running_sum, running_extremes, flat_product]


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
@pytest.mark.parametrize("dtype", ["f32", "f16", "f64", "i8", "u32", "b1"])
@pytest.mark.parametrize("fn", FUNCS, ids=lambda f: f.__name__)
def test_scan_kernels_compile_to_ptx(fn, dtype, backend, tmp_path):
    if dtype == "b1" and fn is running_sum:
        pytest.skip("true divide of booleans is covered by i8")
    src = compile_to_ptx(fn, backend, (f"{dtype}[64,40]", f"{dtype}[64,40]"), tmp_path, f"{fn.__name__}_{dtype}")
    assert "-scan" not in src          # the IR's statement became code


def _scan_kernel(fn=running_sum, specs=("f32[64,40]", "f32[64,40]")):
    kernels = kfuse.jit(fn, backend="cuda").lower(*specs).kernels(for_gpu=True)
    scans = [k for k in kernels if K.has_scan(k)]
    assert len(scans) == 1
    return scans[0]


def test_running_value_is_started_before_the_loop_and_updated_in_it():
    """A column scan (``col``): a thread a column, the running value started before the loop and
    updated in it, in order. Numba-CUDA runs every scan that way."""
    kir = _scan_kernel()
    (sc,) = [s for ph in kir.phases for s in K.scans(ph.body)]
    assert sc.op == "add" and sc.init == -0.0 and str(sc).startswith(f"{sc.dst}: float32 = add-scan(")
    src = cuda.emit(kir, cuda_shapes.Variant("col", 1, False, 0, 128))
    start, step = f"float {sc.dst} = kf_negzero_f;", f"{sc.dst} = ({sc.dst} + {sc.src});"
    loop = src.index("for (; jb_ <= row_len - ")           # (cuda_cols: a trip's rows, their loads first)
    assert src.index(start) < loop < src.index(step)
    nsrc = numba_cuda.emit(kir)
    assert f"{sc.dst} = _S{sc.dst}" in nsrc and numba_cuda.default_variant(kir).mode == "col"


def test_contiguous_rows_scan_as_lanes_of_a_warp():
    """Contiguous rows (the default variant): lanes of a warp a row, a chunk ``vec`` segments of a
    lane each (coalesced), each segment a shuffle-up tree over the row's lanes with the running
    value in front; short rows share a warp."""
    kir = _scan_kernel()
    v = cuda_shapes.default_variant(kir)
    assert (v.mode, v.lanes, v.vec, v.split) == ("scan", 32, 2, 0)        # 40 elements: 2 segments of 32
    src = cuda.emit(kir)
    assert "kf_shfl_up(t_, s_, 32)" in src and "kf_shfl_idx(t_, 31, 32)" in src and "j_ = b_ + (IDX)(e_ * 32 + sl_)" in src
    assert src.index("_s[e_] = ok_ ?") < src.index("kf_shfl_up(t_") < src.index("if (live_ && ok_) out0[")
    assert cuda_shapes.scan_shape(100_000, 4) == (32, 8, False) and cuda_shapes.scan_shape(40, 8) == (32, 2, False)


def test_short_rows_are_packed(tmp_path):
    """Rows of up to 32 elements: as few lanes as cover a row, several rows a warp, and a chunk's
    segments are other rows (each scanned on its own, no running value between them)."""
    from kfuse.codegen import nvrtc
    assert cuda_shapes.scan_shape(16, 4) == (16, 8, True) and cuda_shapes.scan_shape(3, 8) == (4, 4, True)
    kir = _scan_kernel(running_sum, ("f32[1000,16]", "f32[1000,16]"))
    v = cuda_shapes.default_variant(kir)
    assert (v.mode, v.lanes, v.vec, v.packed) == ("scan", 16, 8, True) and v.tag.endswith("g16w")
    src = cuda.emit(kir, v)
    assert "const IDX rw_ = w_ + (IDX)(e_ * 2 + seg_);" in src and "C_v" in src and "c_ = C_" not in src
    assert ".entry" in nvrtc.compile(src, arch="sm_90").ptx


@pytest.mark.parametrize("stage", [1, 2])
def test_two_stage_scan_compiles(stage, tmp_path):
    """Few long rows: a warp a (row, chunk); stage 1 writes the chunks' totals, stage 2 starts each
    chunk from the totals before it. Not where a scan reads another's values."""
    from kfuse.codegen import nvrtc
    kir = _scan_kernel(lambda x, y: np.cumsum(x + y), ("f32[1000000]", "f32[1000000]"))
    assert cuda_shapes.scan_split_ok(kir)       # (a floating product does not split: below)
    src = cuda.emit(kir, cuda_shapes.Variant("scan", 8, False, 0, 128, split=64, stage=stage, lanes=32))
    assert ("ws_ + " in src) and (("if (sl_ == 0) *reinterpret_cast" in src) == (stage == 1)) and (("for (IDX q_ = lane_; q_ < c_" in src) == (stage == 2))
    assert ("if (live_ && ok_) out0[" in src) == (stage == 2)
    assert ".entry" in nvrtc.compile(src, arch="sm_90").ptx
    nested = _scan_kernel(lambda x, y: np.cumsum(np.cumsum(x, axis=1), axis=1) + y, ("f32[4,9000]", "f32[4,9000]"))
    assert not cuda_shapes.scan_split_ok(nested)


def test_row_variants_are_refused():
    kir = _scan_kernel()
    with pytest.raises(CompileError, match="does not fit this reduce kernel"):
        cuda.emit(kir, cuda_shapes.Variant("row", 1, False, 0, 128))
    with pytest.raises(CompileError, match="in order in one thread"):
        numba_cuda.emit(kir, numba_cuda.NVariant("row", 1, 0, 128))


def test_autotuner_offers_block_sizes_only():
    plan = kfuse.jit(running_sum, backend="cuda").lower("f32[64,40]", "f32[64,40]").plan
    (g,) = [g for g in plan.groups if g.is_scan]
    cands = space.space_for(g, "cuda")
    assert cands and {c.kind for c in cands} == {"reduction"}
    assert all(c.get("split") == 1 and c.get("rows") == 1 for c in cands)
    row = space.rowwise_space(4)[0]
    assert "in order in one thread" in prune.check(row, g, get_device_spec("h100"))


@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
def test_floating_cumprod_redoes_a_non_finite_segment_in_order(dtype):
    """A floating running product past an overflow stays infinite in NumPy (a tree can group its
    way back to finite: float16 cumprod, fuzz seed 27 #191): its lane tree is redone in order where
    a lane holds a non-finite value, and it does not split into chunks; an integer one keeps the
    tree alone."""
    from kfuse.codegen.cuda_shapes import ordered_product
    kir = _scan_kernel(flat_product, (f"{dtype}[4096]", f"{dtype}[4096]"))
    (sc,) = [s for ph in kir.phases for s in ph.body if isinstance(s, K.Scan)]
    assert ordered_product(sc) and not cuda_shapes.scan_split_ok(kir)
    src = cuda.emit(kir, cuda_shapes.Variant("scan", 1, False, 0, 128, lanes=32))
    assert "NumPy's order" in src and "isfinite(r_)" in src
    ikir = _scan_kernel(flat_product, ("i32[4096]", "i32[4096]"))
    assert "NumPy's order" not in cuda.emit(ikir, cuda_shapes.Variant("scan", 1, False, 0, 128, lanes=32))


@pytest.mark.backends("cuda", emit_only=True)
@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
def test_floating_cumprod_compiles(dtype, backend, tmp_path):
    compile_to_ptx(flat_product, backend, (f"{dtype}[3,2,4]", f"{dtype}[3,2,4]"), tmp_path, f"cumprod_{dtype}")
