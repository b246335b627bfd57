"""Run an attention group's one kernel (``codegen.attention_wgmma`` on sm_90 for head dims of
whole 64-column blocks, else ``codegen.attention_cuda``) on CuPy arrays.

:func:`group_runner` gives, for a plan's attention group, a callable ``(ins, out) -> out``: the
group's inputs (CuPy arrays, bfloat16 ones as their uint16 bits) in ``group.inputs`` order and an
output buffer of the group's output shape. Leading (batch) dims are flattened to one: q, k and v
reach the kernel as views over three batch dims (more are merged), broadcast to q's batch dims with
stride 0 where k or v is shared (grouped-query attention: no copy), the head dim contiguous and
rows 16-byte aligned; an operand without that layout (a transposed ``k`` stored (..., d, n), a
strided slice) is copied once into it. The CUDA C is compiled by NVRTC for the device's arch on
the first call and memoised by its text (as ``runtime.gemm`` does for GEMMs).
"""
from __future__ import annotations

import math

import numpy as np

from ..codegen import attention_wgmma, nvrtc
from ..codegen.attention_cuda import default_attention_tile, emit_attention
from ..errors import DeviceError, UnsupportedError

_FUNCTIONS: dict = {}        # (source, arch) -> (module, function)
MAX_GRID_Y = 65535           # CUDA's limit on gridDim.y: a block row per batch item


def _function(source: str, arch: str):
    import cupy as cp
    fn = _FUNCTIONS.get((source, arch))
    if fn is None:
        compiled = nvrtc.compile(source, arch, name="kfuse_attention")
        mod = cp.cuda.function.Module()
        mod.load(compiled.cubin)
        fn = _FUNCTIONS[(source, arch)] = (mod, mod.get_function("kfuse_attention"))
    return fn[1]


def operand_views(ins, a, xp) -> list:
    """q, k and v of an attention call as the kernel reads them: each a (b0, b1, b2, rows, d)
    view (:func:`_operand`) of the array the plan says (``a.perms``: its transpose; k from k^T),
    broadcast to q's batch dims. ``xp``: the array module (CuPy; NumPy in the tests)."""
    q, kt, v = (xp.transpose(ins[i], p) for i, p in zip((a.q, a.k, a.v), a.perms))
    batch = tuple(q.shape[:-2])
    return [_operand(x, batch, xp) for x in (q, xp.swapaxes(kt, -1, -2), v)]


def _operand(x, batch: tuple, xp):
    """``x`` (..., rows, d) as a (b0, b1, b2, rows, d) view broadcast to the batch dims ``batch``
    (leading ones merged past three, a copy where they do not merge), copied once where its rows
    cannot load with 16-byte copies; a broadcast dim keeps its stride 0 (no copy)."""
    v = xp.broadcast_to(x, batch + x.shape[-2:])
    if len(batch) > 3:
        v = v.reshape((-1,) + v.shape[-4:])
    v = v.reshape((1,) * (5 - v.ndim) + v.shape)
    item, s = v.itemsize, v.strides
    ptr = v.data.ptr if hasattr(v.data, "ptr") else v.ctypes.data
    ok = (s[4] == item and s[3] % 16 == 0 and ptr % 16 == 0
          and all(st % 16 == 0 or n == 1 for st, n in zip(s[:3], v.shape[:3])))
    return v if ok else xp.ascontiguousarray(v)


def _score_strides(arr, axes) -> list:
    """The (b, m, n) element strides of a score array (0 along a coord it is broadcast on)."""
    item = arr.itemsize
    return [np.int64(0 if ax is None or arr.shape[ax] == 1 else arr.strides[ax] // item) for ax in axes]


def kernel_for(spec, cc: int) -> tuple:
    """(source, tile, arch) of the kernel running ``spec`` on a device of compute capability
    ``cc``: both products on ``wgmma`` on sm_90 for head dims of whole 64-column blocks, else
    ``mma.sync``."""
    if cc == 90 and attention_wgmma.supports(spec):
        tile = attention_wgmma.default_tile(spec.head_dim)
        return attention_wgmma.emit_attention_wgmma(spec, tile), tile, attention_wgmma.ARCH
    tile = default_attention_tile(spec.head_dim)
    return emit_attention(spec, tile), tile, f"sm_{cc}"


def group_runner(group, kir):
    """The callable running attention group ``group`` (``kir.attention``: its AttentionIR)."""
    import cupy as cp
    a = kir.attention
    source, tile, arch = kernel_for(a.spec, int(cp.cuda.Device().compute_capability))
    smem = tile.smem_bytes(a.spec.head_dim)

    fn = None
    launches: dict = {}         # the arrays' layouts -> (scalar arguments, grid), when no operand is copied

    def layout(x) -> tuple:
        return x.shape, x.strides, x.data.ptr % 16

    def plan_launch(ins, out):
        """The views, the scalar arguments and the grid of one call, and whether the views are
        the arrays themselves (every operand read in place: the launch is then kept by layout)."""
        views = operand_views(ins, a, cp) + [_operand(out, tuple(out.shape[:-2]), cp)]
        if views[3].data.ptr != out.data.ptr:       # (a fresh C-order output is always a view)
            raise DeviceError("kfuse: attention: the output buffer is not one the kernel can write")
        M, N = views[0].shape[-2], views[1].shape[-2]
        nb = views[0].shape[:3]
        if math.prod(nb) > MAX_GRID_Y:
            raise UnsupportedError(f"kfuse: attention over {math.prod(nb)} batch items (batch x heads): "
                                   f"the kernel launches at most {MAX_GRID_Y}; split the batch")
        scalars = [np.int32(M), np.int32(N), np.int32(nb[1]), np.int32(nb[2])]
        for x in views:
            scalars += [np.int64(st // x.itemsize) for st in x.strides[:4]]
        scalars.append(np.int32(a.causal_offset))
        score = [list(_score_strides(ins[slot], axes)) for slot, *axes in a.score_inputs]
        grid = (math.ceil(M / tile.block_m), math.prod(nb)) if M and math.prod(nb) else None
        in_place = all(v.data.ptr == ins[i].data.ptr for v, i in zip(views, (a.q, a.k, a.v)))
        return views, scalars, score, grid, in_place

    def run(ins, out):
        nonlocal fn
        if fn is None:
            fn = _function(source, arch)
            if smem > 48 * 1024:
                attr = getattr(cp.cuda.driver, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8)
                cp.cuda.driver.funcSetAttribute(fn.ptr, attr, smem)
        # (views and numbers are made once per layout: each CuPy view costs microseconds a call)
        key = tuple(layout(x) for x in (ins[a.q], ins[a.k], ins[a.v], out)) + tuple(
            (ins[slot].shape, ins[slot].strides) for slot, *_ in a.score_inputs)
        got = launches.get(key)
        if got is None:
            views, scalars, score, grid, in_place = plan_launch(ins, out)
            if in_place:
                launches[key] = (scalars, score, grid)
            operands = views[:3]
        else:
            (scalars, score, grid), operands = got, [ins[a.q], ins[a.k], ins[a.v]]
        args = [*operands, out, *scalars]
        for (slot, *_), strides in zip(a.score_inputs, score):
            args += [ins[slot], *strides]
        if grid is not None:
            fn(grid, (tile.warps * 32,), tuple(args), shared_mem=smem)
        return out
    return run

