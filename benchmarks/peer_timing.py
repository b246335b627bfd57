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


def four_peers(name: str, fn, host: list, torch_fn, cupy_fn, want: np.ndarray, copy_bytes: int,
               fresh: bool = False) -> list:
    """The report rows of one case: kfuse[cuda] (``fn`` jitted), torch.compile and torch eager of
    ``torch_fn``, CuPy eager ``cupy_fn``, each on the ``host`` arrays moved to the GPU, timed in
    interleaved rounds, and its error against ``want`` (max |y - want| / max |want|). ``fresh``:
    the error of a call on fresh copies (a function that writes into its arguments); a peer that
    fails is left out (printed). The % column is of a CuPy copy moving ``copy_bytes``."""
    import torch

    import kfuse
    args = [cp.asarray(a) for a in host]
    targs = [torch.as_tensor(a, device="cuda") for a in host]
    kf, tc = kfuse.jit(fn), torch.compile(torch_fn)
    calls = {"kfuse[cuda]": (lambda *a: kf(*a), cp.asarray, cp.asnumpy),
             "torch.compile": (tc, _torch_array, _torch_host), "torch eager": (torch_fn, _torch_array, _torch_host),
             "cupy eager": (cupy_fn, cp.asarray, cp.asnumpy)}
    scale = float(np.max(np.abs(want))) or 1.0
    peers, errs = {}, {}
    for k, (f, dev, host_of) in calls.items():
        on = [dev(a.copy()) for a in host] if fresh else (targs if dev is _torch_array else args)
        try:
            errs[k] = float(np.max(np.abs(host_of(f(*on)).astype(np.float64) - want))) / scale
        except Exception as e:      # CuPy: no maximum.accumulate, ...
            print(f"{name}: {k} skipped ({type(e).__name__}: {e})")
            continue
        on = targs if dev is _torch_array else args
        peers[k] = lambda f=f, on=on: f(*on)
    times = interleaved(peers)
    copy = copy_ms(copy_bytes)
    return [(name, k, ms, copy / ms * 100, errs[k]) for k, ms in times.items()]


def _torch_array(a):
    import torch
    return torch.as_tensor(a, device="cuda")


def _torch_host(t):
    return t.cpu().numpy()
