"""CUDA C column loops (``codegen.cuda_cols``), without a GPU: a trip's loads issued back to back
before any row's arithmetic, in the source and in the PTX NVRTC makes of it, in every column form
(plain, split's stage 1, grid_sync chunks, column scans writing every element, 64-bit indices, a
kernel writing in place), and each row's statements those of the one-row-at-a-time loop
(``COL_LOADS_FIRST = False``) in the same order, so results do not change. Results on a GPU:
tests/gpu."""
import dataclasses
import re

import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda as ce
from kfuse.codegen import cuda_cols

nvrtc = pytest.importorskip("kfuse.codegen.nvrtc")

FUNCS = {
    "sum0": (lambda x: x.sum(0), "f32[4099,257]"),
    "cumsum0": (lambda x: np.cumsum(x, axis=0), "f32[4099,257]"),                 # a store every row
    "var_middle": (lambda x: x.var(1), "f32[16,301,40]"),                         # two outer dims
    "standardise": (lambda x: (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), "f32[4099,257]"),
    "softmax0": (lambda x: np.exp(x - x.max(0)) / np.exp(x - x.max(0)).sum(0), "f32[4099,257]"),
    "max_f16": (lambda x: x.max(0), "f16[4099,257]"),
    "any0": (lambda x: (x > 0).any(0), "f32[4099,257]"),
    "cumsum_i64": (lambda x: np.cumsum(x, axis=0), "i64[4099,257]"),
    "sum_c64": (lambda x: x.sum(0), "c64[4099,257]"),
}
FLOAT = {"sum0", "cumsum0", "var_middle", "standardise", "softmax0"}      # (the PTX check: float arithmetic)


def col_kernel(name):
    fn, spec = FUNCS[name]
    kirs = [k for k in kfuse.jit(fn).lower(spec, device="h100", backend="cuda").kernels(for_gpu=True)
            if k.inner and len(k.domain) - 1 not in k.inner]       # reduces or scans a strided axis
    assert kirs, name
    return kirs[-1]


def variants(kir):
    """Every column form ``kir`` renders in."""
    out = {"plain": ce.Variant("col", 1, False, 0, 128), "idx64": ce.Variant("col", 1, True, 0, 128)}
    if ce.split_ok(kir):
        out["stage1"] = ce.Variant("col", 1, False, 0, 128, split=37, stage=1)
    if ce.grid_sync_ok(kir):
        out["grid_sync"] = ce.Variant("col", 1, False, 0, 128, min_blocks=8, split=37, grid_sync=True)
    return out


CASES = [(name, form) for name in FUNCS for form in variants(col_kernel(name))] + [("standardise", "in_place")]


def emit(name, form, loads_first=True, monkeypatch=None):
    kir = col_kernel(name)
    if form == "in_place":      # x written in place: no __restrict__, the contract of KernelIR.in_place
        kir, form = dataclasses.replace(kir, in_place=((0, 0),)), "plain"
    if monkeypatch is not None:
        monkeypatch.setattr(cuda_cols, "COL_LOADS_FIRST", loads_first)
    src = ce.emit(kir, variants(kir)[form])
    return src[src.index('extern "C"'):]


def trips(body: str) -> list[tuple[str, str]]:
    """Each trip of the column loops (full and last): (its loads, up to the compiler barrier; its rows)."""
    out = []
    parts = re.split(r"for \(; jb_ <= |if \(jb_ < ", body)[1:]
    for p in parts:
        loads, rows = p.split('asm volatile("" ::: "memory");', 1)
        out.append((loads, rows.split("for (; jb_")[0]))
    return out


def ptx_order(ptx: str, nc_only: bool = False) -> list[str]:
    """Each PTX basic block's global loads (L; ``nc_only``: read-only ones alone), stores (S) and
    float arithmetic (a), in order."""
    fop = re.compile(r"(add|sub|mul|div|max|min|fma|neg|abs|setp|selp|ex2|lg2|sqrt|rcp|cvt)\S*\.(f16|f32|f64)\b")
    out = []
    for block in re.split(r"\n\$L__BB\d+_\d+:", ptx):
        seq = ""
        for line in block.splitlines():
            op = line.strip()
            seq += "L" if op.startswith("ld.global.nc" if nc_only else "ld.global") else "S" if op.startswith("st.global") else "a" if fop.match(op) else ""
        out.append(seq)
    return out


@pytest.mark.parametrize("name,form", CASES)
def test_a_trip_loads_every_row_before_computing(name, form):
    """Source: each trip's loads (every row's, into register slots) before the compiler barrier,
    and no load of an input after it; PTX (float kernels): in every basic block with a trip's
    loads, all of them before its first arithmetic or store."""
    body = emit(name, form)
    unroll = {"stage1": cuda_cols.CHUNK_UNROLL_SPLIT, "grid_sync": cuda_cols.COL_CHUNK_UNROLL_GRID_SYNC}.get(form, cuda_cols.COL_UNROLL)
    ts = trips(body)
    assert ts and len(ts) % 2 == 0         # each pass: its full trips, its last
    for loads, rows in ts:
        assert f"k_ < {unroll}; ++k_)" in loads and re.search(r"cl\d+_\[k_\] = in\d+\[", loads)
        assert not re.search(r"\bin\d+\[", rows), rows        # every input read before the barrier
    if name in FLOAT:
        ptx = nvrtc.compile(ce.emit(*_kir_variant(name, form)), "sm_90").ptx
        # (grid_sync: the workspace's loads, chunk partials combined, are ld.global, the inputs' .nc)
        blocks = [b for b in ptx_order(ptx, nc_only=form == "grid_sync") if b.count("L") >= unroll]
        assert blocks, ptx_order(ptx)
        for b in blocks:
            assert b.startswith("L" * b.count("L")), b


def _kir_variant(name, form):
    kir = col_kernel(name)
    if form == "in_place":
        return dataclasses.replace(kir, in_place=((0, 0),)), variants(kir)["plain"]
    return kir, variants(kir)[form]


def test_the_old_loop_interleaves_loads_with_arithmetic(monkeypatch):
    """What the PTX check above catches: the one-row-at-a-time loop (``COL_LOADS_FIRST =
    False``) leaves a variance's loads among its rows' arithmetic."""
    monkeypatch.setattr(cuda_cols, "COL_LOADS_FIRST", False)
    kir, v = _kir_variant("var_middle", "plain")
    ptx = nvrtc.compile(ce.emit(kir, v), "sm_90").ptx
    blocks = [b for b in ptx_order(ptx) if b.count("L") >= cuda_cols.COL_UNROLL]
    assert blocks and not any(b.startswith("L" * b.count("L")) for b in blocks), blocks


def _rows(text: str) -> list[str]:
    """A row's statements with every load (of an input or a register slot) spelt alike, and the
    row's index lines dropped."""
    out = []
    for line in text.strip().splitlines():
        line = line.strip()
        if re.match(r"(IDX r_ = j_;|const IDX (j_|i\d+|q\d+_) = |#pragma|for \(|\}$|if \(j_ <)", line):
            continue
        out.append(re.sub(r"\bin\d+\[[^\]]*\]|\bcl\d+_\[k_\]", "LOAD", line))
    return out


@pytest.mark.parametrize("name,form", CASES)
def test_rows_compute_as_the_one_row_loop_does(name, form, monkeypatch):
    """Each row of a trip: the one-row-at-a-time loop's statements, accumulator, scan steps and
    stores in the same order (the same order of accumulation: results bit for bit the same)."""
    old = emit(name, form, False, monkeypatch)
    new = emit(name, form, True, monkeypatch)
    loops = re.findall(r"#pragma unroll \d+\n\s*for \(IDX j_ = [^\n]*\{\n(.*?)\n\s*\}\n", old, re.S)
    full = [rows for loads, rows in trips(new)][0::2]
    assert len(loops) == len(full) >= 1
    for a, b in zip(loops, full):
        assert _rows(a) == _rows(b.split("#pragma unroll")[1])


@pytest.mark.parametrize("name", ["var_middle", "cumsum0"])
def test_column_kernels_assemble_without_spilling(name, tmp_path):
    """The trip's loads held in registers: ptxas assembles the plain column kernel without spills."""
    import os
    import subprocess
    from tests.codegen.ptx_backends import PTXAS
    if not PTXAS:
        pytest.skip("no ptxas")
    ptx = nvrtc.compile(ce.emit(*_kir_variant(name, "plain")), "sm_90").ptx
    path = tmp_path / "k.ptx"
    path.write_text(nvrtc.for_installed(ptx))
    r = subprocess.run([PTXAS, "-arch=sm_90", "-v", str(path), "-o", os.devnull], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "0 bytes spill stores, 0 bytes spill loads" in r.stderr, r.stderr
