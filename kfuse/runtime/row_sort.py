"""``np.sort`` / ``np.argsort`` along an axis of a CuPy array: rows that fit in a block's shared
memory run :mod:`kfuse.codegen.cuda_sort`'s row kernel (a block a row); longer rows, and dtypes it
does not cover, go to CuPy's own sort. The kernel is compiled once per dtype through the same
NVRTC path and disk cache as every CUDA C kernel (:func:`kfuse.runtime.cuda.compile_source`)."""
from __future__ import annotations

from ..codegen import cuda_sort
from . import device as devmod

MAX_THREADS = 1024
_OPTED_IN: dict = {}       # (device, kernel) -> the dynamic shared memory it was allowed


def _padded(n: int) -> int:
    return 1 << max(n - 1, 1).bit_length()


def fits(n: int, dtype, indices: bool, device_id: int | None = None) -> bool:
    """Whether rows of ``n`` elements of ``dtype`` run as the row kernel on this device."""
    name = str(dtype)
    if name not in cuda_sort.SORTABLE or n < 1:
        return False
    optin = devmod.device_properties(device_id).get("shared_mem_per_block_optin", 0) or 48 * 1024
    return cuda_sort.RowSort(name, indices).smem_bytes(_padded(n)) <= optin


def _function(spec: cuda_sort.RowSort, smem: int, cache=None):
    import cupy as cp
    from .cuda import load_function
    dev = cp.cuda.Device().id
    fn = load_function(cuda_sort.source(spec), spec.name, dev, devmod.arch(dev), cache)
    if smem > _OPTED_IN.get((dev, spec), 48 * 1024):   # more than 48 KiB of dynamic shared memory
        attr = getattr(cp.cuda.driver, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8)
        cp.cuda.driver.funcSetAttribute(fn.ptr, attr, smem)
        _OPTED_IN[(dev, spec)] = smem
    return fn


def sort(a, axis: int = -1, indices: bool = False, cache=None):
    """``np.sort(a, axis)`` (``indices``: ``np.argsort(a, axis, kind="stable")``) of a CuPy array."""
    import cupy as cp
    import numpy as np
    axis = axis % a.ndim if a.ndim else 0
    if a.ndim == 0:
        return cp.zeros((), np.int64) if indices else a.copy()
    n = a.shape[axis]
    if not fits(n, a.dtype, indices, a.data.device_id) or a.size == 0:
        return cp.argsort(a, axis=axis) if indices else cp.sort(a, axis=axis)
    rows_first = cp.ascontiguousarray(cp.moveaxis(a, axis, -1))
    flat = rows_first.reshape(-1, n)
    out = cp.empty(flat.shape, np.int64 if indices else a.dtype)
    spec = cuda_sort.RowSort(str(a.dtype), indices)
    padded = _padded(n)
    smem = spec.smem_bytes(padded)
    block = min(MAX_THREADS, max(32, padded // 2))
    fn = _function(spec, smem, cache)
    fn((flat.shape[0],), (block,), (flat, out, np.int32(flat.shape[0]), np.int32(n), np.int32(padded)),
       shared_mem=smem)
    return cp.moveaxis(out.reshape(rows_first.shape), -1, axis)
