"""A matmul group's product through cuBLAS (CuPy), the operand its epilogue kernel then reads.

:func:`contract` applies the group's operand steps (casts, transposes as views) and multiplies;
3-D f16/f32 products of equal-batch operands go through one strided-batched cuBLAS call
(:func:`_batched`); :class:`tf32` switches CuPy's f32 compute type to TF32 for one call
(``kfuse.jit(allow_tf32=True)``). Used by the GPU launcher (``gpu_launch``) and by the cuBLAS
candidate of ``runtime.gemm``.
"""
from __future__ import annotations

import numpy as np

from ..codegen import kernel_ir as K


def contract(c: K.Contraction, ins, allow_tf32: bool = False):
    """A matmul group's product through cuBLAS, read by its epilogue kernel.

    No copies beyond what the contraction says: operand casts (``astype``) only when the group
    has them; transposes are views (cuBLAS reads a transposed 2-D operand through its trans flag).
    3-D f16/f32 products of equal-batch operands go through one strided-batched cuBLAS call
    (``cupy.matmul`` would convert batched f16 operands to f32 copies). f32 with ``allow_tf32``:
    cuBLAS may use TF32 tensor cores (CuPy's compute type switched for this call only)."""
    import cupy

    def side(a, steps):
        for kind, arg in steps:
            a = a.astype(arg) if kind == "cast" else cupy.transpose(a, arg)
        return a
    a, b = side(ins[c.lhs], c.lhs_steps), side(ins[c.rhs], c.rhs_steps)
    if allow_tf32 and a.dtype == np.float32 and b.dtype == np.float32:
        with tf32():
            r = matmul(a, b)
    else:
        r = matmul(a, b)
    return r.astype(c.dtype, copy=False)


def matmul(a, b):
    import cupy
    if a.ndim == 3 and b.ndim == 3 and a.shape[0] == b.shape[0] and a.dtype == b.dtype \
            and a.dtype in (np.float16, np.float32) and a.shape[0] > 1:
        try:
            return _batched(a, b)
        except _NoBatched:
            pass
    return cupy.matmul(a, b)


class _NoBatched(Exception):
    pass


def _batched(a, b):
    """(B, M, K) @ (B, K, N) with one cublasGemmStridedBatchedEx, f32 accumulation. Each operand
    must have, per batch, a row- or column-major matrix with a uniform batch stride (else
    _NoBatched: the caller falls back to cupy.matmul)."""
    import cupy
    from cupy_backends.cuda.libs import cublas
    from cupy_backends.cuda.api import runtime as rt

    def layout(x):
        """(trans_flag_for_row_major_view, ld, batch_stride) in elements, or None."""
        sb, sr, sc = (s // x.itemsize for s in x.strides)
        r, cdim = x.shape[1], x.shape[2]
        if sc == 1 and sr >= max(1, cdim):
            return "n", sr, sb
        if sr == 1 and sc >= max(1, r):
            return "t", sc, sb
        return None
    B, M, K = a.shape
    N = b.shape[2]
    la, lb = layout(a), layout(b)
    if la is None or lb is None or min(M, N, K) == 0:
        raise _NoBatched()
    out = cupy.empty((B, M, N), a.dtype)
    # cuBLAS is column-major: C^T (N x M) = B^T (N x K) @ A^T (K x M). A row-major operand is its
    # column-major transpose already ("n"); a column-major one needs the trans flag ("t").
    op_n, op_t = cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_T
    tb = op_n if lb[0] == "n" else op_t
    ta = op_n if la[0] == "n" else op_t
    dt = rt.CUDA_R_16F if a.dtype == np.float16 else rt.CUDA_R_32F
    compute = cublas.CUBLAS_COMPUTE_32F
    if a.dtype == np.float32 and _tf32_state.on:
        compute = getattr(cublas, "CUBLAS_COMPUTE_32F_FAST_TF32", compute)
    one, zero = np.array(1.0, np.float32), np.array(0.0, np.float32)
    handle = cupy.cuda.device.get_cublas_handle()
    sa, sb_ = la[2], lb[2]
    if sa < 0 or sb_ < 0:
        raise _NoBatched()
    cublas.gemmStridedBatchedEx(
        handle, tb, ta, N, M, K, one.ctypes.data,
        b.data.ptr, dt, lb[1], sb_, a.data.ptr, dt, la[1], sa,
        zero.ctypes.data, out.data.ptr, dt, N, M * N, B, compute, cublas.CUBLAS_GEMM_DEFAULT)
    return out


class _TF32State:
    on = False


_tf32_state = _TF32State()


class tf32:
    """CuPy's f32 matmul compute type set to TF32 for the duration (restored after)."""

    def __enter__(self):
        from cupy._core import _routines_linalg as L
        self.L = L
        self.old = L.get_compute_type(np.float32)
        L.set_compute_type(np.float32, getattr(L, "COMPUTE_TYPE_TF32", 7))
        _tf32_state.on = True
        return self

    def __exit__(self, *exc):
        self.L.set_compute_type(np.float32, self.old)
        _tf32_state.on = False
        return False
