"""GPU: the int8 GEMM kernel through ``GemmRunner`` directly, bit for bit against NumPy's int32
matmul (and its float64 dequantisation): every int8 tile of the autotuner's space, operand layouts
read in place (row-major A, K-major B) or packed K-major first (a row-major B, a transposed A,
views whose rows are not 16-byte aligned), int8 x uint8 mixes, batched and broadcast batches,
int16 and float64 outputs, K = 0, and int32 sums that overflow. Skips itself without CuPy or a GPU.
The jit path (plan -> this kernel) is ``tests/runtime/test_gemm_int8.py``'s GPU half."""
from __future__ import annotations

import numpy as np
import pytest

from backends import gpu_missing
from kfuse.codegen.gemm_cuda import gemm_search_space
from kfuse.codegen.gemm_spec import EpInput, GemmEpilogue, GemmSpec
from kfuse.runtime.gemm import GemmRunner

pytestmark = pytest.mark.gpu
if gpu_missing("cuda"):
    pytest.skip(gpu_missing("cuda"), allow_module_level=True)
import cupy as cp  # noqa: E402
RUNNER = GemmRunner()
RNG = np.random.default_rng(88)
PRODUCT = GemmEpilogue(out_dtype="i32", product_dtype="int32")
SCALES = (EpInput("f32", "col", "m"), EpInput("f32", "row"), EpInput("f32", "row"))
DEQUANT = GemmEpilogue.chain(("multiply", ("in", 0)), ("multiply", ("in", 1)), ("add", ("in", 2)),
                             ("cast", "float16"), out_dtype="f16", inputs=SCALES,
                             product_dtype="int32", dtype="float64")


def ints(shape, dtype=np.int8):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, int(info.max) + 1, shape, dtype=dtype)


def ref_product(a, b):
    return np.matmul(a.astype(np.int32), b.astype(np.int32))


def run(a, b, ep=PRODUCT, inputs=(), tile=None):
    spec = GemmSpec("s8", ep)                 # dtypes and layout are read off the arrays
    out = RUNNER.run(cp.asarray(a) if isinstance(a, np.ndarray) else a,
                     cp.asarray(b) if isinstance(b, np.ndarray) else b,
                     [cp.asarray(x) for x in inputs], spec, tile, backend="generated")
    return out.get()


def bits_equal(got, ref):
    assert got.dtype == ref.dtype and got.shape == ref.shape
    assert np.array_equal(got.view(f"u{got.itemsize}"), ref.view(f"u{ref.itemsize}"))


@pytest.mark.parametrize("tile", gemm_search_space("s8"), ids=lambda t: t.name())
def test_tiles_odd_shape(tile):
    a, b = ints((300, 200)), ints((200, 260))
    bits_equal(run(a, b, tile=tile), ref_product(a, b))


@pytest.mark.parametrize("M,N,K", [(1, 7, 33), (1, 16, 64), (37, 61, 45), (130, 257, 100),
                                   (128, 256, 128), (200, 136, 1000)])
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
def test_layouts_edges(M, N, K, layout):
    """n: the operand as NumPy lays it out ((M, K), (K, N)); t: a transposed view of the other."""
    a = ints((M, K)) if layout[0] == "n" else ints((K, M))
    b = ints((K, N)) if layout[1] == "n" else ints((N, K))
    da, db = cp.asarray(a), cp.asarray(b)
    if layout[0] == "t":
        a, da = a.T, da.T
    if layout[1] == "t":
        b, db = b.T, db.T
    bits_equal(run(da, db), ref_product(a, b))


def test_unaligned_views_and_signedness():
    a, b = ints((70, 97), np.uint8), ints((96, 50))
    da, db = cp.asarray(a)[:, 1:], cp.asarray(b)          # rows start 1 byte in: packed
    bits_equal(run(da, db), ref_product(a[:, 1:], b))
    a2, b2 = ints((70, 96)), ints((96, 50), np.uint8)
    bits_equal(run(a2, b2), ref_product(a2, b2))
    a3, b3 = ints((33, 64), np.uint8), ints((64, 17), np.uint8)
    bits_equal(run(a3, b3), ref_product(a3, b3))


def test_batched_and_broadcast_batch():
    a, b = ints((3, 65, 96)), ints((3, 96, 72))
    bits_equal(run(a, b), ref_product(a, b))
    w = ints((96, 72))
    bits_equal(run(a, w), ref_product(a, w))
    bt = ints((3, 72, 96))
    bits_equal(run(a, cp.asarray(bt).transpose(0, 2, 1)), ref_product(a, bt.transpose(0, 2, 1)))


def test_dequant_epilogue_bit_exact():
    M, N, K = 257, 130, 333
    a, b = ints((M, K)), ints((K, N))
    sr, sc, bias = (RNG.random(n, dtype=np.float32) for n in (M, N, N))
    got = run(a, b, DEQUANT, (sr, sc, bias))
    ref = (ref_product(a, b) * sr[:, None] * sc + bias).astype(np.float16)   # NumPy's float64
    bits_equal(got, ref)


def test_int16_and_float64_outputs():
    a, b = ints((40, 300)), ints((300, 24))
    bits_equal(run(a, b, GemmEpilogue(out_dtype="i16", product_dtype="int16")),
               np.matmul(a.astype(np.int16), b.astype(np.int16)))
    sr = RNG.random(40, dtype=np.float32)
    ep = GemmEpilogue.chain(("multiply", ("in", 0)), out_dtype="f64", inputs=SCALES[:1],
                            product_dtype="int32", dtype="float64")
    bits_equal(run(a, b, ep, (sr,)), ref_product(a, b) * sr[:, None])


def test_empty_k_and_overflow():
    a, b = ints((5, 0)), ints((0, 9))
    bits_equal(run(a, b), ref_product(a, b))
    K = 140_000                                # 128 * 128 * K > 2**31: the sums wrap
    a, b = np.full((3, K), -128, np.int8), np.full((K, 5), -128, np.int8)
    a[1] = ints(K)
    bits_equal(run(a, b), ref_product(a, b))
