"""Peeled rows (Variant.peel, codegen.cuda_peel) without a GPU: rows not starting 16-byte aligned
(odd lengths, views) keep full-width vectors with a scalar head and tail. Where the launcher picks
them (stand-in arrays: shapes, strides, a data pointer), the CUDA C they render in every row
schedule (held, re-loaded, re-read, streamed, packed, chunked, grid-synchronised) for float32,
float16 and bfloat16, compiled by NVRTC and assembled by ptxas. Their values against NumPy:
tests/gpu/test_peeled_rows_gpu.py."""
import os
import subprocess

import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda as ce
from kfuse.codegen.online_softmax import online_max_sum
from kfuse.codegen.phase_merge import merge_independent_phases, rereading_form
from kfuse.errors import CompileError
from kfuse.fusion.reduction import PEEL_MIN_UNITS

from tests.autotune.test_gpu_tiles import PROPS, Arr, launcher_for
from tests.codegen.ptx_backends import PTXAS
from tests.codegen.test_online_softmax import lse, smoothed_ce, softmax

nvrtc = pytest.importorskip("kfuse.codegen.nvrtc")


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def cross_entropy(logits, labels):
    m = np.max(logits, axis=1, keepdims=True)
    out = np.log(np.sum(np.exp(logits - m), axis=1)) + m[:, 0]
    return out - np.take_along_axis(logits, labels[:, None], axis=1)[:, 0]


def _row_kernel(fn, *specs, dims=1):
    return next(k for k in kfuse.jit(fn).lower(*specs).kernels(for_gpu=True) if k.kind.value == "reduce"
                and any(ph.accs for ph in k.phases) and len(k.loop_dims(k.inner)) == dims)


def _assemble(src: str, tmp_path, tag: str) -> None:
    ptx = nvrtc.compile(src, "sm_90").ptx
    assert ".entry" in ptx
    if PTXAS:
        path = tmp_path / f"{tag}.ptx"
        path.write_text(nvrtc.for_installed(ptx))
        r = subprocess.run([PTXAS, "-arch=sm_90", str(path), "-o", os.devnull], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]


V = ce.Variant
SCHEDULES = {       # name -> (variant of width w, the kernel IR form it renders)
    "held": (lambda w: V("row", w, False, 4, 256, 2, peel=True), "own"),
    "reload": (lambda w: V("row", w, False, 2, 512, 2, reload=True, peel=True), "own"),
    "held64stream": (lambda w: V("row", w, True, 4, 256, 1, stream=True, peel=True), "own"),
    "reread": (lambda w: V("row", w, False, 0, 1024, 2, peel=True), "folded"),
    "streamed": (lambda w: V("row", w, False, 0, 512, 2, peel=True), "streamed"),
    "thread": (lambda w: V("row", w, False, 0, 128, 2, lanes=1, packed=True, peel=True), "own"),
    "lanes8": (lambda w: V("row", w, False, 0, 128, 2, lanes=8, packed=True, peel=True), "own"),
    "grid_sync": (lambda w: V("row", w, False, 0, 256, 2, min_blocks=4, split=8, grid_sync=True, peel=True), "folded"),
}
FORMS = {"own": lambda k: k, "folded": rereading_form,
         "streamed": lambda k: merge_independent_phases(online_max_sum(rereading_form(k)))}
FUNCS = [(softmax, ("f32[64,4097]",), 4), (softmax, ("f16[64,4097]",), 8), (softmax, ("bf16[64,4097]",), 8),
         (layernorm, ("f32[64,4097]", "f32[4097]", "f32[4097]"), 4),
         (layernorm, ("f16[64,4097]", "f32[4097]", "f32[4097]"), 4),
         (cross_entropy, ("f32[64,4097]", "i64[64]"), 4), (smoothed_ce, ("f32[64,4097]", "i64[64]"), 4),
         (lse, ("bf16[64,4097]",), 8)]


@pytest.mark.parametrize("schedule", list(SCHEDULES))
@pytest.mark.parametrize("fn,specs,width", FUNCS, ids=[f"{f.__name__}-{s[0][:4]}" for f, s, _ in FUNCS])
def test_peeled_rows_render_and_assemble(fn, specs, width, schedule, tmp_path):
    variant, form = SCHEDULES[schedule]
    v = variant(width)
    kir = FORMS[form](_row_kernel(fn, *specs))
    src = ce.emit_kernel(kir, v).source
    body = src.split("// kfuse kernel")[-1]
    assert "h" in v.tag and v.tag in body                                       # the schedule, printed
    assert "h_ = (IDX)kf_head<" in body and f"h_ + j_ * {width};" in body      # the body from the first aligned element
    assert f"t_ < h_ ? t_ : t_ + row_units * {width};" in body                  # the head, then the tail
    assert body.count("t_ < rem_") == sum(1 for ph in kir.phases if ph.has_loop)  # after every pass's loop
    _assemble(src, tmp_path, f"{fn.__name__}_{schedule}")


def test_a_chunked_row_peels_in_its_first_chunk(tmp_path):
    kir = _row_kernel(lambda x: x.sum(-1), "f32[4,1000003]")
    src = ce.emit_kernel(kir, V("row", 4, False, 0, 256, 2, split=16, stage=1, peel=True)).source
    body = src.split("// kfuse kernel")[-1]
    assert "chunk_ = (row_units + 15) / 16" in body and "if (c_ == 0) for (IDX t_ = tid_; t_ < rem_;" in body
    _assemble(src, tmp_path, "split")


def test_the_lead_load_is_aligned_and_every_other_access_checked():
    """The first row load sets the head; the output (and a layernorm's weights) are checked once a
    row and written (read) lane by lane where they are not aligned as it is."""
    src = ce.emit_kernel(_row_kernel(layernorm, "f32[64,4097]", "f32[4097]", "f32[4097]"),
                         V("row", 4, False, 4, 256, 2, peel=True)).source
    body = src.split("// kfuse kernel")[-1]
    assert "kf_head<float, 4>(in0 + (" in body and "kf_aligned<float, 4>(in0" not in body
    for ptr in ("in1 + (", "in2 + (", "out0 + ("):
        assert f"kf_aligned<float, 4>({ptr}" in body
    assert "kf_lanes<float, 4>(in1 + (" in body and "kf_lanes<float, 4>(in0" not in body
    assert "else kf_stlanes<float, 4>(out0 + (" in body
    assert "kf_head" in src.split("// kfuse kernel")[0]                       # the helpers, in the prelude


def test_unpeeled_rows_render_as_before():
    kir = _row_kernel(softmax, "f32[64,4096]")
    src = ce.emit_kernel(kir, V("row", 4, False, 4, 256, 2)).source
    assert "kf_head" not in src and "rem_" not in src and "row_units = row_len / 4;" in src


@pytest.mark.parametrize("why,kir,variant", [
    ("exact", lambda: _row_kernel(softmax, "f32[64,4097]"), V("row", 4, False, 4, 256, 2, exact=True, peel=True)),
    ("scalar", lambda: _row_kernel(softmax, "f32[64,4097]"), V("row", 1, False, 4, 256, 2, peel=True)),
    ("column", lambda: _row_kernel(softmax, "f32[64,4097]"), V("col", 1, False, 0, 128, peel=True)),
    ("rows of two dims", lambda: _row_kernel(lambda x: x.sum(axis=(1, 2)), "f32[8,9,17]", dims=2),
     V("row", 4, False, 0, 256, 2, peel=True)),
])
def test_peel_is_refused_where_it_cannot_render(why, kir, variant):
    with pytest.raises(CompileError):
        ce.emit_kernel(kir(), variant)


def _pick(fn, *arrays, ins=None):
    _, lau, fake_ins, outs = launcher_for(fn, *arrays)
    v, grid = lau.variant_for(ins or fake_ins, outs, PROPS)
    return v, lau


@pytest.mark.parametrize("width,dtype,vec", [(4097, np.float32, 4), (50257, np.float32, 4), (1031, np.float16, 8),
                                             (999, np.float32, 4), (4 * PEEL_MIN_UNITS + 1, np.float32, 4)])
def test_odd_rows_run_peeled_at_full_width(width, dtype, vec):
    v, lau = _pick(softmax, np.zeros((4096, width), dtype))
    assert (v.mode, v.vec, v.peel, v.exact) == ("row", vec, True, False), v
    assert v.tag in ce.emit_kernel(lau.kir_for(v), v).name


def test_whole_aligned_rows_do_not_peel():
    v, _ = _pick(softmax, np.zeros((4096, 4096), np.float32))
    assert (v.vec, v.peel) == (4, False)


def test_views_offset_from_an_aligned_start_peel():
    """x[:, 1:] of a 4097-wide array: 4096-wide rows, each one element past a 16-byte boundary
    (x[1:] of an odd width likewise); a last dim of stride 2 reads no vectors at all."""
    x = np.zeros((4096, 4097), np.float32)
    view = Arr((4096, 4096), np.float32, ptr=4, strides=(4097 * 4, 4))
    v, _ = _pick(softmax, x[:, 1:], ins=[view])
    assert (v.vec, v.peel) == (4, True)
    v, _ = _pick(softmax, x[1:], ins=[Arr((4095, 4097), np.float32, ptr=4097 * 4, strides=(4097 * 4, 4))])
    assert (v.vec, v.peel) == (4, True)
    strided = Arr((4096, 2048), np.float32, strides=(4097 * 4, 8))
    v, _ = _pick(softmax, x[:, ::2], ins=[strided])
    assert (v.vec, v.peel) == (1, False)


def test_rows_of_fewer_units_than_peel_min_stay_element_by_element():
    v, _ = _pick(softmax, np.zeros((4096, 4 * PEEL_MIN_UNITS - 1), np.float32))
    assert (v.vec, v.peel) == (1, False)


def test_odd_cross_entropy_rows_stream_peeled():
    """The corpus's cross-entropy over 50257-wide rows: one streamed pass for the maximum and the
    sum of exp (codegen.online_softmax), at full width."""
    v, lau = _pick(cross_entropy, np.zeros((1024, 50257), np.float32), np.zeros(1024, np.int64))
    assert (v.vec, v.peel, v.cache_k) == (4, True, 0)
    kir = lau.kir_for(v)
    assert kir is lau._streamed and [a.kind for ph in kir.phases for a in ph.accs] == ["maxsumexp"]


def test_default_variant_shows_the_peeled_row():
    assert ce.default_variant(_row_kernel(softmax, "f32[64,4097]")).peel
    assert not ce.default_variant(_row_kernel(softmax, "f32[64,4096]")).peel
    src = kfuse.jit(softmax).lower("f32[64,4097]").as_text("cuda")
    assert "peel=True" in src and "kf_head" in src


def test_a_weight_read_first_does_not_lead():
    """``g * x``: the weight's load comes first but every row reads it from the same place; the
    row's own load sets the head, and the weight is the one checked."""
    kir = _row_kernel(lambda x, g: (g * x).sum(-1), "f32[64,4097]", "f32[4097]")
    first = next(s for ph in kir.phases for s in ph.body if hasattr(s, "buf"))
    body = ce.emit_kernel(kir, V("row", 4, False, 4, 256, 2, peel=True)).source.split("// kfuse kernel")[-1]
    g, x = (1, 0) if first.buf == 1 else (0, 1)
    assert f"kf_head<float, 4>(in{x} + (" in body and f"kf_aligned<float, 4>(in{g} + (" in body


@pytest.mark.parametrize("vec,peel", [(1, False), (2, True)])
def test_a_tile_narrowing_a_peeled_row_keeps_it_renderable(vec, peel):
    from kfuse.autotune.space import TileConfig
    _, lau, ins, outs = launcher_for(softmax, np.zeros((4096, 4097), np.float32))
    lau.tile = TileConfig.make("row", block=256, vec=vec, storage="registers")
    v, _ = lau.variant_for(ins, outs, PROPS)
    assert lau.tile_note is None and (v.vec, v.peel) == (vec, peel)
    assert ("kf_head<float, 2>" in ce.emit_kernel(lau.kir_for(v), v).source) == peel
