"""CPU-only checks of the Hopper GEMM emitter (``codegen.gemm_wgmma``): every tile of its search
space, for f16/bf16 operands with B K-major or N-major and int8/uint8 operands, compiles with NVRTC
for sm_90a and passes the machine's ``ptxas`` without spills; the PTX holds the TMA copies, the
``wgmma`` products of the right shape and types (B transposed only when it is N-major) and the
epilogue in the same kernel; tiles and layouts the kernel cannot take are refused; the runtime's
tensor maps describe each operand's dims, byte strides and box as the kernel reads them."""
from __future__ import annotations

import types

import pytest

from kfuse.codegen import gemm_wgmma as W
from kfuse.codegen.gemm_spec import EpInput, GemmEpilogue, GemmSpec
from kfuse.runtime import gemm_tma

pytest.importorskip("cuda.bindings.nvrtc")
from test_gemm_emit import _compile, _ptxas  # noqa: E402

BIAS_GELU = GemmEpilogue.chain(("add", ("in", 0)), "gelu_tanh", inputs=(EpInput("f16", "row"),))
RESIDUAL_F32 = GemmEpilogue.chain(("multiply", ("p", 0)), ("add", ("in", 0)), out_dtype="f32",
                                  inputs=(EpInput("f32", "full"),), n_params=1)
DEQUANT = GemmEpilogue.chain(("multiply", ("in", 0)), ("multiply", ("in", 1)), ("cast", "float16"),
                             out_dtype="f16", inputs=(EpInput("f32", "col", "m"), EpInput("f32", "row")),
                             product_dtype="int32", dtype="float64")
SPECS = [
    GemmSpec("f16", BIAS_GELU),                                         # x @ W (B N-major)
    GemmSpec("f16", RESIDUAL_F32, b_kmajor=True),                       # x @ W.T
    GemmSpec("bf16", GemmEpilogue(out_dtype="bf16")),
    GemmSpec("s8", DEQUANT, b_kmajor=True),
    GemmSpec("u8", GemmEpilogue(out_dtype="i32", product_dtype="int32"), b_kmajor=True, b_dtype="s8"),
]


@pytest.mark.parametrize("tile", W.SEARCH, ids=lambda t: t.name())
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.key()[:24])
def test_wgmma_gemm_compiles_without_spills(spec, tile, tmp_path):
    res = _compile(W.emit_wgmma(spec, tile), W.ARCH)
    ptx = res.ptx
    assert ptx.count(".entry") == 1 and "kfuse_gemm_tma" in ptx
    assert "cp.async.bulk.tensor.3d.shared::cluster.global" in ptx and "mbarrier.try_wait.parity" in ptx
    if spec.int8:
        b_t = spec.b_dtype or spec.dtype
        assert f"wgmma.mma_async.sync.aligned.m64n{tile.block_n}k32.s32.{spec.dtype}.{b_t}" in ptx
    else:
        assert f"wgmma.mma_async.sync.aligned.m64n{tile.block_n}k16.f32.{spec.dtype}.{spec.dtype}" in ptx
        trans_b = 0 if spec.b_kmajor else 1
        assert f"p, 1, 1, 0, {trans_b};" in ptx
    if spec.epilogue is BIAS_GELU:            # the epilogue is in this kernel, on the accumulators
        assert "tanh.approx.f32" in ptx
    if spec.epilogue is DEQUANT:
        assert "mul.rn.f64" in ptx and "cvt.rn.f16.f64" in ptx
    log = _ptxas(ptx, "sm_90a", tmp_path)
    assert "spill" not in log or "0 bytes spill stores" in log
    assert "serialized" not in log            # ptxas would serialise wgmma it cannot pipeline


def test_tiles_and_layouts_refused():
    f16 = GemmSpec("f16", GemmEpilogue())
    for spec in (GemmSpec("f16", GemmEpilogue(), aligned=False), GemmSpec("f16", GemmEpilogue(), a_kmajor=False),
                 GemmSpec("s8", GemmEpilogue(out_dtype="i32", product_dtype="int32")),   # int8 B N-major
                 GemmSpec("f32", GemmEpilogue(out_dtype="f32"))):
        assert not W.supports(spec)
        with pytest.raises(ValueError):
            W.emit_wgmma(spec, W.SEARCH[0])
    for bad in (W.WgmmaTile(256, 4, 2, True), W.WgmmaTile(96, 4), W.WgmmaTile(128, 1), W.WgmmaTile(256, 9, 1)):
        with pytest.raises(ValueError):
            bad.check(f16)
    for t in W.SEARCH:
        t.check(f16)
        assert t.smem_bytes(f16) <= 227 * 1024 and t.block_m * t.block_n * (1 if t.pingpong else 1) > 0


def test_default_tiles():
    f16, s8 = GemmSpec("f16", GemmEpilogue()), GemmSpec("s8", GemmEpilogue(out_dtype="i32", product_dtype="int32"))
    assert W.default_tile(f16, 4096, 4096).pingpong           # 1024 tiles: two or more a block
    assert not W.default_tile(f16, 512, 512).pingpong         # 16 tiles: split each by rows
    assert W.default_tile(s8, 8192, 8192).block_n == 256
    assert W.arch_for(W.emit_wgmma(f16, W.SEARCH[0]), "sm_90") == "sm_90a"
    assert W.arch_for("extern \"C\" __global__ void kfuse_gemm(", "sm_90") == "sm_90"


def _fake(ptr, shape, strides, itemsize):
    return types.SimpleNamespace(data=types.SimpleNamespace(ptr=ptr), shape=shape, itemsize=itemsize,
                                 strides=tuple(s * itemsize for s in strides), ndim=len(shape))


@pytest.mark.parametrize("b_kmajor", [False, True])
def test_tensor_maps_describe_operands(monkeypatch, b_kmajor):
    """Dims inner-first, byte strides, the boxes of the tile; a 2-D operand shared by the batch
    is a one-deep map the kernel reads at batch 0; a size-1 dim gets a valid stride."""
    made = []
    monkeypatch.setattr(gemm_tma, "tensor_map", lambda ptr, dt, dims, strides, box: made.append(
        (ptr, dt, tuple(dims), tuple(strides), tuple(box))) or len(made))
    launched = []
    fn = lambda grid, block, args, shared_mem: launched.append((grid, block, args, shared_mem))
    fn.ptr = 0
    import sys
    cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(driver=types.SimpleNamespace(funcSetAttribute=lambda *a: None)))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    spec = GemmSpec("f16", GemmEpilogue(), b_kmajor=b_kmajor)
    tile = W.SEARCH[0]
    B, M, N, K = 3, 300, 200, 136
    a = _fake(4096, (B, M, K), (M * 144, 144, 1), 2)            # padded rows: stride 144
    b = _fake(8192, (K, N), (1, K) if b_kmajor else (N, 1), 2)  # 2-D: shared by the batch
    out = _fake(0, (B, M, N), (M * N, N, 1), 2)
    call = types.SimpleNamespace(spec=spec, batch=B, M=M, N=N, K=K, a_strides=(M * 144, 144, 1),
                                 b_strides=(0,) + ((1, K) if b_kmajor else (N, 1)))
    gemm_tma.launch(fn, a, b, out, call, tile, [], (), 132)
    (pa, _, dims_a, st_a, box_a), (pb, _, dims_b, st_b, box_b) = made
    assert (pa, dims_a, st_a, box_a) == (4096, (K, M, B), (288, M * 288), (64, 128))
    if b_kmajor:
        assert (dims_b, st_b, box_b) == ((K, N, 1), (2 * K, 2 * K * N), (64, 128))
    else:
        assert (dims_b, st_b, box_b) == ((N, K, 1), (2 * N, 2 * N * K), (64, 64))
    grid, block, args, smem = launched[0]
    tiles = B * 3 * 2
    assert grid == (tiles, 1, 1) and block == (384, 1, 1) and smem == tile.smem_bytes(spec)
    assert [int(x) for x in args[3:9]] == [M, N, K, B, 1, 0]      # M N K batch a_bat b_bat
