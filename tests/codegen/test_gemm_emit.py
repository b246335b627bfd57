"""CPU-only checks of the GEMM emitters: the CUDA C compiles with NVRTC for sm_80 and sm_90
(CUBIN: NVRTC runs ptxas internally, so a CUBIN proves the PTX assembles for that arch), and the
PTX also passes the machine's ``ptxas`` when present. NVRTC 13.5 writes PTX ISA 9.5, which the
CUDA 13.0 ptxas rejects (it reads ISA <= 9.0) and NVRTC has no option to pick an older ISA, so
the PTX's ``.version`` line is lowered with ``nvrtc.for_installed`` first (valid: the kernels use
no instruction newer than ISA 7.x: cp.async, ldmatrix, mma.sync need ISA 7.0-7.8 / sm_80)."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from kfuse.codegen import kernel_ir as K
from kfuse.codegen.gemm_cuda import GemmTile, default_tile, emit_epilogue_kernel, emit_gemm, gemm_search_space
from kfuse.codegen.gemm_spec import EpInput, GemmEpilogue, GemmSpec

pytest.importorskip("cuda.bindings.nvrtc")
from kfuse.codegen import nvrtc  # noqa: E402

PTXAS = shutil.which("ptxas") or ("/usr/local/bin/ptxas" if os.path.exists("/usr/local/bin/ptxas") else None)
BIAS_GELU = GemmEpilogue.chain(("add", ("in", 0)), "gelu_tanh", inputs=(EpInput("f16", "row"),))
RICH = GemmEpilogue.chain(
    ("multiply", ("p", 0)), ("add", ("in", 0)), ("add", ("in", 1)), "gelu_tanh",
    ("maximum", ("c", float("-inf"))), "silu", ("cast", "float16"), "relu",
    inputs=(EpInput("bf16", "col"), EpInput("f32", "full")), n_params=1, out_dtype="bf16")


def _compile(src, arch):
    try:
        res = nvrtc.compile(src, arch, name="gemm_test")
    except Exception as e:
        if "NVRTC is not available" in str(e):
            pytest.skip(str(e))
        raise
    assert len(res.cubin) > 1000
    return res


def _ptxas(ptx, arch, tmp_path):
    if PTXAS is None:
        return ""
    p = tmp_path / "k.ptx"
    p.write_text(nvrtc.for_installed(ptx))
    r = subprocess.run([PTXAS, f"-arch={arch}", "-v", str(p), "-o", os.devnull],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stderr


CASES = [
    (GemmSpec("f16", BIAS_GELU), GemmTile(128, 128, 32, 2, 2, 4)),
    (GemmSpec("bf16", BIAS_GELU, a_kmajor=False, b_kmajor=True), GemmTile(128, 256, 32, 2, 4, 3)),
    (GemmSpec("f16", RICH, a_kmajor=False, b_kmajor=False), GemmTile(64, 64, 32, 2, 2, 4)),
    (GemmSpec("f16", BIAS_GELU, aligned=False, b_kmajor=True), GemmTile(128, 128, 64, 2, 4, 3)),
    (GemmSpec("f32", GemmEpilogue.chain("relu", out_dtype="f32")), None),
]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_gemm_compiles(case, arch, tmp_path):
    spec, tile = CASES[case]
    src = emit_gemm(spec, tile)
    assert 'extern "C" __global__' in src and "kfuse_gemm" in src
    res = _compile(src, arch)
    if spec.tensor_core:
        assert "mma.sync.aligned.m16n8k16" in res.ptx
        assert ("cp.async.cg.shared.global" in res.ptx) == spec.aligned
        assert "ldmatrix.sync.aligned" in res.ptx
    log = _ptxas(res.ptx, arch, tmp_path)
    assert "spill" not in log or "0 bytes spill stores" in log


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("aligned,a_kmajor,b_kmajor",
                         [(al, ak, bk) for al in (True, False) for ak in (True, False) for bk in (True, False)])
def test_default_square_tile_does_not_spill(aligned, a_kmajor, b_kmajor, arch, tmp_path):
    """The untuned 128x128 tile holds 128 accumulators a thread on four warps; layouts that stage
    their loads through registers take it on eight warps, or ptxas spills (NVRTC 13.0 and 13.5)."""
    tile = default_tile(1536, 1536, 1536, aligned=aligned)
    assert (tile.block_m, tile.block_n) == (128, 128)
    assert tile in gemm_search_space()
    res = _compile(emit_gemm(GemmSpec("f16", RICH, aligned=aligned, a_kmajor=a_kmajor,
                                      b_kmajor=b_kmajor), tile), arch)
    log = _ptxas(res.ptx, arch, tmp_path)
    assert "spill" not in log or "0 bytes spill stores" in log


def test_no_sizes_in_source():
    src = emit_gemm(GemmSpec("f16", BIAS_GELU), GemmTile())
    assert "4096" not in src          # sizes are parameters, never baked in
    assert src == emit_gemm(GemmSpec("f16", BIAS_GELU), GemmTile())   # deterministic (memo key)


@pytest.mark.parametrize("vec", [1, 8])
def test_epilogue_kernel_compiles(vec, tmp_path):
    for spec in (GemmSpec("f16", BIAS_GELU), GemmSpec("f16", RICH)):
        res = _compile(emit_epilogue_kernel(spec, vec=vec), "sm_90")
        _ptxas(res.ptx, "sm_90", tmp_path)


def test_search_space_and_default_tile():
    spec = GemmSpec("f16", BIAS_GELU)
    for t in gemm_search_space():
        t.check(spec)
        t.check(GemmSpec("f16", BIAS_GELU, a_kmajor=False, b_kmajor=True))
    assert default_tile(4096, 4096, 4096) in gemm_search_space()
    assert default_tile(1, 7, 33).block_m == 64
    with pytest.raises(ValueError):
        GemmTile(128, 128, 32, 3, 2, 4).check(spec)


def test_epilogue_validation():
    f32 = ("float32",)
    with pytest.raises(ValueError):                                       # no input 0
        GemmEpilogue((K.Load("v0", "float16", 0, EpInput().index),), "v0")
    with pytest.raises(ValueError):                                       # not a ufunc
        GemmEpilogue((K.Op("v0", "gelu", "float32", ("acc",), f32),), "v0")
    with pytest.raises(ValueError):                                       # forward reference
        GemmEpilogue((K.Op("v0", "tanh", "float32", ("v1",), f32), K.Op("v1", "exp", "float32", ("acc",), f32)), "v1")
    with pytest.raises(ValueError):                                       # a bool result
        GemmEpilogue((K.Op("v0", "isnan", "bool", ("acc",), f32),), "v0")
    GemmEpilogue((K.Op("v0", "tanh", "float32", ("acc",), f32),), "v0")


def _bias_gelu_group():
    import numpy as np
    from kfuse.fusion.plan import KernelGroup
    from kfuse.ir.graph import Node
    from kfuse.ir.ops import Op
    f16 = np.float16
    a = Node(Op.INPUT, f16, (64, 32), attrs={"index": 0, "name": "a"})
    w = Node(Op.INPUT, f16, (32, 48), attrs={"index": 1, "name": "w"})
    b = Node(Op.INPUT, f16, (48,), attrs={"index": 2, "name": "b"})
    mm = Node(Op.MATMUL, f16, (64, 48), (a, w))
    bb = Node(Op.BROADCAST, f16, (64, 48), (b,))
    y = Node(Op.ADD, f16, (64, 48), (mm, bb))
    half = Node(Op.CONST, f16, (), attrs={"value": 0.5})
    hb = Node(Op.BROADCAST, f16, (64, 48), (half,))
    z = Node(Op.MULTIPLY, f16, (64, 48), (y, hb))
    t = Node(Op.TANH, f16, (64, 48), (y,))
    out = Node(Op.MULTIPLY, f16, (64, 48), (z, t))
    g = KernelGroup(0, "matmul", (a, w, b, mm, bb, y, half, hb, z, t, out), (a, w, b), (out,), (64, 48), anchor=mm)
    bad = Node(Op.SIN, f16, (64, 48), (mm,))
    return g, KernelGroup(1, "matmul", (a, w, mm, bad), (a, w), (bad,), (64, 48), anchor=mm)


def test_group_epilogue_bias_gelu():
    """A matmul group's epilogue is its KernelIR's statements: the product rounded to float16
    first (NumPy's float16 product), the bias a row input fed by group input 2."""
    from kfuse.codegen.lower import lower_group
    from kfuse.runtime.gemm import group_epilogue_spec
    g, bad = _bias_gelu_group()
    ep, slots = group_epilogue_spec(g, lower_group(g))
    assert slots == (2,) and ep.inputs == (EpInput("f16", "row"),) and ep.out_dtype == "f16"
    assert ep.product_dtype == "float16"
    assert [s.op for s in ep.body if isinstance(s, K.Op)] == ["add", "multiply", "tanh", "multiply"]
    src = emit_gemm(GemmSpec("f16", ep))
    assert "kf_h2f(kf_f2h(acc_))" in src and "kf_tanh_fast(" in src
    res = _compile(src, "sm_90")
    assert "mma.sync" in res.ptx
    # something the GEMM does not apply in registers -> None
    assert group_epilogue_spec(bad, lower_group(bad)) is None


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("vec", [1, 8])
def test_epilogue_kernel_in_place_variants_compile(vec, reverse, tmp_path):
    """The cuBLAS candidate's epilogue kernel (may run in place: X carries no __restrict__),
    rows first-first or last-first, scalar or 16-byte accesses: NVRTC CUBIN + ptxas."""
    src = emit_epilogue_kernel(GemmSpec("f16", BIAS_GELU), vec=vec, reverse=reverse)
    assert ("(rows - 1 - r)" in src) == reverse
    assert "const unsigned short* X," in src
    res = _compile(src, "sm_90")
    _ptxas(res.ptx, "sm_90", tmp_path)
