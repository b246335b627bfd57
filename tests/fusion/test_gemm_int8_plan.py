"""The planner's int8 GEMM: ``a.astype(np.int32) @ b.astype(np.int32)`` of int8/uint8 arrays is
one matmul group on the int8 tensor cores (the generated kernel, shown by explain and by the
CUDA dumps), its dequantising epilogue fused with the scales' casts recomputed in it (no
full-size float64 copies of them); an int16 input, a float cast or an int64 product is not the
pattern. CPU only (plans for named GPUs, CUDA C written, not run)."""
from __future__ import annotations

import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy
from kfuse.autotune import space as S
from kfuse.codegen.gemm_cuda import int8_kernel_source
from kfuse.codegen.gemm_spec import EpInput, epilogue_of_kernel
from kfuse.codegen.lower import lower_group
from kfuse.fusion.gemm_int8 import int8_operands
from kfuse.fusion.gemm_registers import epilogue_in_registers

BIG = ("i8[8192,8192]", "i8[8192,8192]", "f32[8192]", "f32[8192]", "f32[8192]")


def dequant(a, b, sr, sc, bias):
    acc = a.astype(np.int32) @ b.astype(np.int32)
    return (acc * sr[:, None] * sc + bias).astype(np.float16)


def linear(x, w, sr, sc, bias):
    acc = x.astype(np.int32) @ w.T.astype(np.int32)
    return (acc * sr[:, None] * sc + bias).astype(np.float16)


def product(a, b):
    return a.astype(np.int32) @ b.astype(np.int32)


def product_i16(a, b):
    return a.astype(np.int16) @ b.astype(np.int16)


def product_i64(a, b):
    return a.astype(np.int64) @ b.astype(np.int64)


def float_cast(a, b):
    return a.astype(np.float32) @ b.astype(np.float32)


def _plan(fn, *specs, device="h100"):
    return kfuse.explain(kfuse.jit(fn), *specs, device=device)


@pytest.mark.parametrize("device", ["h100", "h200", "a100-80gb"])
def test_dequant_is_one_int8_kernel(device):
    p = _plan(dequant, *BIG, device=device)
    (g,) = p.groups
    assert g.kind == "matmul" and g.cost.impl == "generated"
    assert int8_operands(g.anchor) == ("s8", "s8") and epilogue_in_registers(g)
    names = dict(g.cost.candidates)
    assert names["generated"] < names["cublas+epilogue"] / 5      # CuPy's int32 matmul: no tensor cores
    text = str(p)
    inst = "mma.sync m16n8k32" if device == "a100-80gb" else "wgmma m64nNk32"
    assert f"int8 tensor cores ({inst} s8 x s8" in text and "impl:   generated" in text
    assert "f64[8192, 8192]" not in text                          # scales read as f32 vectors
    assert sum(i.nbytes for i in g.inputs) == 2 * 8192 * 8192 + 3 * 4 * 8192


def test_linear_weight_and_uint8():
    (g,) = _plan(linear, "i8[4096,1024]", "u8[512,1024]", "f32[4096]", "f32[512]", "f32[512]").groups
    assert int8_operands(g.anchor) == ("s8", "u8") and g.cost.impl == "generated"
    src = int8_kernel_source(lower_group(g), "sm_80")
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32" in src
    assert "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.u8" in int8_kernel_source(lower_group(g), "sm_90")


@pytest.mark.parametrize("fn,specs", [
    (product_i16, ("i8[512,256]", "i8[256,128]")),
    (product, ("u8[512,256]", "i8[256,128]")),
])
def test_plain_products(fn, specs):
    (g,) = _plan(fn, *specs).groups
    assert int8_operands(g.anchor) is not None and g.cost.impl == "generated"


@pytest.mark.parametrize("fn,specs", [
    (product, ("i16[512,256]", "i8[256,128]")),      # an int16 operand
    (float_cast, ("i8[512,256]", "i8[256,128]")),    # cast to float
    (product_i64, ("i8[512,256]", "i8[256,128]")),   # int64 sums may pass int32's range
])
def test_not_the_pattern(fn, specs):
    (g,) = _plan(fn, *specs).groups
    assert int8_operands(g.anchor) is None
    assert "int8 tensor cores" not in str(_plan(fn, *specs))
    assert int8_kernel_source(lower_group(g)) is None and int8_kernel_source(lower_group(g), "sm_80") is None


def test_epilogue_reads_scales_through_their_dims():
    (g,) = _plan(dequant, "i8[256,512]", "i8[512,128]", "f32[256]", "f32[128]", "f32[128]").groups
    kir = lower_group(g)
    ep, slots = epilogue_of_kernel(kir)
    assert ep.product_dtype == "int32" and ep.out_dtype == "f16" and ep.result_dtype == "float16"
    assert ep.inputs == (EpInput("f32", "col", "m"), EpInput("f32", "row"), EpInput("f32", "row"))
    assert [s.dtype for s in ep.body if getattr(s, "op", "") == "multiply"] == ["float64", "float64"]
    src = int8_kernel_source(kir, "sm_80")
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" in src and "kf_d2h" in src


def test_dumps_show_the_int8_kernel():
    """The dumps show what the arch runs: sm_90 the TMA + wgmma kernel (compiled for sm_90a),
    sm_80 the mma.sync one; either with the float64 dequantisation in the same kernel."""
    low = kfuse.jit(dequant, backend="cuda").lower(*BIG)
    assert "kfuse_gemm_tma" in low.as_text("cuda")           # the dumps' default arch: sm_90
    pytest.importorskip("cuda.bindings.nvrtc")
    ptx = low.ptx("sm_90")
    assert "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8" in ptx and "cvt.rn.f16.f64" in ptx
    ptx = low.ptx("sm_80")
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" in ptx and "cvt.rn.f16.f64" in ptx


def test_autotune_space_has_int8_tiles():
    (g,) = _plan(dequant, *BIG).groups
    assert S.gemm_dtype(g) == "s8"
    tiles = [c for c in S.space_for(g, "cuda") if c.kind == "gemm"]
    assert tiles and all(int(c["block_k"]) % 32 == 0 for c in tiles)


def test_float_epilogue_casts_are_recomputed():
    """A float product's epilogue reading float16 vectors cast to float32 recomputes the casts
    (was: each cast and broadcast written at the product's full size by kernels of their own)."""
    def f(a, b, sr, bias):
        return (a @ b) * sr[:, None] + bias
    p = _plan(f, "f32[256,512]", "f32[512,128]", "f16[256]", "f16[128]")
    (g,) = p.groups
    assert g.kind == "matmul" and "f32[256, 128]" not in str(p).split("reads:")[1].split("\n")[0]


def cast_then_transpose(a, w):
    return a.astype(np.int32) @ w.astype(np.int32).T


def f16_cast_then_transpose(a, w):
    return a @ w.astype(np.float16).T


@pytest.mark.parametrize("fn,specs", [(cast_then_transpose, ("i8[64,96]", "i8[32,96]")),
                                      (f16_cast_then_transpose, ("f16[64,96]", "f32[32,96]"))])
def test_cast_then_transpose_is_an_operand_step(fn, specs):
    """``w.astype(t).T``: the cast folds into the matmul's operand loads and the transpose into
    its index math (one group reading ``w`` itself), as ``w.T.astype(t)`` does; the int8 pattern
    then reaches the int8 kernel with its int8 operands, and the CPU result is NumPy's."""
    (g,) = _plan(fn, *specs, device="h200").groups
    assert g.kind == "matmul" and [n.shape for n in g.inputs] == [(64, 96), (32, 96)]
    assert [n.op.value for n in g.inputs] == ["input", "input"]
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (64, 96)).astype(np.int8) if fn is cast_then_transpose else rng.standard_normal((64, 96)).astype(np.float16)
    w = rng.integers(-128, 128, (32, 96)).astype(np.int8) if fn is cast_then_transpose else rng.standard_normal((32, 96)).astype(np.float32)
    got, ref = kfuse.jit(fn)(a, w), fn(a, w)
    if fn is cast_then_transpose:
        assert np.array_equal(got, ref)
    else:
        assert_matches_numpy(got, ref, reductions=True)
