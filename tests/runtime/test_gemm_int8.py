"""The int8 GEMM through ``kfuse.jit``, bit for bit against NumPy on every backend: the CPU here
(NumPy's matmul and a Numba epilogue), the GPU backends on the int8 tensor cores (``gpu``-marked:
the lead's GPU run). Shapes are odd on purpose: M, N, K not multiples of any tile and K not a
multiple of 32 (the k edge of the last tile is masked), B row-major (packed K-major first) and
K-major (``x @ w.T``, read in place), batched, with and without the dequantising epilogue, and a
K whose int32 sums overflow (NumPy's int32 matmul wraps; so does the tensor cores' int32
accumulation). Not on numba-cuda, which refuses matmul."""
from __future__ import annotations

import numpy as np
import pytest

from backends import jit_and_numpy

RNG = np.random.default_rng(8)
pytestmark = pytest.mark.backends("cpu", "cuda")      # (numba-cuda runs no contraction)


def ints(shape, dtype=np.int8):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, int(info.max) + 1, shape, dtype=dtype)


def scales(n):
    return (RNG.random(n, dtype=np.float32) + np.float32(0.5)) * np.float32(1e-3)


def assert_bits(got, ref):
    """Same dtype, shape and bits (no tolerance: the product and its epilogue are NumPy's)."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    assert np.array_equal(got.view(f"u{got.itemsize}"), ref.view(f"u{ref.itemsize}"))


def dequant(a, b, sr, sc, bias):
    acc = a.astype(np.int32) @ b.astype(np.int32)
    return (acc * sr[:, None] * sc + bias).astype(np.float16)


def dequant_f32(a, b, sr, sc, bias):
    acc = a.astype(np.int32) @ b.astype(np.int32)
    return (acc * sr[:, None] * sc + bias).astype(np.float32)


def dequant_f64(a, b, sr, sc):                 # no cast: float64, as NumPy promotes
    return (a.astype(np.int32) @ b.astype(np.int32)) * sr[:, None] * sc


def linear(x, w, sr, sc):                      # a weight stored [N, K]: x @ w.T, K-major
    acc = x.astype(np.int32) @ w.T.astype(np.int32)
    return (acc * sr[:, None] * sc).astype(np.float16)


def product(a, b):
    return a.astype(np.int32) @ b.astype(np.int32)


def product_t(a, w):
    return a.astype(np.int32) @ w.astype(np.int32).T


def product_i16(a, b):
    return a.astype(np.int16) @ b.astype(np.int16)


def batched(a, b, sr, sc):
    acc = a.astype(np.int32) @ b.astype(np.int32)
    return (acc * sr[:, :, None] * sc[:, None, :]).astype(np.float32)


SHAPES = [(1, 7, 33), (67, 45, 133), (130, 258, 100)]


@pytest.mark.parametrize("M,N,K", SHAPES)
@pytest.mark.parametrize("fn", [dequant, dequant_f32])
def test_dequant_bit_exact(backend, fn, M, N, K):
    a, b = ints((M, K)), ints((K, N))
    got, ref = jit_and_numpy(fn, backend, a, b, scales(M), scales(N), scales(N))
    assert_bits(got, ref)


@pytest.mark.parametrize("M,N,K", SHAPES[1:])
def test_dequant_float64_and_linear_weight(backend, M, N, K):
    a, b, w = ints((M, K)), ints((K, N)), ints((N, K))
    assert_bits(*jit_and_numpy(dequant_f64, backend, a, b, scales(M), scales(N)))
    assert_bits(*jit_and_numpy(linear, backend, a, w, scales(M), scales(N)))


@pytest.mark.parametrize("M,N,K", SHAPES)
def test_product_both_layouts(backend, M, N, K):
    a, b = ints((M, K)), ints((K, N))
    assert_bits(*jit_and_numpy(product, backend, a, b))
    assert_bits(*jit_and_numpy(product_t, backend, a, np.ascontiguousarray(b.T)))


def test_uint8_operands_and_int16_product(backend):
    a, b = ints((37, 70), np.uint8), ints((70, 29))
    assert_bits(*jit_and_numpy(product, backend, a, b))
    assert_bits(*jit_and_numpy(product, backend, ints((37, 70)), ints((70, 29), np.uint8)))
    assert_bits(*jit_and_numpy(product_i16, backend, ints((37, 300)), ints((300, 29))))


def test_batched(backend):
    a, b = ints((3, 50, 96)), ints((3, 96, 40))
    got, ref = jit_and_numpy(batched, backend, a, b, scales(150).reshape(3, 50), scales(120).reshape(3, 40))
    assert_bits(got, ref)
    assert_bits(*jit_and_numpy(product, backend, a, ints((96, 40))))


def test_overflowing_sums_wrap(backend):
    """K * 128 * 128 > 2**31: NumPy's int32 sums wrap modulo 2**32; so must the kernel's."""
    K = 140_000
    a = np.full((3, K), -128, np.int8)
    a[1] = ints(K)
    b = np.full((K, 5), -128, np.int8)
    got, ref = jit_and_numpy(product, backend, a, b)
    assert int(np.iinfo(np.int32).max) < 128 * 128 * K and ref[0, 0] != 128 * 128 * K
    assert_bits(got, ref)
