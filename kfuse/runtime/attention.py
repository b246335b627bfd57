"""Run an attention group's one kernel (``codegen.attention_cuda``) on CuPy arrays.

:func:`group_runner` gives, for a plan's attention group, a callable ``(ins, out) -> out``: the
group's inputs (CuPy arrays, bfloat16 ones as their uint16 bits) in ``group.inputs`` order and an
output buffer of the group's output shape. Leading (batch) dims are flattened to one: q, k and v
reach the kernel as (B, rows, d) views with the head dim contiguous and rows 16-byte aligned, and
an operand without that layout (a transposed ``k`` stored (..., d, n), a strided slice) is copied
once into it. The CUDA C is compiled by NVRTC for the device's arch on the first call and memoised
by its text (as ``runtime.gemm`` does for GEMMs).
"""
from __future__ import annotations

import math

import numpy as np

from ..codegen import nvrtc
from ..codegen.attention_cuda import default_attention_tile, emit_attention

_FUNCTIONS: dict = {}        # (source, arch) -> (module, function)


def _function(source: str):
    import cupy as cp
    arch = f"sm_{cp.cuda.Device().compute_capability}"
    fn = _FUNCTIONS.get((source, arch))
    if fn is None:
        compiled = nvrtc.compile(source, arch, name="kfuse_attention")
        mod = cp.cuda.function.Module()
        mod.load(compiled.cubin)
        fn = _FUNCTIONS[(source, arch)] = (mod, mod.get_function("kfuse_attention"))
    return fn[1]


def _rows(x, batch: int):
    """``x`` as a (batch, rows, d) array whose rows the kernel loads with 16-byte copies."""
    import cupy as cp
    x3 = x.reshape((batch,) + x.shape[-2:])
    s = x3.strides
    ok = (s[2] == x3.itemsize and s[1] % 16 == 0 and (s[0] % 16 == 0 or batch == 1)
          and x3.data.ptr % 16 == 0)
    return x3 if ok else cp.ascontiguousarray(x3)


def _score_strides(arr, axes) -> list:
    """The (b, m, n) element strides of a score array (0 along a coord it is broadcast on)."""
    item = arr.itemsize
    return [np.int64(0 if ax is None or arr.shape[ax] == 1 else arr.strides[ax] // item) for ax in axes]


def group_runner(group, kir):
    """The callable running attention group ``group`` (``kir.attention``: its AttentionIR)."""
    import cupy as cp
    a = kir.attention
    spec = a.spec
    tile = default_attention_tile(spec.head_dim)
    source = emit_attention(spec, tile)
    smem = tile.smem_bytes(spec.head_dim)

    def run(ins, out):
        fn = _function(source)
        if smem > 48 * 1024:
            attr = getattr(cp.cuda.driver, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8)
            cp.cuda.driver.funcSetAttribute(fn.ptr, attr, smem)
        q, k, v = ins[a.q], ins[a.k], ins[a.v]
        if a.k_transposed:
            k = cp.swapaxes(k, -1, -2)
        batch = math.prod(q.shape[:-2])
        M, N = q.shape[-2], k.shape[-2]
        q3, k3, v3 = _rows(q, batch), _rows(k, batch), _rows(v, batch)
        o3 = out.reshape((batch, M, out.shape[-1]))
        args = [q3, k3, v3, o3, np.int32(M), np.int32(N)]
        for x in (q3, k3, v3, o3):
            args += [np.int64(x.strides[0] // x.itemsize), np.int64(x.strides[1] // x.itemsize)]
        args.append(np.int32(a.causal_offset))
        for slot, *axes in a.score_inputs:
            e = ins[slot]
            args += [e, *_score_strides(e, [None if ax is None else ax for ax in axes])]
        if batch and M:
            fn((math.ceil(M / tile.block_m), batch), (tile.warps * 32,), tuple(args), shared_mem=smem)
        return out
    return run


def group_source(kir) -> str:
    """The CUDA C an attention group runs (stage dumps)."""
    from ..codegen.cuda import emit
    return emit(kir)
