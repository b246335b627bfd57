"""A function with a graph break (issue 35): normalise rows -> ``np.sort`` along rows -> softmax,
on a 4096x4096 float32 array, kfuse (two fused row-wise kernels around the library sort, NumPy's
on the CPU, CuPy's/CUB's on the GPU) against NumPy eager on the CPU or CuPy eager on the GPU.

Each time is the median of ``--rounds`` rounds of ``--calls`` back-to-back calls, the peers
interleaved round by round (a GPU round ends with a device synchronise); the row printed is the
minimum over ``--repeats`` such medians. The result is checked against NumPy first.
Usage: PYTHONPATH=. python3 benchmarks/break_bench.py [--device cpu|gpu] [--n 4096]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import kfuse
from kfuse.demo import sorted_softmax as norm_sort_softmax


def _timer(fn, x, calls: int, sync):
    def once() -> float:
        t = time.perf_counter()
        for _ in range(calls):
            fn(x)
        sync()
        return (time.perf_counter() - t) / calls
    return once


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    x = np.random.default_rng(0).standard_normal((args.n, args.n)).astype(np.float32)
    want = norm_sort_softmax(x)
    jitted = kfuse.jit(norm_sort_softmax)
    if args.device == "gpu":
        import cupy as cp
        xd, sync, peer = cp.asarray(x), cp.cuda.Device().synchronize, "cupy eager"
        got = cp.asnumpy(jitted(xd))
    else:
        xd, sync, peer = x, (lambda: None), "numpy eager"
        got = jitted(xd)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    timers = {"kfuse": _timer(jitted, xd, args.calls, sync), peer: _timer(norm_sort_softmax, xd, args.calls, sync)}
    best = {k: float("inf") for k in timers}
    for _ in range(args.repeats):
        samples = {k: [] for k in timers}
        for _ in range(args.rounds):
            for k, t in timers.items():
                samples[k].append(t())
        for k, s in samples.items():
            best[k] = min(best[k], statistics.median(s))
    print(f"normalise -> np.sort -> softmax, f32[{args.n},{args.n}] on {args.device} "
          f"(compiles: {jitted.compile_count})")
    for k, v in best.items():
        print(f"  {k:12s} {v * 1e3:9.2f} ms")
    print(f"  speed-up     {best[peer] / best['kfuse']:9.2f}x")
    print(kfuse.explain(norm_sort_softmax, xd) if args.n <= 4096 else "")


if __name__ == "__main__":
    main()
