"""GPU hot-call probe (issue 33): the host time of a cached ``kfuse.jit`` call on small device
arrays, beside its peer in the same run.

Cases (float32):
  * ``chain``: ``np.tanh(x + b) * 0.5 + x`` on 1024-element CuPy arrays against
    ``cupy.ElementwiseKernel`` of the same expression (bar: at most its time);
  * ``chain (torch)``: the same function on torch CUDA tensors against one torch eager op,
    ``x + b`` (bar: at most 1.2x);
  * ``adam``: an Adam step's 4 inputs and 3 outputs (1024 elements; CuPy and torch) (bar: 15 µs),
    and the same step as optimizers write it, with a Python float ``lr`` and int step ``t`` that
    change every call (by-value kernel parameters);
  * ``kv-cache``: ``cache[:, t] = k`` into a 64 x 2048 x 256 cache, ``t`` a Python int changing
    every call, against torch eager's same write (bar: 15 µs).

Each call is timed as rounds of ``--calls`` back-to-back calls followed by a device sync (the
time per call is the round's time over ``--calls``), peers interleaved round by round; the table
prints the minimum over ``--rounds`` (the machine is shared: the minimum is the call's cost
without interference) and the median.

Run: ``PYTHONPATH=. python3 benchmarks/gpu_hot_call.py [--rounds 15] [--calls 2000]``.
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import time

import numpy as np


def chain(x, b):
    return np.tanh(x + b) * 0.5 + x


def adam(p, g, m, v):
    m2 = 0.9 * m + 0.1 * g
    v2 = 0.999 * v + 0.001 * g * g
    return p - 1e-3 * m2 / (np.sqrt(v2) + 1e-8), m2, v2


def adam_scalars(p, g, m, v, lr, t):
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    return p - lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8), m, v


def kv_write(cache, k, t):
    cache[:, t] = k
    return cache


def _cases():
    import cupy as cp
    import torch

    import kfuse
    rng = np.random.default_rng(0)
    host = [rng.standard_normal(1024).astype(np.float32) for _ in range(4)]
    x, b, m, v = (cp.asarray(a) for a in host)
    xt, bt, mt, vt = (torch.as_tensor(a, device="cuda") for a in host)
    ek = cp.ElementwiseKernel("float32 x, float32 b", "float32 y", "y = tanh(x + b) * 0.5f + x", "kfuse_probe_ek")
    cache = cp.asarray(rng.standard_normal((64, 2048, 256)).astype(np.float32))
    k = cp.asarray(rng.standard_normal((64, 256)).astype(np.float32))
    tcache, tk = torch.as_tensor(cache, device="cuda"), torch.as_tensor(k, device="cuda")

    steps = itertools.cycle(range(1, 1001))        # t (and lr) change every call

    def torch_kv():
        tcache[:, next(steps)] = tk
    f, fa, fs, fkv = kfuse.jit(chain), kfuse.jit(adam), kfuse.jit(adam_scalars), kfuse.jit(kv_write)
    return {
        "chain, CuPy 1024": ({"kfuse": lambda: f(x, b), "cupy.ElementwiseKernel": lambda: ek(x, b)}, 1.0),
        "chain, torch 1024": ({"kfuse": lambda: f(xt, bt), "torch eager x + b": lambda: xt + bt}, 1.2),
        "adam, CuPy 1024": ({"kfuse": lambda: fa(x, b, m, v)}, None),
        "adam, torch 1024": ({"kfuse": lambda: fa(xt, bt, mt, vt)}, None),
        "adam(lr, t), CuPy": ({"kfuse": lambda: fs(x, b, m, v, 1e-3 / next(steps), next(steps))}, None),
        "kv-cache, CuPy": ({"kfuse": lambda: fkv(cache, k, next(steps)), "torch eager": torch_kv}, None),
    }


def _round(fn, calls: int, sync) -> float:
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - t0) / calls * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=2000)
    a = ap.parse_args(argv)
    import cupy as cp
    import torch

    def sync():
        cp.cuda.runtime.deviceSynchronize()
        torch.cuda.synchronize()
    print(f"GPU hot calls on {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}: µs a call, "
          f"min / median of {a.rounds} rounds of {a.calls} calls, peers interleaved")
    print(f"{'case':22} {'callable':26} {'min':>8} {'median':>8}  ratio to the peer (min)")
    for case, (fns, bar) in _cases().items():
        for fn in fns.values():             # compile, build the direct path, warm the pools
            for _ in range(3):
                fn()
        times = {name: [] for name in fns}
        for _ in range(a.rounds):
            for name, fn in fns.items():
                times[name].append(_round(fn, a.calls, sync))
        best = {name: min(ts) for name, ts in times.items()}
        peers = [n for n in fns if n != "kfuse"]
        for name, ts in times.items():
            note = ""
            if name == "kfuse" and peers:
                note = f"{best['kfuse'] / best[peers[0]]:.2f}x" + (f" (bar {bar:.1f}x)" if bar else "")
            print(f"{case:22} {name:26} {best[name]:8.2f} {statistics.median(ts):8.2f}  {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
