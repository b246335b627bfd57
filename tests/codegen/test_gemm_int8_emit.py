"""CPU-only checks of the int8 GEMM emitter: the CUDA C compiles with NVRTC for sm_80 and sm_90
(a CUBIN: NVRTC's ptxas accepted it) and the PTX also passes the machine's ``ptxas`` (helpers of
``test_gemm_emit.py``); the PTX holds the int8 ``mma.sync.m16n8k32`` with int32 accumulators (no
``.satfinite``: the sums wrap as NumPy's do) and its float64 dequantisation rounds each op (no
FMA); the K-major pack kernel compiles; tiles and layouts the kernel cannot take are refused."""
from __future__ import annotations

import numpy as np
import pytest

from kfuse.codegen import gemm_int8
from kfuse.codegen.gemm_cuda import GemmTile, default_tile, emit_gemm, gemm_search_space
from kfuse.codegen.gemm_spec import EpInput, GemmEpilogue, GemmSpec

pytest.importorskip("cuda.bindings.nvrtc")
from test_gemm_emit import _compile, _ptxas  # noqa: E402

SCALES = (EpInput("f32", "col", "m"), EpInput("f32", "row"), EpInput("f32", "row"))
DEQUANT = GemmEpilogue.chain(("multiply", ("in", 0)), ("multiply", ("in", 1)), ("add", ("in", 2)),
                             ("cast", "float16"), out_dtype="f16", inputs=SCALES,
                             product_dtype="int32", dtype="float64")
PRODUCT = GemmEpilogue(out_dtype="i32", product_dtype="int32")
INT16 = GemmEpilogue(out_dtype="i16", product_dtype="int16")
F64 = GemmEpilogue.chain(("multiply", ("in", 0)), out_dtype="f64", inputs=SCALES[:1],
                         product_dtype="int32", dtype="float64")


def _spec(ep, a="s8", b=None):
    return GemmSpec(a, ep, a_kmajor=True, b_kmajor=True, b_dtype=b)


CASES = [
    (_spec(DEQUANT), default_tile(8192, 8192, 8192, "s8")),
    (_spec(PRODUCT, "u8", "s8"), GemmTile(64, 64, 64, 2, 2, 4)),
    (_spec(INT16, "s8", "u8"), GemmTile(256, 128, 128, 4, 2, 3)),
    (_spec(F64), GemmTile(128, 128, 64, 2, 2, 4)),
]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_int8_gemm_compiles(case, arch, tmp_path):
    spec, tile = CASES[case]
    res = _compile(emit_gemm(spec, tile), arch)
    types = gemm_int8.mma_types(spec.dtype, spec.b_dtype)
    assert f"mma.sync.aligned.m16n8k32.row.col.{types}" in res.ptx and "satfinite" not in res.ptx
    assert "m16n8k16" not in res.ptx and "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in res.ptx
    assert "cp.async.cg.shared.global" in res.ptx and ".trans" not in res.ptx
    if spec.epilogue is DEQUANT:        # float64 ops rounded one by one, as NumPy's loops
        assert "mul.rn.f64" in res.ptx and "add.rn.f64" in res.ptx and "fma.rn.f64" not in res.ptx
        assert "cvt.rn.f16.f64" in res.ptx           # one rounding to float16, from float64
    log = _ptxas(res.ptx, arch, tmp_path)
    assert "spill" not in log or "0 bytes spill stores" in log


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_pack_kernel_compiles(arch):
    res = _compile(gemm_int8.PACK_KERNEL, arch)
    assert "kfuse_kmajor_pack" in res.ptx


def test_int8_tiles():
    spec = _spec(DEQUANT)
    space = gemm_search_space("s8")
    assert space == gemm_search_space("u8") and default_tile(8192, 8192, 8192, "s8") in space
    for t in space:
        t.check(spec)
        assert t.block_k % gemm_int8.MMA_K == 0
        assert t.smem_bytes(spec) == t.stages * (t.block_m + t.block_n) * (t.block_k + 16)
    assert default_tile(1, 7, 33, "s8").block_m == 64
    with pytest.raises(ValueError):
        GemmTile(128, 128, 16, 2, 2, 4).check(spec)         # half an m16n8k32 step


def test_int8_refusals():
    with pytest.raises(ValueError, match="K-major"):
        emit_gemm(GemmSpec("s8", PRODUCT, a_kmajor=True, b_kmajor=False))      # no ldmatrix.trans for bytes
    with pytest.raises(ValueError, match="K-major"):
        emit_gemm(GemmSpec("s8", PRODUCT, a_kmajor=True, b_kmajor=True, aligned=False))
    with pytest.raises(ValueError, match="integer product"):
        emit_gemm(_spec(GemmEpilogue(out_dtype="f16")))
    with pytest.raises(ValueError, match="float product"):
        emit_gemm(GemmSpec("f16", PRODUCT))


def test_int8_source_has_no_sizes():
    spec, tile = CASES[0]
    src = emit_gemm(spec, tile)
    assert "8192" not in src and src == emit_gemm(spec, tile)
    assert spec.key().startswith("s8_kk_al_") and spec.key().endswith("->f16")
    assert _spec(PRODUCT, "s8", "u8").key().startswith("s8xu8_")


def test_chain_in_float64_reads_the_int32_sum():
    body = DEQUANT.body
    assert body[0].op == "cast" and body[0].arg_dtypes == ("int32",) and body[0].dtype == "float64"
    assert DEQUANT.result_dtype == "float64" and np.dtype(DEQUANT.product_dtype) == np.int32
