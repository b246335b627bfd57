"""The CPU this process runs on, as the CPU cost model sees it: the bandwidth a streaming loop
reaches in each memory level, measured once per machine and kept in the kernel cache directory.

``cpu_cost.CPU_LEVELS`` are one machine's figures (the AMD EPYC VM the model was fitted on: 45-55
GB/s from DRAM). Another machine streams at other rates: on a 2-core Intel Xeon VM (2026-11-28) a
loop ``y = 1.5 x + 0.5`` ran at 98/120 GB/s (one thread / both) in a 512 KiB working set, 27/48
in 8 MiB and 14/27 from DRAM, and 59 of 126 corpus kernels took more than twice their predicted
time (20 on this machine's levels). :func:`measure` times that loop at one working set a level (the L2 size from the OS, else
the fitted machine's) with Numba; :func:`save` writes the figures to
``<cache dir>/machine-<key>.json`` (``key``: the CPU model, core count and L2 size), and
:func:`machine` reads them back: the CPU device's levels wherever the file exists
(``fusion.cost.get_device_spec("cpu")``), the fitted machine's otherwise. The file also holds a
*compute scale*: how much slower (or faster) than its price this machine ran kfuse's own
transcendental kernels (``autotune/machine.py`` times them), by which :func:`scaled_costs`
multiplies the transcendental costs (``COMPUTE_FIELDS``; the same Intel VM ran float32 and float64
helper chains about 2x slower than priced), and NumPy's ``matmul`` rate (:func:`measure_blas`), the
float32 and float64 peaks a CPU matmul group's product is priced at, and how much of the L3 a call
finds whole (:func:`measure_l3_reliable`), and what a call costs more when a large kernel just
evicted the private caches (:func:`measure_cold_call`) and an element gathered from a large input
(:func:`measure_gather`). The other capacities, a call's fixed costs
and latencies stay the fitted machine's. Measured by ``kfuse tune --machine`` and by the CPU
corpus run (``kfuse bench --suite corpus --device cpu``), before it plans; ``KFUSE_CPU_MACHINE=0``
keeps the fitted figures (the test suite's setting).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import time

from .cpu_cost import CPU_LEVELS, CpuCosts, MemLevel

# the working set timed for each of CPU_LEVELS (bytes: x and y together)
PROBES = {"L2": 512 << 10, "L3": 8 << 20, "DRAM": 256 << 20}
SCHEMA = "kfuse-cpu-machine/1"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


def _l2_bytes() -> int | None:
    """The per-core L2 size the OS reports (Linux sysfs), or None."""
    root = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for d in sorted(os.listdir(root)):
            with open(os.path.join(root, d, "level")) as f:
                if f.read().strip() != "2":
                    continue
            with open(os.path.join(root, d, "size")) as f:
                s = f.read().strip().upper()
            return int(s[:-1]) << (10 if s.endswith("K") else 20) if s[-1] in "KM" else int(s)
    except (OSError, ValueError):
        return None
    return None


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def machine_key() -> str:
    """What names this machine's figures: a digest of the CPU model, core count and L2 size."""
    text = f"{_cpu_model()}|{_cores()}|{_l2_bytes()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _path(cache_dir: str) -> str:
    return os.path.join(cache_dir, f"machine-{machine_key()}.json")


def _stream_kernels():
    import numba
    import numpy as np

    def body(dst, src):
        for i in numba.prange(src.shape[0]):
            dst[i] = src[i] * np.float32(1.5) + np.float32(0.5)
    return numba.njit(body), numba.njit(parallel=True)(body)


def _best(call, budget_s: float) -> float:
    """The fastest of calls of ``call()`` made within ``budget_s`` (at least one), in seconds."""
    best, t_end = float("inf"), time.perf_counter() + budget_s
    while True:
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
        if time.perf_counter() > t_end:
            return best


def measure(budget_s: float = 0.25) -> dict:
    """``{level name: (one thread, every core) bytes/s}`` of the streaming loop at ``PROBES``'s
    working sets (the best of calls within ``budget_s`` each; Numba compiles the loop first)."""
    import numpy as np
    seq, par = _stream_kernels()
    out = {}
    for name, ws in PROBES.items():
        src = np.ones(ws // 8, np.float32)
        dst = np.empty_like(src)
        rates = []
        for f in (seq, par):
            f(dst, src)
            f(dst, src)
            rates.append(ws / _best(lambda: f(dst, src), budget_s))
        out[name] = (rates[0], rates[1])
    return out


BLAS_SIDE = 512       # the square product timed for the BLAS rate (a few ms a call on 2 cores)


def measure_blas(budget_s: float = 0.1) -> dict:
    """``{"f32": FLOP/s, "f64": FLOP/s}`` of NumPy's ``matmul`` (the BLAS a CPU matmul group's
    product runs on) for square operands of ``BLAS_SIDE``, the best call within ``budget_s``.
    The fitted machine's figures (50 and 25 GFLOP/s) priced the 2-core Intel VM's products (74
    and 49) 1.5-2x slow; another BLAS or core count differs more."""
    import numpy as np
    out = {}
    for key, dt in (("f32", np.float32), ("f64", np.float64)):
        a = np.full((BLAS_SIDE, BLAS_SIDE), 0.5, dt)
        np.matmul(a, a)
        out[key] = 2.0 * BLAS_SIDE ** 3 / _best(lambda: np.matmul(a, a), budget_s)
    return out


def peaks_from(blas: dict, base: dict) -> dict:
    """``base`` (a DeviceSpec's ``peak_flops``) with the measured BLAS rates (:func:`measure_blas`)
    as its float32 and float64 matmul peaks."""
    out = dict(base)
    for key in ("f32", "f64"):
        if blas.get(key, 0) > 0:
            out[f"{key}/simt"] = out[f"{key}/tensor"] = float(blas[key])
    return out


# working sets (bytes) at which the streaming loop on every core is timed to find how much of the
# L3 a call finds whole: the OS's size is not it on a VM (a 2-core Intel Xeon VM reports 480 MiB
# of L3 and streamed 57 GB/s at 64 MiB, 43 at 128 and 30, DRAM's rate, at 256)
CAPACITY_PROBES = tuple(m << 20 for m in (16, 32, 64, 128, 256))
HELD = 0.8                  # ... whole where the loop keeps this fraction of the L3 probe's rate


def measure_l3_reliable(rates: dict, budget_s: float = 0.1) -> float:
    """The largest of ``CAPACITY_PROBES`` at which the streaming loop on every core runs at
    ``HELD`` of ``rates``'s L3 rate or more (the L3 probe's size where none does)."""
    import numpy as np
    _, par = _stream_kernels()
    target, held = HELD * rates["L3"][1], float(PROBES["L3"])
    for ws in CAPACITY_PROBES:
        src = np.ones(ws // 8, np.float32)
        dst = np.empty_like(src)
        par(dst, src)
        if ws / _best(lambda: par(dst, src), budget_s) < target:
            break
        held = float(ws)
    return held


def measure_cold_call(rounds: int = 200, skip: int = 20) -> float:
    """Seconds a small Numba call (three array arguments, an element of each touched) takes more
    right after a loop streamed 16 MiB than warm: the median over ``rounds`` pairs of the cold call
    less the warm call just before it, the first ``skip`` pairs left out (the call path's code and
    data evicted from the private caches; ``CpuCosts.cold``: 1 us on the fitted EPYC, 5.3 us on a
    2-core Xeon VM, where a whole kfuse call took 25.6 us so against 2.4 warm). A cold call's time
    has two modes there (about 1.8 and 3.3 us: 240 pairs' quartiles), and the medians of 60 cold
    and 60 warm calls came out anywhere from 1.0 to 4.8 us from one process to the next; the median
    of 200 paired differences (about 0.2 s) came out at 1.5-2.1 us in eleven processes (Xeon VM,
    2026-11-28, the other core busy)."""
    import numba
    import numpy as np
    seq, _ = _stream_kernels()
    src = np.ones((16 << 20) // 8, np.float32)
    dst = np.empty_like(src)
    a, b, out = (np.ones(1024, np.float32) for _ in range(3))

    @numba.njit
    def add(a, b, out):
        out[0] = a[0] + b[0]
    add(a, b, out)
    seq(dst, src)
    extra = []
    for k in range(skip + rounds):
        t0 = time.perf_counter()
        add(a, b, out)
        warm = time.perf_counter() - t0
        seq(dst, src)
        t0 = time.perf_counter()
        add(a, b, out)
        if k >= skip:
            extra.append(time.perf_counter() - t0 - warm)
    return max(0.0, float(np.median(extra)))


GATHER_ROWS, GATHER_ROW = 8192, 4096     # the gather probe: an element picked from each row of 4 KiB


def measure_gather(budget_s: float = 0.1) -> float:
    """Seconds an element gathered from a large input costs (``CpuCosts.gather``): a loop picking
    one element at a random column of each of ``GATHER_ROWS`` rows of a 32 MiB array, as a
    ``take_along_axis`` of labels does (the best call within ``budget_s``, per element). The
    fitted machine's 30 ns priced a negative log-likelihood's pick on a Xeon VM at 2.4x its time."""
    import numba
    import numpy as np
    rng = np.random.default_rng(0)
    a = np.ones((GATHER_ROWS, GATHER_ROW // 4), np.float32)
    cols = rng.integers(0, a.shape[1], GATHER_ROWS)

    @numba.njit
    def pick(a, cols):
        s = np.float32(0.0)
        for i in range(cols.shape[0]):
            s += a[i, cols[i]]
        return s
    pick(a, cols)
    return _best(lambda: pick(a, cols), budget_s) / GATHER_ROWS


def levels_from(rates: dict, base=CPU_LEVELS, l3_reliable: float = 0.0) -> tuple:
    """``base``'s levels with the bandwidths of ``rates`` (:func:`measure`), the per-core L2's
    size the OS's where it reports one, and the L3's reliable part ``l3_reliable`` where measured
    (:func:`measure_l3_reliable`; the L3 at least that large)."""
    l2 = _l2_bytes()
    out = []
    for lv in base:
        one, every = rates.get(lv.name, (lv.bandwidth, lv.parallel))
        lv = dataclasses.replace(lv, bandwidth=float(one), parallel=float(max(one, every)))
        if lv.name == "L2" and l2:
            lv = dataclasses.replace(lv, bytes=float(l2))
        if lv.name == "L3" and l3_reliable > 0:
            lv = dataclasses.replace(lv, reliable=float(l3_reliable), bytes=max(lv.bytes, float(l3_reliable)))
        out.append(lv)
    return tuple(out)


# CpuCosts' transcendental costs (what the compute scale multiplies). Scaling every per-element
# cost by the probes' 2.0 put 32 of the 126 kernels of this session's CPU corpus run outside 2x of
# their time, the transcendentals alone 19 (the measured levels alone 20, the fitted machine's 59):
# simple ops, divisions and the loop itself ran at the fitted machine's prices here
COMPUTE_FIELDS = ("vector_special", "reduce_special", "libm", "wide_special", "tanh_special", "widened")


def scaled_costs(costs: CpuCosts, scale: float) -> CpuCosts:
    """``costs`` with its transcendental costs (``COMPUTE_FIELDS``) times ``scale``."""
    if scale == 1.0:
        return costs
    return dataclasses.replace(costs, **{f: getattr(costs, f) * scale for f in COMPUTE_FIELDS})


def save(cache_dir: str, rates: dict, compute_scale: float = 1.0, blas: dict | None = None,
         l3_reliable: float = 0.0, cold: float | None = None, gather: float | None = None) -> str:
    """Write ``rates`` (and the compute scale, BLAS rates, the L3's reliable bytes, a cold call's
    extra seconds and a gathered element's) as this machine's figures (atomically: a reader sees
    the old file or the new one); returns the path."""
    os.makedirs(cache_dir, exist_ok=True)
    path = _path(cache_dir)
    doc = {"schema": SCHEMA, "cpu": _cpu_model(), "cores": _cores(), "l2_bytes": _l2_bytes(),
           "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "rates": {k: [float(a), float(b)] for k, (a, b) in rates.items()},
           "compute_scale": float(compute_scale),
           "blas": {k: float(v) for k, v in (blas or {}).items()}, "l3_reliable": float(l3_reliable),
           "cold": None if cold is None else float(cold), "gather": None if gather is None else float(gather)}
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)
    machine.cache_clear()
    return path


@functools.lru_cache(maxsize=None)
def machine(cache_dir: str) -> tuple | None:
    """``(levels, compute scale, BLAS rates as sorted (key, FLOP/s) pairs, measured CpuCosts
    fields as (name, seconds or None) pairs)`` of this machine from ``cache_dir``'s file
    (:func:`levels_from`), or None where there is none or it cannot be read (then the fitted
    machine's apply; a figure the file lacks keeps the fitted machine's)."""
    try:
        with open(_path(cache_dir)) as f:
            doc = json.load(f)
        if doc.get("schema") != SCHEMA:
            return None
        rates = {k: (float(a), float(b)) for k, (a, b) in doc["rates"].items()}
        scale = float(doc.get("compute_scale", 1.0))
        blas = tuple(sorted((str(k), float(v)) for k, v in doc.get("blas", {}).items() if float(v) > 0))
        l3 = max(0.0, float(doc.get("l3_reliable", 0.0)))
        cold, gather = (None if doc.get(k) is None else min(max(0.0, float(doc[k])), 1e-3) for k in ("cold", "gather"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not all(a > 0 and b > 0 for a, b in rates.values()) or not 0.0 < scale < 100.0:
        return None
    return levels_from(rates, l3_reliable=l3), scale, blas, (("cold", cold), ("gather", gather))


def describe(levels) -> str:
    """One line: each level's bandwidth, one thread / every core."""
    return ", ".join(f"{lv.name} {lv.bandwidth / 1e9:.0f}/{lv.parallel / 1e9:.0f} GB/s" for lv in levels)


__all__ = ["CAPACITY_PROBES", "COMPUTE_FIELDS", "MemLevel", "PROBES", "describe", "levels_from", "machine",
           "machine_key", "measure", "measure_blas", "measure_cold_call", "measure_gather", "measure_l3_reliable",
           "peaks_from", "save", "scaled_costs"]
