"""Launch the Hopper GEMM (:mod:`kfuse.codegen.gemm_wgmma`) on CuPy arrays: its tensor maps and grid.

A tensor map describes one operand to the copy engine (dims inner-first, byte strides, the box a
copy moves, 128-byte swizzle, zero fill past the edges). It is made on the host by
``cuTensorMapEncodeTiled`` (``cuda.bindings.driver``) and passed to the kernel by value as a
128-byte NumPy structured scalar, which CuPy's launch copies into the parameter buffer. Maps depend
on the array's address, so they are made each call (about 2 us each on the host).
"""
from __future__ import annotations

import math

import numpy as np

from ..codegen.gemm_spec import GemmSpec
from ..codegen.gemm_wgmma import WgmmaTile, supports
from ..errors import DeviceError

_TMAP = np.dtype([("v", np.uint64, 16)], align=True)        # CUtensorMap: 128 opaque bytes


def usable(spec: GemmSpec, a_strides, b_strides, cc: int) -> bool:
    """Whether the call can run the TMA + wgmma kernel: an sm_90 device, a layout the kernel
    loads, and no negative stride (a tensor map's strides are unsigned)."""
    return cc == 90 and supports(spec) and min(*a_strides, *b_strides) >= 0


def tensor_map(ptr: int, spec_dtype: str, dims, strides, box) -> np.void:
    """The tensor map of a 3-D operand: ``dims`` inner-first, ``strides`` (bytes) of dims 1 and 2,
    ``box`` (elements) of dims 0 and 1 (dim 2's box is 1)."""
    from cuda.bindings import driver as d
    dt = {"f16": d.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
          "bf16": d.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16}.get(
        spec_dtype, d.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT8)
    err, tm = d.cuTensorMapEncodeTiled(
        dt, 3, ptr, [d.cuuint64_t(int(x)) for x in dims], [d.cuuint64_t(int(s)) for s in strides],
        [d.cuuint32_t(int(b)) for b in (*box, 1)], [d.cuuint32_t(1)] * 3,
        d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        d.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        d.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != d.CUresult.CUDA_SUCCESS:
        raise DeviceError(f"kfuse GEMM: cuTensorMapEncodeTiled failed ({err}) for dims {dims}, "
                          f"strides {strides}, box {box}")
    out = np.zeros((), _TMAP)
    out["v"] = np.array(tm.opaque, dtype=np.uint64)
    return out[()]


def _operand_map(x, spec: GemmSpec, rows: int, cols: int, s_outer: int, s_batch: int, batch: int, box):
    """Map of a (rows x cols, unit stride along cols) operand, ``batch`` deep (1 when it does not
    step with the batch). A size-1 dim's stride is any valid one (it is never stepped)."""
    eb = spec.elem_bytes
    row_bytes = s_outer * eb if rows > 1 else max(16, -(-cols * eb // 16) * 16)
    batch_bytes = s_batch * eb if batch > 1 else row_bytes * rows
    return tensor_map(x.data.ptr, spec.dtype, (cols, rows, batch), (row_bytes, batch_bytes), box)


def launch(function, a, b, out, call, tile: WgmmaTile, ep_args: list, params, n_sms: int):
    """Run ``kfuse_gemm_tma`` (``function`` is its loaded kernel) for ``call``
    (:class:`kfuse.runtime.gemm.GemmCall`) into ``out``."""
    import cupy as cp
    spec, batch = call.spec, call.batch
    box_a, box_b = tile.boxes(spec)
    a_bat, b_bat = int(call.a_strides[0] != 0), int(call.b_strides[0] != 0)
    tm_a = _operand_map(a, spec, call.M, call.K, call.a_strides[1], call.a_strides[0],
                        batch if a_bat else 1, box_a)
    if spec.b_kmajor:          # stored N x K
        tm_b = _operand_map(b, spec, call.N, call.K, call.b_strides[2], call.b_strides[0],
                            batch if b_bat else 1, box_b)
    else:                      # stored K x N
        tm_b = _operand_map(b, spec, call.K, call.N, call.b_strides[1], call.b_strides[0],
                            batch if b_bat else 1, box_b)
    smem = tile.smem_bytes(spec)
    attr = getattr(cp.cuda.driver, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8)
    cp.cuda.driver.funcSetAttribute(function.ptr, attr, smem)
    sCb = out.strides[0] // out.itemsize if out.ndim == 3 else 0
    sCm = out.strides[-2] // out.itemsize
    tiles = batch * math.ceil(call.M / tile.block_m) * math.ceil(call.N / tile.block_n)
    args = [tm_a, tm_b, out, np.int32(call.M), np.int32(call.N), np.int32(call.K), np.int32(batch),
            np.int32(a_bat), np.int32(b_bat), np.int64(sCb), np.int64(sCm)]
    args += ep_args + [np.float32(p) for p in params]
    if tiles:
        function((min(tiles, n_sms), 1, 1), (384, 1, 1), tuple(args), shared_mem=smem)
    return out
