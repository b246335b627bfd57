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


def contract(c: K.Contraction, ins, allow_tf32: bool = False, dtypes=(None, None)):
    """A matmul group's product through cuBLAS, read by its epilogue kernel.

    No copies beyond what the contraction says: operand casts (``astype``) only when the group
    has them; transposes are views (cuBLAS reads a transposed 2-D operand through its trans flag).
    3-D f16/f32 products of equal-batch operands go through one strided-batched cuBLAS call
    (``cupy.matmul`` would convert batched f16 operands to f32 copies). f32 with ``allow_tf32``:
    cuBLAS may use TF32 tensor cores (CuPy's compute type switched for this call only).
    ``dtypes``: the operands' IR dtypes. bfloat16 operands (their bits in uint16 arrays) are cast
    to float32 for NumPy's matmul loop, which is exact; two of them multiply as bfloat16 on the
    tensor cores with float32 accumulation and a float32 product (:func:`_batched`), the same
    products and sums as a float32 GEMM of the cast values."""
    import cupy
    bf16 = [str(d) == "bfloat16" for d in dtypes]

    def side(a, steps, is_bf16):
        for kind, arg in steps:
            if kind == "cast" and is_bf16:
                a = bf16_to_f32(a).astype(arg, copy=False)
                is_bf16 = False
            else:
                a = a.astype(arg) if kind == "cast" else cupy.transpose(a, arg)
        return a
    if all(bf16) and all(k == "permute" or str(a) == "float32" for k, a in c.lhs_steps + c.rhs_steps):
        a = side(ins[c.lhs], [s for s in c.lhs_steps if s[0] == "permute"], False)
        b = side(ins[c.rhs], [s for s in c.rhs_steps if s[0] == "permute"], False)
        return _bf16_product(a, b).astype(c.dtype, copy=False)
    a, b = side(ins[c.lhs], c.lhs_steps, bf16[0]), side(ins[c.rhs], c.rhs_steps, bf16[1])
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


def bf16_to_f32(a):
    """float32 values of bfloat16 bits (a uint16 CuPy array): the bits are the float32's top half."""
    import cupy
    return (a.astype(cupy.uint32) << 16).view(cupy.float32)


def _bf16_product(a, b):
    """bfloat16 (bits) ``a @ b``, float32 out: operands broadcast to one batch shape, as 3-D
    operands of one strided-batched call (copied contiguous where their layout is not a matrix
    with a uniform batch stride)."""
    import cupy
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = cupy.broadcast_to(a, batch + a.shape[-2:])
    b = cupy.broadcast_to(b, batch + b.shape[-2:])
    nb = int(np.prod(batch)) if batch else 1
    if 0 in (nb, a.shape[-2], a.shape[-1], b.shape[-1]):
        return cupy.zeros(batch + (a.shape[-2], b.shape[-1]), np.float32)

    def three(x):
        if x.ndim == 3:
            return x
        if x.ndim == 2:
            return x.reshape((1,) + x.shape)
        return cupy.ascontiguousarray(x).reshape((nb,) + x.shape[-2:])
    a3, b3 = three(a), three(b)
    try:
        out = _batched(a3, b3, bf16=True)
    except _NoBatched:
        out = _batched(cupy.ascontiguousarray(a3), cupy.ascontiguousarray(b3), bf16=True)
    return out.reshape(batch + out.shape[-2:])


def _batched(a, b, bf16: bool = False):
    """(B, M, K) @ (B, K, N) with one cublasGemmStridedBatchedEx, f32 accumulation. Each operand
    must have, per batch, a row- or column-major matrix with a uniform batch stride (else
    _NoBatched: the caller falls back to cupy.matmul). ``bf16``: uint16 operands holding bfloat16
    bits, a float32 product."""
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
    out = cupy.empty((B, M, N), np.float32 if bf16 else a.dtype)
    # cuBLAS is column-major: C^T (N x M) = B^T (N x K) @ A^T (K x M). A row-major operand is its
    # column-major transpose already ("n"); a column-major one needs the trans flag ("t").
    op_n, op_t = cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_T
    tb = op_n if lb[0] == "n" else op_t
    ta = op_n if la[0] == "n" else op_t
    dt = rt.CUDA_R_16F if a.dtype == np.float16 else rt.CUDA_R_32F
    dt_in = getattr(rt, "CUDA_R_16BF", 14) if bf16 else dt
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
        b.data.ptr, dt_in, lb[1], sb_, a.data.ptr, dt_in, la[1], sa,
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
