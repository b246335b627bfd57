"""GPU detection and device properties (arch, SM count, memory bandwidth estimate).

A GPU is usable when CuPy imports and sees at least one device. ``device_properties()`` returns a
plain dict the fusion layer can turn into its ``DeviceSpec``; nothing here needs a GPU to import.
"""
from __future__ import annotations

import functools

from ..errors import DeviceError


def _cupy():
    try:
        import cupy
        return cupy
    except Exception:
        return None


def has_gpu() -> bool:
    """True when CuPy is importable and at least one CUDA device is visible."""
    cp = _cupy()
    if cp is None:
        return False
    try:
        return cp.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def require_gpu():
    """The ``cupy`` module, or :class:`DeviceError` saying why the GPU path cannot run."""
    cp = _cupy()
    if cp is None:
        raise DeviceError("kfuse: the CUDA backend needs CuPy (pip install cupy-cuda13x) and a GPU")
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as e:
        raise DeviceError(f"kfuse: no usable CUDA device ({type(e).__name__}: {e})") from e
    if n <= 0:
        raise DeviceError("kfuse: no CUDA device visible")
    return cp


def device_properties(device_id: int | None = None) -> dict:
    """Properties of a CUDA device (default: the current one): name, arch (``"sm_90"``), SMs, L2,
    shared memory, memory size, and a peak-bandwidth estimate from the memory clock and bus width
    (GB/s). Read once a device (``getDeviceProperties`` took 1 ms of a warm first call, H200)."""
    if device_id is None:
        device_id = int(require_gpu().cuda.runtime.getDevice())
    return _properties(int(device_id))


@functools.lru_cache(maxsize=None)
def _properties(device_id: int) -> dict:
    cp = require_gpu()
    p = cp.cuda.runtime.getDeviceProperties(device_id)
    g = lambda k, d=0: p.get(k, d) if isinstance(p, dict) else getattr(p, k, d)  # noqa: E731
    name = g("name", b"")
    name = name.decode() if isinstance(name, bytes) else str(name)
    major, minor = int(g("major")), int(g("minor"))
    mem_clock_khz = int(g("memoryClockRate", 0))
    bus_bits = int(g("memoryBusWidth", 0))
    bw = 2.0 * mem_clock_khz * 1e3 * bus_bits / 8 / 1e9 if mem_clock_khz and bus_bits else None
    return {
        "name": name,
        "device_id": device_id,
        "arch": f"sm_{major}{minor}",
        "compute_capability": (major, minor),
        "sm_count": int(g("multiProcessorCount")),
        "l2_bytes": int(g("l2CacheSize", 0)),
        "shared_mem_per_block": int(g("sharedMemPerBlock", 0)),
        "shared_mem_per_block_optin": int(g("sharedMemPerBlockOptin", 0)),
        "max_threads_per_block": int(g("maxThreadsPerBlock", 1024)),
        "max_threads_per_sm": int(g("maxThreadsPerMultiProcessor", 2048)),
        "total_memory": int(g("totalGlobalMem", 0)),
        "peak_bandwidth_gbs": bw,          # datasheet-style estimate; measured copy is lower
        "warp_size": int(g("warpSize", 32)),
    }


def arch(device_id: int | None = None) -> str:
    return device_properties(device_id)["arch"]
