"""int8 GEMM operands made K-major for the tensor-core kernel (``codegen.gemm_int8``): an operand
whose K dim already has unit stride, 16-byte rows and a 16-byte aligned start is used as it is
(a row-major A [M, K] with K % 16 == 0; a Linear weight W [N, K] read as ``x @ W.T``); any other
(a row-major B [K, N], a view with odd strides) is copied once by ``kfuse_kmajor_pack`` into a
buffer of rows padded to 16 bytes, and the kernel reads that view. Why a copy rather than a
transposing stage in the kernel: ``codegen/gemm_int8.py``'s docstring."""
from __future__ import annotations

import math

import numpy as np

from ..codegen.gemm_int8 import PACK_KERNEL, PACK_TILE


def _ready(x, k_axis: int) -> bool:
    """K unit-stride, the other dims' strides multiples of 16 bytes, the start 16-byte aligned."""
    st = x.strides
    others = [s for d, s in enumerate(st) if d != k_axis % x.ndim and x.shape[d] > 1]
    return st[k_axis] == 1 and all(s % 16 == 0 for s in others) \
        and x.data.ptr % 16 == 0


def _pack(function, x, k_axis: int):
    """A K-major copy of ``x`` (int8/uint8, 2-D or 3-D, K at ``k_axis`` = -1 for A, -2 for B):
    the buffer is (batch, O, Kp), Kp = K rounded up to 16; returns the view of ``x``'s shape."""
    import cupy as cp
    x3 = x.reshape((1,) + x.shape) if x.ndim == 2 else x
    batch = x3.shape[0]
    if k_axis == -1:                            # A: (b, M, K)
        K, O = x3.shape[2], x3.shape[1]
        sk, so = x3.strides[2], x3.strides[1]
    else:                                       # B: (b, K, N)
        K, O = x3.shape[1], x3.shape[2]
        sk, so = x3.strides[1], x3.strides[2]
    Kp = -(-K // 16) * 16
    buf = cp.empty((batch, O, Kp), dtype=x.dtype)
    if batch and O and K:
        fn = function(PACK_KERNEL, "kfuse_kmajor_pack")
        grid = (math.ceil(O / PACK_TILE), math.ceil(K / PACK_TILE), batch)
        fn(grid, (PACK_TILE, 4, 1), (x3, buf, np.int32(K), np.int32(O), np.int32(Kp),
                                    np.int64(x3.strides[0]), np.int64(sk), np.int64(so),
                                    np.int64(O * Kp), np.int64(Kp)))
    view = buf[:, :, :K]
    if k_axis == -2:
        view = view.swapaxes(1, 2)
    return view[0] if x.ndim == 2 else view


def kmajor_operands(function, a, b):
    """``(a, b)`` as the int8 kernel reads them: each K-major with 16-byte rows, packed when not.
    ``function(source, name)`` compiles and loads a kernel (``GemmRunner.function``)."""
    if a.shape[-1] == 0:
        return a, b                             # K == 0: nothing is read
    a = a if _ready(a, -1) else _pack(function, a, -1)
    b = b if _ready(b, -2) else _pack(function, b, -2)
    return a, b
