"""Quick CPU benchmark of the kfuse CPU backend: P1 (gelu(x*w+b), tanh form, 4096x4096 f32) and
P6 (Adam step, 2^24 f32, 3 outputs) against NumPy eager. Median of repeats, after warm-up.

Run: ``python benchmarks/cpu_quick.py [--n1 4096] [--n6 16777216] [--repeat 7]``.
The kfuse path here is trace -> optimize -> plan -> kfuse.runtime.cpu.compile_plan (no kfuse.jit
dispatch overhead; that layer is measured elsewhere).
"""
from __future__ import annotations

import argparse
import inspect
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kfuse.fusion.pipeline import optimize, plan  # noqa: E402
from kfuse.ir.specs import spec_of_value  # noqa: E402
from kfuse.runtime.cpu import compile_plan  # noqa: E402
from kfuse.trace import trace_function  # noqa: E402


def p1_gelu(x, w, b):
    y = x * w + b
    return 0.5 * y * (1.0 + np.tanh(0.7978845608 * (y + 0.044715 * y * y * y)))


def p6_adam(p, g, m, v):
    lr, b1, b2, eps, t = 1e-3, 0.9, 0.999, 1e-8, 10
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    mhat = m / (1 - b1 ** t)
    vhat = v / (1 - b2 ** t)
    p = p - lr * mhat / (np.sqrt(vhat) + eps)
    return p, m, v


def compile_fn(fn, *args):
    names = list(inspect.signature(fn).parameters)
    specs = {n: spec_of_value(a) for n, a in zip(names, args)}
    t0 = time.perf_counter()
    pl = plan(optimize(trace_function(fn, specs)))
    prog = compile_plan(pl)
    prog(list(args))                    # first call compiles
    return pl, prog, time.perf_counter() - t0


def bench(f, repeat):
    f()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), float(min(ts))


def check(got, want):
    got = got if isinstance(got, (list, tuple)) else [got]
    want = want if isinstance(want, (list, tuple)) else [want]
    return max(float(np.max(np.abs(g.astype(np.float64) - w)) / np.max(np.abs(w))) for g, w in zip(got, want))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n1", type=int, default=4096)
    ap.add_argument("--n6", type=int, default=1 << 24)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    x = rng.standard_normal((a.n1, a.n1), dtype=np.float32)
    w = rng.standard_normal(a.n1, dtype=np.float32)
    b = rng.standard_normal(a.n1, dtype=np.float32)
    p6 = [rng.standard_normal(a.n6, dtype=np.float32) for _ in range(3)]
    p6.append(np.abs(rng.standard_normal(a.n6, dtype=np.float32)))
    work = (("P1 gelu(x*w+b) f32[%d,%d]" % (a.n1, a.n1), p1_gelu, (x, w, b)),
            ("P6 adam f32[%d]" % a.n6, p6_adam, tuple(p6)))
    # NumPy first: Numba's parallel threads spin for a while after each kernel and would slow it
    t_numpy = [bench(lambda: fn(*args), a.repeat)[0] for _, fn, args in work]
    for (name, fn, args), t_np in zip(work, t_numpy):
        pl, prog, tc = compile_fn(fn, *args)
        t_kf, t_kf_min = bench(lambda: prog(list(args)), a.repeat)
        ref = fn(*[np.asarray(v, np.float64) for v in args])
        err = check(prog(list(args)), ref)
        rows.append((name, len(pl.groups), t_np * 1e3, t_kf * 1e3, t_np / t_kf, tc, err))
    print(f"{'workload':34s} {'kernels':>7s} {'numpy ms':>9s} {'kfuse ms':>9s} {'speedup':>8s} "
          f"{'compile s':>9s} {'max rel err vs f64':>18s}")
    for r in rows:
        print(f"{r[0]:34s} {r[1]:7d} {r[2]:9.1f} {r[3]:9.1f} {r[4]:7.2f}x {r[5]:9.2f} {r[6]:18.2e}")
    return rows


if __name__ == "__main__":
    main()
