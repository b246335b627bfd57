"""The CUDA C backend's schedules as the Numba-CUDA emitter renders them, without a GPU: the
launcher (``runtime.numba_cuda._Launcher``) picks the schedule for arrays described by their
shapes, strides and alignment alone (no allocation), renders it as an ``NVariant`` and emits it;
the source compiles to PTX (libNVVM) and ptxas assembles it, and the PTX shows the schedule:
packed short rows (lanes of a warp a row, shuffles, no barrier), column loops with their loads
in flight together. Results are checked on a GPU by tests/gpu/test_numba_cuda_schedules_gpu.py."""
import os
import re
import subprocess
import types

import numpy as np
import pytest

import kfuse
from kfuse.codegen import numba_cuda as nc
from tests.codegen.ptx_backends import PTXAS

_ok, _why = nc.numba_cuda_available()
pytestmark = pytest.mark.skipif(not _ok, reason=_why or "numba-cuda")

PROPS = {"sm_count": 132, "name": "NVIDIA H200", "device_id": 0}


def fake(shape, dtype="float32", view=None, offset=0, order="C"):
    """An array's description as the launcher reads it (shape, strides, item size, pointer):
    ``view`` a slice of the C-ordered base ``shape``, ``offset`` elements past a 256-byte boundary."""
    dt = np.dtype(dtype)
    base = np.lib.stride_tricks.as_strided(np.zeros(1, dt), shape=shape,
                                           strides=[0] * len(shape))     # (no memory: strides below)
    st = [dt.itemsize * int(np.prod(shape[d + 1:])) for d in range(len(shape))]
    if order == "F":
        st = [dt.itemsize * int(np.prod(shape[:d])) for d in range(len(shape))]
    ptr = 1 << 20
    shp = list(shape)
    if view is not None:
        for d, sl in enumerate(view):
            start, stop, step = sl.indices(shape[d])
            ptr += start * st[d]
            shp[d] = len(range(start, stop, step))
            st[d] *= step
    del base
    ptr += offset * dt.itemsize
    return types.SimpleNamespace(shape=tuple(shp), strides=tuple(st), itemsize=dt.itemsize, dtype=dt,
                                 size=int(np.prod(shp)), data=types.SimpleNamespace(ptr=ptr))


def _spec(a) -> str:
    short = {"float32": "f32", "float16": "f16", "float64": "f64", "int32": "i32", "int64": "i64",
             "bool": "b1", "int8": "i8", "uint8": "u8"}[a.dtype.name]
    return f"{short}[{','.join(map(str, a.shape))}]"


def schedules(fn, *arrays):
    """``[(CUDA C variant, NVariant, numba source)]`` of each kernel of ``fn`` on ``arrays``
    (fake ones), as the Numba-CUDA launcher builds them (without loading anything)."""
    from kfuse.runtime.numba_cuda import _Launcher
    kirs = kfuse.jit(fn, backend="numba-cuda").lower(*map(_spec, arrays)).kernels(for_gpu=True)
    assert len(kirs) == 1, [k.kind for k in kirs]
    (kir,) = kirs
    ins = [arrays[k] for k in range(len(kir.inputs))]
    outs = [fake(b.shape, b.dtype if b.dtype != "bool" else "bool") for b in kir.outputs]
    lau = _Launcher(None, kir, "sm_90", None)
    lau = lau._contiguous_reads(ins) or lau
    variant, grid = lau.variant_for(ins, outs, PROPS)
    nv, grid = lau._render(variant, grid, PROPS["sm_count"])
    return variant, nv, grid, nc.emit(lau.kir_for(variant), nv)


def ptx_of(src: str, tmp_path=None) -> str:
    """The PTX (sm_90) of ``src``, assembled by ptxas where it is installed."""
    ptx = nc.compile_ptx(src, arch="sm_90")
    if PTXAS and tmp_path is not None:
        from kfuse.codegen.nvrtc import for_installed
        path = tmp_path / f"k{abs(hash(src))}.ptx"
        path.write_text(for_installed(ptx))
        r = subprocess.run([PTXAS, "-arch=sm_90", str(path), "-o", os.devnull], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]
    return ptx


def body(src: str) -> str:
    return src.split("def kfuse_kernel")[1]


# -------------------------------------------------------------------------------- packed rows

def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def rms_heads(q, w):
    return q / np.sqrt(np.mean(q * q, axis=-1, keepdims=True) + 1e-6) * w


ROW_FNS = {"sum": lambda x: x.sum(-1), "softmax": softmax, "argmax": lambda x: np.argmax(x, -1),
           "any": lambda x: (x > 1).any(-1), "min_f16": lambda x: x.astype(np.float16).min(-1)}


@pytest.mark.parametrize("width", [3, 9, 16, 31, 33, 64, 100, 127, 129, 384])
@pytest.mark.parametrize("name", list(ROW_FNS))
def test_packed_rows_render_lanes_a_row(name, width, tmp_path):
    """Short rows: the CUDA C schedule's lanes a row (vector units where the rows are whole
    aligned vectors, else elements), several rows a block, combined by shuffles among the row's
    lanes alone (no shared memory, no barrier)."""
    v, nv, grid, src = schedules(ROW_FNS[name], fake((1531, width)))
    assert v.packed and nv.packed and nv.mode == "row", (v, nv)
    assert (nv.lanes, nv.block, nv.vec, nv.peel) == (v.lanes, v.block, v.vec, v.peel)
    assert grid == min(-(-1531 // (v.block // v.lanes)), PROPS["sm_count"] * 16)
    b = body(src)
    assert "cuda.shared.array" not in b and "syncthreads" not in b
    assert f"row_ = b_ + (tid_ >> {v.lanes.bit_length() - 1})" in b and "row_ if live_ else n_rows_ - 1" in b
    ptx = ptx_of(src, tmp_path)
    assert "bar.sync" not in ptx
    assert ("shfl.sync.bfly" in ptx) == (v.lanes > 1)
    if width % 4 == 0 or v.peel:
        assert v.vec == 4 and "ld.global.v4" in ptx


def test_packed_rows_head_dim_128_in_vectors(tmp_path):
    """qk_rmsnorm_heads' rows (a 128-wide head dim of (B, S, H, D)): 32 float4 units, 16 lanes a
    row (8 rows a 128-thread block, 2 units a lane), loads and stores 16 bytes, a 4-step shuffle tree."""
    v, nv, _, src = schedules(rms_heads, fake((2, 17, 5, 128)), fake((128,)))
    assert nv.packed and (nv.lanes, nv.vec) == (v.lanes, 4) == (16, 4), (v, nv)
    ptx = ptx_of(src, tmp_path)
    assert "ld.global.v4.f32" in ptx and "st.global.v4.f32" in ptx
    assert ptx.count("shfl.sync.bfly") == 2 * (nv.lanes.bit_length() - 1)     # a float64 sum: 2 halves a step


@pytest.mark.parametrize("view,offset", [((slice(None), slice(2, None)), 0), ((slice(1, None), slice(None)), 0),
                                         (None, 1)])
def test_packed_rows_of_views_are_peeled(view, offset, tmp_path):
    """Rows not starting 16-byte aligned (a slice, a misaligned pointer): packed peeled rows
    (codegen.numba_cuda_peel: each row's head from its lead load's address, its body in 16-byte
    units, the output's units element by element where not aligned as the input's)."""
    v, nv, _, src = schedules(softmax, fake((1531, 66), view=view, offset=offset))
    assert nv.packed and nv.peel and nv.vec == v.vec == 4 and v.lanes == nv.lanes > 1
    b = body(src)
    assert "h_ = min((-(addr(in0" in b and "stvp(al0_, out0" in b and "while t_ < rem_:" in b
    ptx = ptx_of(src, tmp_path)
    assert "shfl.sync.bfly" in ptx and "ld.global.v4" in ptx and "st.global.v4" in ptx


def test_packed_in_place_stores_only_live_rows():
    """A kernel writing in place: a spare group (rows past the last, redoing it) stores nothing."""
    from kfuse.codegen.numba_cuda_rows import RowEmitter  # noqa: F401  (the mixin under test)
    kirs = kfuse.jit(softmax, backend="numba-cuda").lower("f32[100,40]").kernels(for_gpu=True)
    import dataclasses
    kir = dataclasses.replace(kirs[0], in_place=((0, 0),))
    src = nc.emit(kir, nc.NVariant("row", 1, 0, 128, lanes=16, packed=True))
    assert "if live_:" in body(src)
    nc.compile_ptx(src)


# -------------------------------------------------------------------------------- column loops

@pytest.mark.parametrize("fn", [lambda x: np.cumsum(x, axis=0), lambda x: x.sum(axis=0),
                                lambda x: np.cumprod(x.astype(np.float64), axis=0)], ids=["cumsum0", "sum0", "cumprod0"])
def test_column_loops_issue_their_loads_together(fn, tmp_path):
    """A thread a column (a column scan or reduction): the column's rows unrolled
    ``cuda_cols.COL_UNROLL`` at a time, every load of a trip before its first add (loads in
    flight together, as CUDA C's ``#pragma unroll``), the remainder one row at a time; a scan's
    running value and stores in row order."""
    from kfuse.codegen.cuda_cols import COL_CHUNK_UNROLL_GRID_SYNC, COL_UNROLL
    for shape, unroll in (((1031, 20000), COL_UNROLL), ((4099, 517), None)):    # (few columns: in chunks)
        v, nv, _, src = schedules(fn, fake(shape))
        assert v.mode == nv.mode == "col" and (v.split, v.stage, v.grid_sync) == (nv.split, nv.stage, nv.grid_sync)
        unroll = unroll or (COL_CHUNK_UNROLL_GRID_SYNC if nv.grid_sync else 4 if nv.split else COL_UNROLL)
        b = body(src)
        assert f"while j_ + {unroll - 1} * 1 < " in b, (v, nv)
        ptx = ptx_of(src, tmp_path)
        loads = re.findall(r"ld\.global\.(?:f32|f64)", ptx)
        assert len(loads) >= unroll + 1
        if "st.global" in ptx and unroll == COL_UNROLL:      # a scan: the trip's loads before its first store
            trip = ptx[ptx.index("ld.global"):]
            ops = re.findall(r"^\s+(ld\.global\S*|st\.global\S*)", trip, re.M)
            assert ops[:unroll - 1] == [ops[0]] * (unroll - 1) and ops[0].startswith("ld."), ops[:unroll + 2]


# -------------------------------------------------------------------------------- scan rows

@pytest.mark.parametrize("shape", [(1531, 3), (1531, 20), (1531, 32), (1531, 33), (1531, 300), (5000, 1999),
                                   (7, 11, 129)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
def test_row_scans_render_lanes_a_row(shape, dtype, tmp_path):
    """A scan along contiguous rows: CUDA C's scan schedule (lanes of a warp a row, a chunk vec
    segments, a shuffle-up tree a segment and the running value from the segment's last lane;
    rows of up to 32 packed, a chunk's segments other rows)."""
    v, nv, _, src = schedules(lambda x: np.cumsum(x, axis=-1), fake(shape, dtype))
    assert v.mode == nv.mode == "scan" and (nv.lanes, nv.vec, nv.packed) == (v.lanes, v.vec, v.packed), (v, nv)
    assert nv.packed == (shape[-1] <= 32)
    ptx = ptx_of(src, tmp_path)
    steps = nv.lanes.bit_length() - 1
    assert ptx.count("shfl.sync.up") >= steps * nv.vec * (2 if dtype != "float32" and dtype != "int32" else 1)
    assert ("shfl.sync.idx" in ptx) == (not nv.packed)
    assert "bar.sync" not in ptx


def test_scans_not_rendered_run_a_thread_a_row(tmp_path):
    """Few long rows (CUDA C's two stages) and floating products (their order redone where a
    tree value is not finite) run a thread a row, in order."""
    v, nv, _, src = schedules(lambda x: np.cumsum(x, axis=-1), fake((4, 1 << 16)))
    assert nv.mode == "col" and "shfl" not in body(src)
    v, nv, _, src = schedules(lambda x: np.cumprod(x, axis=-1), fake((1531, 300)))
    assert nv.mode == "col" and "shfl" not in body(src)
    ptx_of(src, tmp_path)


# -------------------------------------------------------------------------------- tiles

TILES = {
    "exp_xT_odd": (lambda x, y: np.exp(x.T) + y, [fake((1023, 517)), fake((517, 1023))]),
    "exp_xT_vec4": (lambda x, y: np.exp(x.T) + y, [fake((512, 320)), fake((320, 512))]),
    "f16_vec8": (lambda x, y: x.T * 0.5 + y, [fake((512, 320), "float16"), fake((320, 512), "float16")]),
    "i8_vec16": (lambda x, y: x.T + y * 2, [fake((512, 320), "int8"), fake((320, 512), "int8")]),
    "nchw_to_nhwc": (lambda x, b: np.transpose(x, (0, 2, 3, 1)) * b, [fake((3, 67, 19, 41)), fake((67,))]),
    "bool_where": (lambda x, m: np.where(m, x.T, -x.T), [fake((301, 203)), fake((203, 301), "bool")]),
    "view_rows_from_1": (lambda x, y: np.exp(x.T) + y, [fake((512, 260), view=(slice(1, None), slice(None))),
                                                        fake((260, 511))]),
}


@pytest.mark.parametrize("name", list(TILES))
def test_transposes_stage_through_shared_tiles(name, tmp_path):
    """CUDA C's tile schedule (codegen.cuda_tile2d) rendered: the staged loads' tiles in shared
    memory (rows padded by one), two barriers a tile, 16-byte accesses where CUDA C takes them."""
    fn, arrays = TILES[name]
    v, nv, _, src = schedules(fn, *arrays)
    assert v.mode == nv.mode == "tile" and (nv.tile_t, nv.staged, nv.side, nv.vec) == (v.tile_t, v.staged, v.side, v.vec)
    assert f"cuda.shared.array(({nv.side}, {nv.side + 1})" in body(src)
    ptx = ptx_of(src, tmp_path)
    assert ".shared" in ptx and ptx.count("bar.sync") == 2
    if nv.vec > 1:
        assert re.search(r"st\.global\.v\d", ptx) and re.search(r"ld\.global(\.nc)?\.v\d", ptx), name


# -------------------------------------------------------------------------------- re-loaded rows

def groupnorm(x, g, b):
    n, c, h, w = x.shape
    y = x.reshape(n, 32, (c // 32) * h * w)
    y = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-5)
    return y.reshape(n, c, h, w) * g.reshape(1, c, 1, 1) + b.reshape(1, c, 1, 1)


def test_reloaded_rows_hold_nothing_across_passes(tmp_path):
    """CUDA C's ``reload`` (groupnorm_nchw's rows of 32768 floats, 1024 threads of 8 slots): each
    reduction pass loads its slots up front (16-byte loads, all before its first add), nothing
    is held across passes (no slot read before it is loaded in the pass), float32 sums
    accumulate in float32 with a pairwise tree over the warps, as CUDA C's."""
    v, nv, _, src = schedules(groupnorm, fake((32, 256, 64, 64)), fake((256,)), fake((256,)))
    assert v.reload and nv.reload and (nv.cache_k, nv.block, nv.vec) == (v.cache_k, v.block, v.vec) == (8, 1024, 4)
    assert v.exact and nv.exact                     # (8 x 1024 units a row: no bounds test on a slot)
    b = body(src)
    assert b.count("if row_len_ > 0:") == 2                     # the mean's and the variance's passes
    assert "lane_ & (nwarps_ - 1)" in b and "np.float64(Av" not in b
    ptx = ptx_of(src, tmp_path)
    assert "ld.global.v4.f32" in ptx and "add.rn.f32" in ptx
    assert ".local" not in ptx


# -------------------------------------------------------------------------------- index divisions

def rotary(x, c, s):
    h = x.shape[-1] // 2
    return x * c + np.concatenate((-x[..., h:], x[..., :h]), axis=-1) * s


@pytest.mark.parametrize("name", ["rotary", "concat", "roll_pad"])
def test_index_divisions_by_sizes_multiply_high(name, tmp_path):
    """A concatenation's piece tests, a roll's wrap, a pad's: each division or remainder by a size
    a multiply-high by a host pair (the kernel's ``dz<size>`` parameters, the launcher's extra
    arguments after the unravel's), as CUDA C's 32-bit index math: no 64-bit division routine."""
    fn, arrays = {"rotary": (rotary, [fake((32, 4096, 128)), fake((4096, 128)), fake((4096, 128))]),
                  "concat": (lambda x, z: np.concatenate([x, x * x, np.sin(z)], axis=1),
                             [fake((16384, 1024)), fake((16384, 256))]),
                  "roll_pad": (lambda x: np.pad(x - np.roll(x, 3, -1), ((0, 0), (2, 5))), [fake((4096, 1029))])}[name]
    v, nv, _, src = schedules(fn, *arrays)
    assert not v.idx64 and nv.divs and all(f"dz{d}_m" in src for d in nv.divs)
    from kfuse.runtime.numba_cuda import _Launcher
    (kir,) = kfuse.jit(fn, backend="numba-cuda").lower(*map(_spec, arrays)).kernels(for_gpu=True)
    extra = _Launcher(None, kir, "sm_90", None).extra_args(nv)
    assert len(extra) == 2 * (len(nc.fast_div_dims(kir)) * nv.fastdiv + len(nv.divs))
    ptx = ptx_of(src, tmp_path)
    assert not re.search(r"\b(div|rem)\.[su]64", ptx)


def test_costly_where_arms_branch(tmp_path):
    """CUDA C's where-arms as branches (codegen.cuda_branches): an element of
    ``concatenate([x, x * x, sin(z)], 1)`` computes its own piece only; the sine (and the load
    feeding it) sits inside the branch of its piece, not before a chain of selects."""
    for arrays in ([fake((16384, 1024)), fake((16384, 256))], [fake((1031, 13)), fake((1031, 7))]):
        v, nv, _, src = schedules(lambda x, z: np.concatenate([x, x * x, np.sin(z)], axis=1), *arrays)
        lines = body(src).split("\n")
        sin = next(k for k, x in enumerate(lines) if "ld.sinf(" in x)
        depth = len(lines[sin]) - len(lines[sin].lstrip())
        opener = next(x for x in reversed(lines[:sin]) if len(x) - len(x.lstrip()) < depth)
        assert opener.strip().startswith("if ") and opener.strip().endswith(":"), opener
        assert any(x.strip() == "else:" for x in lines)
        ptx_of(src, tmp_path)


# -------------------------------------------------------------------------------- peeled rows

@pytest.mark.parametrize("name,shape", [("softmax", (1531, 4097)), ("layernorm", (1531, 1031)),
                                        ("sum", (1531, 100003)), ("argmax", (1531, 9))])
def test_peeled_rows(name, shape, tmp_path):
    """Odd widths: CUDA C's peeled rows (held, re-loaded, re-read, a thread a row), the body in
    16-byte loads from the row's first aligned element, head and tail one element a thread."""
    fn = {"softmax": softmax, "layernorm": lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5),
          "sum": lambda x: x.sum(-1), "argmax": lambda x: np.argmax(x, -1)}[name]
    v, nv, _, src = schedules(fn, fake(shape))
    assert v.peel and nv.peel and (nv.vec, nv.cache_k, nv.reload) == (v.vec, v.cache_k, v.reload), (v, nv)
    assert "while t_ < rem_:" in body(src)
    ptx = ptx_of(src, tmp_path)
    assert "ld.global.v4.f32" in ptx


def test_chunked_rows_not_aligned_run_element_by_element(tmp_path):
    """A few long odd rows (two stages in CUDA C, peeled there): not peeled here, single elements."""
    v, nv, _, src = schedules(lambda x: x.sum(-1), fake((4, 1000003)))
    assert v.peel and v.split and not nv.peel and nv.vec == 1 and nv.split == v.split
    ptx_of(src, tmp_path)
