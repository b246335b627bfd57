"""GPU: the Hopper GEMM (TMA + wgmma, ``codegen.gemm_wgmma``) through ``GemmRunner``, against a
float64 NumPy reference (``test_gemm.check``): every tile of its search space (ping-pong and split
tiles) on edge shapes, B row-major and transposed, batched and broadcast batches, rows padded
past K (a view), epilogue inputs along rows, columns and the full output with a run-time scalar,
bfloat16, and int8/uint8 bit for bit. On an sm_90 device each case asserts the TMA kernel ran;
elsewhere (and for layouts it does not take: a negative stride) the mma.sync kernel runs the same
cases. Skips itself without CuPy or a GPU."""
from __future__ import annotations

import numpy as np
import pytest

from backends import gpu_missing

pytestmark = pytest.mark.gpu
if gpu_missing("cuda"):
    pytest.skip(gpu_missing("cuda"), allow_module_level=True)
import cupy as cp  # noqa: E402

from kfuse.codegen import gemm_wgmma as W  # noqa: E402
from kfuse.codegen.gemm_spec import EpInput, GemmEpilogue, GemmSpec  # noqa: E402
from test_gemm import BIAS_GELU, RUNNER, check, operand, rel_err  # noqa: E402

HOPPER = int(cp.cuda.Device().compute_capability) == 90


def ran_tma(expected: bool = True):
    if HOPPER:
        assert ("kfuse_gemm_tma(" in (RUNNER.last_source or "")) == expected


@pytest.mark.parametrize("tb", [False, True], ids=["b_rowmajor", "b_transposed"])
@pytest.mark.parametrize("M,N,K,batch", [(1, 16, 64, None), (37, 72, 40, None), (130, 264, 104, None),
                                         (300, 520, 200, 4), (1024, 1024, 1024, None)])
@pytest.mark.parametrize("tile", W.SEARCH, ids=lambda t: t.name())
def test_tiles_shapes_layouts(tile, M, N, K, batch, tb):
    err = check(M, N, K, "f16", BIAS_GELU, batch=batch, tb=tb, tile=tile)
    ran_tma()
    assert err < 5e-3


@pytest.mark.parametrize("tile", W.SEARCH[:1] + W.SEARCH[3:], ids=lambda t: t.name())
def test_epilogue_inputs_scalar_and_f32_output(tile):
    ep = GemmEpilogue.chain(("multiply", ("p", 0)), ("add", ("in", 0)), ("add", ("in", 1)), "silu",
                            ("add", ("in", 2)), inputs=(EpInput("f16", "col"), EpInput("f16", "row"),
                                                        EpInput("f32", "full")), n_params=1, out_dtype="f32")
    check(200, 136, 72, "f16", ep, batch=3, params=(0.5,), tile=tile)
    ran_tma()


def test_bf16_both_b_layouts():
    ep = GemmEpilogue.chain(("add", ("in", 0)), "relu", inputs=(EpInput("bf16", "full"),), out_dtype="bf16")
    for tb in (False, True):
        check(300, 200, 136, "bf16", ep, tb=tb)
        ran_tma()


def test_broadcast_batches_and_padded_rows():
    """A 3-D A with a 2-D B (B's map is one deep, read at batch 0) and the reverse; an A whose
    rows are a view padded past K (its row stride is not K)."""
    rng = np.random.default_rng(5)
    f16 = lambda *s: rng.standard_normal(s).astype(np.float16)
    for ah, bh in ((f16(3, 70, 64), f16(64, 48)), (f16(70, 64), f16(3, 64, 48))):
        got = RUNNER.run(cp.asarray(ah), cp.asarray(bh), backend="generated").get()
        ran_tma()
        assert rel_err(got.astype(np.float64), np.matmul(ah.astype(np.float64), bh)) < 5e-3
    big = f16(129, 200)
    a = cp.asarray(big)[:, :136]                      # row stride 200 elements, 16-byte rows
    b = f16(136, 80)
    got = RUNNER.run(a, cp.asarray(b), backend="generated").get()
    ran_tma()
    assert rel_err(got.astype(np.float64), big[:, :136].astype(np.float64) @ b) < 5e-3


def test_negative_stride_takes_the_mma_sync_kernel():
    a, ah = operand((64, 96), "f16")
    b, bh = operand((96, 40), "f16")
    got = RUNNER.run(a[::-1], b, backend="generated").get()
    ran_tma(False)
    assert rel_err(got.astype(np.float64), ah[::-1] @ bh) < 5e-3


@pytest.mark.parametrize("tile", W.SEARCH, ids=lambda t: t.name())
def test_int8_tiles_bit_exact(tile):
    rng = np.random.default_rng(9)
    a = rng.integers(0, 256, (300, 384), dtype=np.uint8)
    b = rng.integers(-128, 128, (384, 200), dtype=np.int8)
    spec = GemmSpec("u8", GemmEpilogue(out_dtype="i32", product_dtype="int32"))
    got = RUNNER.run(cp.asarray(a), cp.asarray(b), [], spec, tile, backend="generated").get()
    ran_tma()
    assert np.array_equal(got, a.astype(np.int32) @ b.astype(np.int32))
