"""Ceilings measured in the same run as the workloads: what the device can do at best.

GPU: device-to-device copy bandwidth (bytes read + written; ``cudaMemcpyAsync`` and CuPy's copy
kernel, the higher counts), cuBLAS GEMM for each P5 shape and dtype, and cuBLAS f16/f32 GEMM at
a large square size for the roofline's compute roofs. CPU: a large ``np.copyto`` (and a parallel
Numba copy when Numba imports: NumPy copies on one thread), and BLAS f32 GEMM.
Each entry is ``{"value": ..., "unit": ..., "how": ...}``; a ceiling that fails to measure is
left out with its error under ``errors``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import timing


def _entry(value: float, unit: str, how: str, t: timing.Timing | None = None) -> dict:
    d = {"value": value, "unit": unit, "how": how}
    if t is not None:
        d["ms"] = t.median_ms
    return d


# ---- CPU ---------------------------------------------------------------------------------------
def _numba_parallel_copy():
    import numba

    @numba.njit(parallel=True, cache=False)
    def pcopy(dst, src):
        for i in numba.prange(src.shape[0]):
            dst[i] = src[i]
    return pcopy


def cpu_levels() -> dict:
    """The bandwidth (bytes read + written per second) of a streaming loop ``y = 1.5 x + 0.5`` in
    each memory level of the CPU cost model, on one thread and on Numba's pool
    (``fusion/cpu_machine.py``: the corpus run stores them as this machine's figures)."""
    from ..fusion import cpu_machine
    return levels_entries(cpu_machine.measure())


def levels_entries(rates: dict) -> dict:
    """:func:`cpu_levels`' entries for ``cpu_machine.measure``'s rates."""
    from ..fusion.cpu_machine import PROBES
    out = {}
    for level, (one, every) in rates.items():
        ws = PROBES[level]
        for name, bw in (("one thread", one), ("parallel", every)):
            out[f"{ws >> 10} KiB {name}"] = _entry(bw, "B/s", f"numba y = 1.5x + 0.5 over {ws >> 10} KiB ({name}, {level})")
    return out


def cpu_ceilings(quick: bool = False, gemm_shapes: list[tuple[int, int, int]] = (), rates: dict | None = None) -> dict:
    """``rates``: the memory levels' bandwidths already measured (``cpu_machine.measure``)."""
    out: dict[str, Any] = {"errors": {}}
    n = (1 << 22) if quick else (1 << 26)          # 16 MiB / 256 MiB of float32
    src = np.ones(n, np.float32)
    dst = np.empty_like(src)
    t = timing.time_cpu(lambda i: np.copyto(dst, src), warmup=2, budget_s=0.5, max_reps=20)
    bw = 2 * src.nbytes / (t.median_ms * 1e-3)
    out["copy_numpy"] = _entry(bw, "B/s", f"np.copyto of {src.nbytes >> 20} MiB (read + write)", t)
    best = out["copy_numpy"]
    try:
        pcopy = _numba_parallel_copy()
        t = timing.time_cpu(lambda i: pcopy(dst, src), warmup=2, budget_s=0.5, max_reps=20)
        bwp = 2 * src.nbytes / (t.median_ms * 1e-3)
        out["copy_parallel"] = _entry(bwp, "B/s", f"numba prange copy of {src.nbytes >> 20} MiB", t)
        if bwp > bw:
            best = out["copy_parallel"]
    except Exception as e:
        out["errors"]["copy_parallel"] = f"{type(e).__name__}: {e}".splitlines()[0]
    out["bandwidth"] = dict(best)
    try:
        out["levels"] = levels_entries(rates) if rates else cpu_levels()
    except Exception as e:
        out["errors"]["levels"] = f"{type(e).__name__}: {e}".splitlines()[0]
    sq = 256 if quick else 1024
    a = np.ones((sq, sq), np.float32)
    t = timing.time_cpu(lambda i: a @ a, warmup=2, budget_s=0.5, max_reps=20)
    out["peak_f32"] = _entry(2.0 * sq ** 3 / (t.median_ms * 1e-3), "FLOP/s", f"BLAS f32 GEMM {sq}^3", t)
    out["gemm"] = {}
    for (M, N, K) in gemm_shapes:
        a = np.ones((M, K), np.float32)
        b = np.ones((K, N), np.float32)
        t = timing.time_cpu(lambda i: a @ b, warmup=2, budget_s=0.5, max_reps=20)
        out["gemm"][f"{M}x{N}x{K}:float32"] = _entry(2.0 * M * N * K / (t.median_ms * 1e-3), "FLOP/s",
                                                     f"BLAS f32 GEMM {M}x{N}x{K}", t)
    return out


# ---- GPU ---------------------------------------------------------------------------------------
def gpu_ceilings(quick: bool = False, gemm_shapes: list[tuple[int, int, int, str]] = ()) -> dict:
    """Needs CuPy (cuBLAS through cupy.matmul); falls back to PyTorch when CuPy is missing."""
    try:
        import cupy  # noqa: F401
        return _gpu_ceilings_cupy(quick, gemm_shapes)
    except ImportError:
        pass
    return _gpu_ceilings_torch(quick, gemm_shapes)


def _gpu_ceilings_cupy(quick, gemm_shapes) -> dict:
    import cupy as cp
    ev = timing.EventAPI.cupy()
    out: dict[str, Any] = {"errors": {}, "gemm": {}}
    nbytes = (64 << 20) if quick else (2 << 30)
    src = cp.ones(nbytes // 4, cp.float32)
    dst = cp.empty_like(src)
    t = timing.time_events(lambda i: dst.data.copy_from_device_async(src.data, src.nbytes), ev,
                           warmup=3, budget_s=0.3, max_reps=30)
    memcpy = _entry(2 * src.nbytes / (t.median_ms * 1e-3), "B/s",
                    f"cudaMemcpyAsync D2D of {src.nbytes >> 20} MiB (read + write)", t)
    out["copy_memcpy"] = memcpy
    t = timing.time_events(lambda i: cp.copyto(dst, src), ev, warmup=3, budget_s=0.3, max_reps=30)
    kern = _entry(2 * src.nbytes / (t.median_ms * 1e-3), "B/s",
                  f"cupy.copyto kernel of {src.nbytes >> 20} MiB (read + write)", t)
    out["copy_kernel"] = kern
    out["bandwidth"] = dict(max(memcpy, kern, key=lambda d: d["value"]))
    del src, dst
    sq = 1024 if quick else 8192
    for dt, key in ((cp.float16, "peak_f16"), (cp.float32, "peak_f32")):
        s = sq if dt == cp.float16 else sq // 2
        try:
            a = cp.random.standard_normal((s, s), dtype=cp.float32).astype(dt)
            b = cp.random.standard_normal((s, s), dtype=cp.float32).astype(dt)
            t = timing.time_events(lambda i: cp.matmul(a, b), ev, warmup=3, budget_s=0.5, max_reps=20)
            out[key] = _entry(2.0 * s ** 3 / (t.median_ms * 1e-3), "FLOP/s",
                              f"cuBLAS {np.dtype(dt).name} GEMM {s}^3 (cupy.matmul)", t)
            del a, b
        except Exception as e:
            out["errors"][key] = f"{type(e).__name__}: {e}".splitlines()[0]
    for (M, N, K, dtype) in gemm_shapes:
        try:
            a = cp.random.standard_normal((M, K), dtype=cp.float32).astype(dtype)
            b = cp.random.standard_normal((K, N), dtype=cp.float32).astype(dtype)
            t = timing.time_events(lambda i: cp.matmul(a, b), ev, warmup=3, budget_s=0.5, max_reps=30)
            out["gemm"][f"{M}x{N}x{K}:{dtype}"] = _entry(2.0 * M * N * K / (t.median_ms * 1e-3), "FLOP/s",
                                                         f"cuBLAS {dtype} GEMM {M}x{N}x{K}", t)
            del a, b
        except Exception as e:
            out["errors"][f"gemm {M}x{N}x{K}"] = f"{type(e).__name__}: {e}".splitlines()[0]
    cp.get_default_memory_pool().free_all_blocks()
    return out


def _gpu_ceilings_torch(quick, gemm_shapes) -> dict:
    import torch
    ev = timing.EventAPI.torch()
    out: dict[str, Any] = {"errors": {}, "gemm": {}}
    nbytes = (64 << 20) if quick else (2 << 30)
    src = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    t = timing.time_events(lambda i: dst.copy_(src), ev, warmup=3, budget_s=0.3, max_reps=30)
    out["copy_kernel"] = _entry(2 * nbytes / (t.median_ms * 1e-3), "B/s",
                                f"torch copy_ of {nbytes >> 20} MiB (read + write)", t)
    out["bandwidth"] = dict(out["copy_kernel"])
    del src, dst
    sq = 1024 if quick else 8192
    for dt, key in ((torch.float16, "peak_f16"), (torch.float32, "peak_f32")):
        s = sq if dt == torch.float16 else sq // 2
        a = torch.randn(s, s, device="cuda", dtype=dt)
        b = torch.randn(s, s, device="cuda", dtype=dt)
        t = timing.time_events(lambda i: a @ b, ev, warmup=3, budget_s=0.5, max_reps=20)
        out[key] = _entry(2.0 * s ** 3 / (t.median_ms * 1e-3), "FLOP/s", f"torch {dt} GEMM {s}^3", t)
    for (M, N, K, dtype) in gemm_shapes:
        dt = getattr(torch, dtype)
        a = torch.randn(M, K, device="cuda", dtype=dt)
        b = torch.randn(K, N, device="cuda", dtype=dt)
        t = timing.time_events(lambda i: a @ b, ev, warmup=3, budget_s=0.5, max_reps=30)
        out["gemm"][f"{M}x{N}x{K}:{dtype}"] = _entry(2.0 * M * N * K / (t.median_ms * 1e-3), "FLOP/s",
                                                     f"cuBLAS (torch) {dtype} GEMM {M}x{N}x{K}", t)
    torch.cuda.empty_cache()
    return out


def ceiling_for(ceil: dict, case) -> tuple[float | None, str]:
    """The ceiling a case's row is compared with: copy bandwidth (B/s) for memory-bound cases,
    GEMM FLOP/s of the same shape and dtype for P5; with its unit."""
    if case.bound == "compute":
        d = case.dims
        g = ceil.get("gemm", {}).get(f"{d['M']}x{d['N']}x{d['K']}:{case.dtype}")
        if g:
            return g["value"], "FLOP/s"
        peak = ceil.get("peak_f16" if case.dtype == "float16" else "peak_f32")
        return (peak["value"], "FLOP/s") if peak else (None, "FLOP/s")
    bw = ceil.get("bandwidth")
    return (bw["value"], "B/s") if bw else (None, "B/s")
