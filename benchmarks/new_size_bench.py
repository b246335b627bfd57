"""What a new size costs: a function called at 20 sizes it has not seen (same dtypes, rank and
broadcast pattern, some in other tuning buckets), per workload the median and max of (first call
at a size) - (the fastest of three more calls at that size), in ms, beside the hot call itself.

    python benchmarks/new_size_bench.py [--device cpu|gpu] [--sizes 20] [--repeat 3]

The build cost is what ``kfuse.jit`` spends before running the kernels at a new size (trace,
optimize, and with the shape-class reuse: map the plan, lower, check, rebind); ``compile_count``
stays 1 and ``retrace_count`` counts the new sizes. Timings on a shared machine are noisy: the
min over ``--repeat`` runs of each statistic is printed.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import kfuse


def softmax(x):
    m = x.max(-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(-1, keepdims=True)


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def colsum(x):
    return x.sum(axis=0)


def bias_gelu(x, b):
    y = x + b
    return 0.5 * y * (1.0 + np.tanh(0.7978845608 * (y + 0.044715 * y ** 3)))


WORKLOADS = {
    "softmax": (softmax, lambda r, c, xp: (xp.random.rand(r, c).astype(np.float32),)),
    "layernorm": (layernorm, lambda r, c, xp: (xp.random.rand(r, c).astype(np.float32),
                                               xp.ones(c, np.float32), xp.zeros(c, np.float32))),
    "colsum": (colsum, lambda r, c, xp: (xp.random.rand(r, c).astype(np.float32),)),
    "bias_gelu": (bias_gelu, lambda r, c, xp: (xp.random.rand(r, c).astype(np.float32),
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


def measure(name: str, xp, sync, n: int, seed: int) -> tuple[float, float, float, int, int]:
    fn, make = WORKLOADS[name]
    jf = kfuse.jit(fn)
    jf(*make(7, 9, xp))                     # the first build (compiles, or loads from the cache)
    sync()
    extra, hot = [], []
    for r, c in sizes(n, seed):
        args = make(r, c, xp)
        sync()
        t0 = time.perf_counter()
        jf(*args)
        sync()
        first = time.perf_counter() - t0
        again = []
        for _ in range(3):              # the call itself: the fastest of three (threads stall)
            t0 = time.perf_counter()
            jf(*args)
            sync()
            again.append(time.perf_counter() - t0)
        extra.append(first - min(again))
        hot.append(min(again))
    return (float(np.median(extra)) * 1e3, max(extra) * 1e3, float(np.median(hot)) * 1e3,
            jf.compile_count, getattr(jf, "retrace_count", -1))


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
    print(f"new size cost on {args.device}, {args.sizes} sizes, min of {args.repeat} runs (ms)")
    print(f"{'workload':12s} {'median':>8s} {'max':>8s} {'hot call':>9s} {'compiles':>9s} {'retraces':>9s}")
    for name in args.workloads.split(","):
        runs = [measure(name, xp, sync, args.sizes, seed) for seed in range(args.repeat)]
        med, mx, hot = (min(r[i] for r in runs) for i in range(3))
        print(f"{name:12s} {med:8.3f} {mx:8.3f} {hot:9.3f} {runs[-1][3]:9d} {runs[-1][4]:9d}")


if __name__ == "__main__":
    main()
