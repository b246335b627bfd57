"""Library kernels at a graph break: the call of a library function (``np.sort``, ``np.argsort``,
``np.fft.*``...) on concrete arrays. On the GPU NumPy's ``__array_function__`` dispatch sends a
NumPy function to CuPy's (cuFFT...), and a sort or argsort along an axis runs kfuse's row-sort
kernel (``runtime.row_sort``, a block a row; CuPy's sort past its sizes); on the CPU NumPy's sort
runs on one thread, so a large sort or argsort along one axis is split into row blocks sorted on a
thread pool (NumPy releases the GIL while it sorts), ``KFUSE_CPU_THREADS`` or the CPU count wide.
"""
from __future__ import annotations

import concurrent.futures
import os

import numpy as np

from .. import config

_PARALLEL_MIN = 1 << 18         # elements: below this a thread's start costs more than it saves
_POOL: concurrent.futures.ThreadPoolExecutor | None = None


def _threads() -> int:
    return max(1, config.get().cpu_threads or os.cpu_count() or 1)


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = concurrent.futures.ThreadPoolExecutor(_threads(), thread_name_prefix="kfuse-sort")
    return _POOL


def call(func, args: tuple, kwargs: dict):
    """``func(*args, **kwargs)``: a large NumPy sort/argsort along one axis on several threads, a
    CuPy one by the row-sort kernel (``runtime.row_sort``)."""
    if func in (np.sort, np.argsort) and len(args) == 1 and set(kwargs) <= {"axis", "kind", "stable"}:
        x, axis = args[0], kwargs.get("axis", -1)
        if (type(x) is np.ndarray and axis is not None and x.ndim >= 2 and x.size >= _PARALLEL_MIN
                and _threads() > 1 and x.dtype.kind in "biuf"):
            return _sort_blocks(func, x, axis % x.ndim, kwargs)
        if type(x).__module__.startswith("cupy") and axis is not None and set(kwargs) <= {"axis"}:
            from . import row_sort
            return row_sort.sort(x, axis, indices=func is np.argsort)
    return func(*args, **kwargs)


def _sort_blocks(func, x: np.ndarray, axis: int, kwargs: dict) -> np.ndarray:
    """``func(x, **kwargs)`` computed in blocks along the first axis other than ``axis``."""
    split = 1 if axis == 0 else 0
    n = x.shape[split]
    parts = min(_threads(), n)
    bounds = [n * i // parts for i in range(parts + 1)]
    out = np.empty(x.shape, np.intp if func is np.argsort else x.dtype)

    def run(i: int) -> None:
        block = (slice(None),) * split + (slice(bounds[i], bounds[i + 1]),)
        out[block] = func(x[block], **kwargs)
    list(_pool().map(run, range(parts)))
    return out
