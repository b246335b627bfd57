"""Honest measurement of one candidate: warm-up, several timed runs, the median.

* CPU: ``time.perf_counter`` around each call (Numba kernels are synchronous).
* GPU: CUDA events on the current CuPy stream (cupy imported lazily, only here and only on that
  path), warm-up first, inputs rotated between runs (:func:`rotation_sets`) so the L2 cache does
  not flatter a candidate that re-reads what the previous run left behind.

A candidate that fails to compile, raises (including out-of-resources launch errors), or gives a
result different from the reference (the default config's, compared with the tests' per-dtype
tolerances) gets ``seconds = inf``: it is never chosen and the user's call never fails because of
it. :func:`compile_all` compiles candidates concurrently in a thread pool where the backend can
(NVRTC releases the GIL); the CPU backend compiles one at a time (Numba holds a global compiler
lock, and parallel Numba kernels must not run from two threads at once).
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import math
import statistics
import time
from typing import Any, Callable, Sequence

import numpy as np

from ..testing import assert_matches_numpy, tolerance

INF = float("inf")

@dataclasses.dataclass
class Measurement:
    config: Any
    seconds: float = INF                  # the median, or inf when the candidate failed
    runs: list = dataclasses.field(default_factory=list)
    error: str | None = None
    compile_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and math.isfinite(self.seconds)


def same_result(actual: Sequence, expected: Sequence, *, reductions: bool = False) -> str | None:
    """None when every output matches the reference (dtype, shape, values within tolerance, NaN
    where the reference has NaN), else a short reason."""
    if len(actual) != len(expected):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for k, (a, e) in enumerate(zip(actual, expected)):
        if _on_gpu(a) and _on_gpu(e):
            if not _matches_on_device(a, e, reductions):
                return f"output {k} differs from the default config's result"
            continue
        try:
            assert_matches_numpy(_host(a), _host(e), reductions=reductions)
        except AssertionError:
            return f"output {k} differs from the default config's result"
    return None


def _on_gpu(a) -> bool:
    return type(a).__module__.startswith("cupy")


def _matches_on_device(a, e, reductions: bool) -> bool:
    """``assert_matches_numpy``'s rule evaluated on the GPU (no copy of big outputs to the host)."""
    import cupy
    if a.dtype != e.dtype or a.shape != e.shape:
        return False
    if e.dtype.kind != "f":
        return bool(cupy.array_equal(a, e))
    rtol, atol = tolerance(e.dtype)
    if reductions:
        rtol, atol = rtol * 10, atol * 10
    return bool(cupy.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True))


def _host(a) -> np.ndarray:
    if type(a).__module__.startswith("cupy"):
        return a.get()
    return np.asarray(a)


def time_cpu(fn: Callable[[int], Any], *, warmup: int = 1, reps: int = 5,
             deadline: float | None = None, clock=time.perf_counter) -> list[float]:
    """Run ``fn(i)`` ``warmup`` times, then time up to ``reps`` runs (stopping at ``deadline``,
    a ``clock()`` value, after at least one timed run)."""
    for i in range(warmup):
        fn(i)
        if deadline is not None and clock() >= deadline:
            break
    runs = []
    for i in range(reps):
        t0 = clock()
        fn(warmup + i)
        runs.append(clock() - t0)
        if deadline is not None and clock() >= deadline:
            break
    return runs


def time_cuda(fn: Callable[[int], Any], *, warmup: int = 2, reps: int = 10,
              deadline: float | None = None, clock=time.perf_counter) -> list[float]:
    """Like :func:`time_cpu` with CUDA events on the current stream (seconds per run)."""
    import cupy
    stream = cupy.cuda.get_current_stream()
    for i in range(warmup):
        fn(i)
    stream.synchronize()
    runs = []
    for i in range(reps):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        fn(warmup + i)
        end.record(stream)
        end.synchronize()
        runs.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
        if deadline is not None and clock() >= deadline:
            break
    return runs


def rotation_sets(nbytes: int, l2_bytes: int, *, max_sets: int = 4, max_total: int = 1 << 30) -> int:
    """How many copies of the inputs to rotate through so that consecutive runs do not find their
    inputs in L2: enough to cover twice the L2, at most ``max_sets`` and ``max_total`` bytes."""
    if nbytes <= 0:
        return 1
    want = math.ceil(2 * l2_bytes / nbytes) + 1
    return max(1, min(max_sets, want, max(1, max_total // nbytes)))


def measure(config, run: Callable[[int], Any], reference: Sequence | None, *, gpu: bool = False,
            warmup: int = 1, reps: int = 5, deadline: float | None = None,
            reductions: bool = False, clock=time.perf_counter) -> Measurement:
    """Check ``run(0)``'s outputs against ``reference`` then time ``run``; never raises."""
    m = Measurement(config)
    try:
        out = run(0)
        if reference is not None:
            why = same_result(out, reference, reductions=reductions)
            if why is not None:
                m.error = "wrong result: " + why
                return m
        timer = time_cuda if gpu else time_cpu
        m.runs = timer(run, warmup=warmup, reps=reps, deadline=deadline, clock=clock)
        m.seconds = statistics.median(m.runs) if m.runs else INF
    except Exception as e:          # compile errors, launch failures, out of resources, ...
        m.error = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        m.seconds = INF
    return m


def compile_all(configs: Sequence, compile_fn: Callable[[Any], Any], *, workers: int = 1,
                deadline: float | None = None, clock=time.perf_counter) -> dict:
    """``{config: compiled object or the Exception it raised}``; configs not started before
    ``deadline`` are left out. ``workers > 1`` compiles in a thread pool."""
    out: dict = {}
    if workers <= 1:
        for c in configs:
            if deadline is not None and clock() >= deadline:
                break
            try:
                out[c] = compile_fn(c)
            except Exception as e:
                out[c] = e
        return out

    def one(c):
        if deadline is not None and clock() >= deadline:
            return c, None
        try:
            return c, compile_fn(c)
        except Exception as e:
            return c, e
    with cf.ThreadPoolExecutor(max_workers=workers) as pool:
        for c, r in pool.map(one, configs):
            if r is not None:
                out[c] = r
    return out
