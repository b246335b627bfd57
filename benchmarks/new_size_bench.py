"""What a new size costs: a function called at 20 sizes it has not seen (same dtypes, rank and
broadcast pattern, some in other tuning buckets), per workload the median and max of (first call
at a size) - (the fastest of three more calls at that size), in ms, beside the hot call itself.

    python benchmarks/new_size_bench.py [--device cpu|gpu] [--sizes 20] [--repeat 3]

On a shared machine set ``KFUSE_CPU_THREADS=1``: a parallel kernel's join waits for descheduled
threads, and the difference of two calls then measures the waits, not the build.

The build cost is what ``kfuse.jit`` spends before running the kernels at a new size. Where the
function's trace is size-generic (``kfuse.size_generic``: it read no size, its ops compute sizes by
products) a new size of the same shape class and pattern of equal dims is not traced: its graph,
plan and kernel IRs are rebuilt at the sizes and the kernels rebound (``untraced_count``, the
column "untraced"); else it is traced, optimized, mapped onto the shape class's plan, lowered,
checked and rebound (``retrace_count``, the column "retraces", which also counts the one probe
trace per class and pattern that makes a trace size-generic: the first build's and the 640x640
warm-up's here). ``compile_count`` stays 1. Timings on a shared machine are noisy: the
min over ``--repeat`` runs of each statistic is printed, by the wall clock and by the calling
thread's CPU time (what the build costs when the process is not descheduled). Not measured: the first size (the
compile) and one large size (the first use of the kernels' parallel variants, compiled once per
process whatever the sizes).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import kfuse
from kfuse.bench.workloads import make_p1, make_p2, make_p3


softmax = make_p2(np)            # the public suite's bodies (kfuse/bench/workloads.py)
layernorm = make_p3(np)
gelu_bias = make_p1(np)


def colsum(x):
    return x.sum(axis=0)


WORKLOADS = {
    "softmax": (softmax, lambda r, c, xp: (xp.random.rand(r, c).astype(np.float32),)),
    "layernorm": (layernorm, lambda r, c, xp: (xp.random.rand(r, c).astype(np.float32),
                                               xp.ones(c, np.float32), xp.zeros(c, np.float32))),
    "colsum": (colsum, lambda r, c, xp: (xp.random.rand(r, c).astype(np.float32),)),
    "gelu_bias": (gelu_bias, lambda r, c, xp: (xp.random.rand(r, c).astype(np.float32),
                                               xp.random.rand(c).astype(np.float32),
                                               xp.random.rand(c).astype(np.float32))),
}


def sizes(n: int, seed: int = 0) -> list[tuple[int, int]]:
    """``n`` distinct (rows, cols) from 2 to 599 (several tuning buckets, small enough that the
    kernels' own time does not drown the build's), none repeated."""
    rng = np.random.default_rng(seed)
    out: list = []
    while len(out) < n:
        s = (int(rng.integers(2, 600)), int(rng.integers(2, 600)))
        if s not in out:
            out.append(s)
    return out


def _timed(clock, jf, args, sync) -> float:
    t0 = clock()
    jf(*args)
    sync()
    return clock() - t0


def measure(name: str, xp, sync, n: int, seed: int, clock=time.perf_counter) -> tuple:
    """(median, max of the new-size cost, median hot call) in ms by ``clock``, compiles, retraces,
    untraced sizes."""
    fn, make = WORKLOADS[name]
    jf = kfuse.jit(fn)
    jf(*make(7, 9, xp))                     # the first build (compiles, or loads from the cache)
    for _ in range(8):                      # the parallel variants' first use (compiled once): a
        jf(*make(640, 640, xp))             # kernel buys them at its second to sixth call
    sync()
    extra, hot = [], []
    for r, c in sizes(n, seed):
        args = make(r, c, xp)
        sync()
        first = _timed(clock, jf, args, sync)
        again = min(_timed(clock, jf, args, sync) for _ in range(3))   # the call itself (threads stall)
        extra.append(first - again)
        hot.append(again)
    return (float(np.median(extra)) * 1e3, max(extra) * 1e3, float(np.median(hot)) * 1e3,
            jf.compile_count, getattr(jf, "retrace_count", -1), getattr(jf, "untraced_count", -1))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--sizes", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    args = ap.parse_args(argv)
    if args.device == "gpu":
        import cupy as xp

        def sync():
            xp.cuda.Device().synchronize()
    else:
        xp = np

        def sync():
            pass
    clocks = {"wall": time.perf_counter, "thread CPU": time.thread_time}
    print(f"new size cost on {args.device}, {args.sizes} sizes, min of {args.repeat} runs (ms); "
          "thread CPU time is the calling thread's, robust to a loaded machine")
    print(f"{'workload':12s} {'clock':>10s} {'median':>8s} {'max':>8s} {'hot call':>9s} {'compiles':>9s} "
          f"{'retraces':>9s} {'untraced':>9s}")
    for name in args.workloads.split(","):
        for label, clock in clocks.items():
            runs = [measure(name, xp, sync, args.sizes, seed, clock) for seed in range(args.repeat)]
            med, mx, hot = (min(r[i] for r in runs) for i in range(3))
            print(f"{name:12s} {label:>10s} {med:8.3f} {mx:8.3f} {hot:9.3f} {runs[-1][3]:9d} {runs[-1][4]:9d} "
                  f"{runs[-1][5]:9d}")

if __name__ == "__main__":
    main()
