"""Where a call of the in-place writes goes (eighteenth session): ``cupyx.profiler.benchmark`` CPU
and GPU time per call of ``cache[:, t] = k`` (t a Python int, a NumPy int, or static) and
``x[:, 0] = 0`` against torch eager, and a cProfile of the hot path. Usage on the GPU machine:
PYTHONPATH=.:benchmarks python3 benchmarks/probes/inplace_dispatch_probe.py (prints; writes
inplace_dispatch_probe.txt under $OUT)."""
import cProfile
import io
import os
import pstats

import cupy as cp
import numpy as np
import torch
from cupyx.profiler import benchmark

import kfuse


def kv_cache(cache, k, t):
    cache[:, t] = k


def set_column(x):
    x[:, 0] = 0


def main():
    out = io.StringIO()
    cache = cp.asarray(np.random.default_rng(0).standard_normal((64, 2048, 256)).astype(np.float32))
    k = cp.ones((64, 256), cp.float32)
    x = cp.zeros((16384, 1024), cp.float32)
    tc, tk, tx = torch.as_tensor(cache, device="cuda"), torch.as_tensor(k, device="cuda"), torch.as_tensor(x, device="cuda")
    kv, kv_static, col = kfuse.jit(kv_cache), kfuse.jit(kv_cache, static_argnames=("t",)), kfuse.jit(set_column)
    cases = {"kv t=int": lambda: kv(cache, k, 1000), "kv t=np.int64": lambda: kv(cache, k, np.int64(1000)),
             "kv t static": lambda: kv_static(cache, k, 1000), "kv torch eager": lambda: kv_cache(tc, tk, 1000),
             "column": lambda: col(x), "column torch eager": lambda: set_column(tx)}
    for name, f in cases.items():
        r = benchmark(f, n_repeat=200, n_warmup=10)
        print(f"{name}: cpu {np.median(r.cpu_times) * 1e6:.1f} us, gpu {np.median(r.gpu_times) * 1e6:.1f} us", file=out)
    for name in ("kv t=int", "column"):
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(300):
            cases[name]()
        prof.disable()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(25)
        print(f"--- cProfile {name} (300 calls)\n{s.getvalue()}", file=out)
    print(kv.lower(cache, k, 1000).plan.as_text(), file=out)
    text = out.getvalue()
    print(text)
    with open(os.path.join(os.environ.get("OUT", "."), "inplace_dispatch_probe.txt"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
