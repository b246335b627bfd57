"""Shared timing for the feature benchmarks (``assemble_bench.py``, ``gather_bench.py``): CUDA
event timing of back-to-back calls, peers timed in interleaved rounds (each round starts with the
next peer, so drift on a shared GPU falls on all of them), a CuPy device-to-device copy of a given
byte count as the bandwidth yardstick, and the GPU's name for the report."""
import subprocess

import cupy as cp
import numpy as np


def time_ms(fn, reps=10) -> float:
    """Milliseconds a call: ``reps`` back-to-back calls between two CUDA events."""
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) / reps


def interleaved(peers: dict, rounds=15) -> dict:
    """Median milliseconds a call per peer over ``rounds`` interleaved rounds (after two warm-up
    calls each)."""
    for f in peers.values():
        f(), f()
    cp.cuda.Device().synchronize()
    times = {k: [] for k in peers}
    for r in range(rounds):
        order = list(peers)[r % len(peers):] + list(peers)[:r % len(peers)]
        for k in order:
            times[k].append(time_ms(peers[k]))
    return {k: float(np.median(v)) for k, v in times.items()}


def copy_ms(nbytes: int, rounds=15) -> float:
    """Median milliseconds of a CuPy copy moving ``nbytes`` (``nbytes / 2`` read, as many written)."""
    src, dst = cp.empty(nbytes // 8, cp.float32), cp.empty(nbytes // 8, cp.float32)
    cp.copyto(dst, src)
    return float(np.median([time_ms(lambda: cp.copyto(dst, src)) for _ in range(rounds)]))


def gpu_name() -> str:
    return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                          capture_output=True, text=True).stdout.strip()


def table(title: str, note: str, rows) -> str:
    """The report: ``rows`` of (case, impl, ms, % of copy, max rel. err)."""
    lines = [f"# {title} ({gpu_name()})", "", note, "",
             "| case | impl | ms | % of copy | max rel. err |", "|---|---|---|---|---|"]
    lines += [f"| {c} | {k} | {ms:.4f} | {pc:.0f}% | {e:.1e} |" for c, k, ms, pc, e in rows]
    return "\n".join(lines) + "\n"
