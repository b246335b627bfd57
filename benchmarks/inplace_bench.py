"""GPU timing of functions that write into their arguments (``KernelGroup.in_place``: an
elementwise kernel computes an argument's final value straight into the caller's array) against
the same kfuse function with those passes off (``plan.with_argument_writes`` and
``simplify.region_writes``: the value written to a new buffer and copied back, as before the
eighteenth session), torch.compile, torch eager and CuPy eager, all in one run.

Cases (float32, arguments written in place, nothing returned but ``p``/``x`` for the error):
  * ``adam``: an Adam step ``m *= b1; m += (1 - b1) * g; v *= b2; v += (1 - b2) * g * g;
    p -= lr * mhat / (sqrt(vhat) + eps)`` on 2**26 elements (P6's arithmetic, written as an
    optimizer writes it: 4 arrays read, 3 written);
  * ``sgd``: ``p -= lr * g`` on 2**26 elements (2 read, 1 written);
  * ``set-column``: ``x[:, 0] = 0`` into a 16384 x 1024 argument (a region scatter: one kernel
    over the column, in place; before, with the pass off, one kernel over the whole array);
  * ``kv-cache``: ``cache[:, t] = k`` into a 64 x 2048 x 256 cache, ``t`` a Python int (a scatter at
    a traced position, its range checked on the host).
Each: the median over 15 rounds of 10 back-to-back calls between two CUDA events, peers
interleaved per round. % copy: a CuPy copy moving the bytes the case must touch at least.
Writes ``inplace_bench.md`` under $OUT (or the current directory).
Usage: PYTHONPATH=.:benchmarks python3 benchmarks/inplace_bench.py
"""
import os

import cupy as cp
import numpy as np

import peer_timing

LR, B1, B2, EPS, BC1, BC2 = 1e-3, 0.9, 0.999, 1e-8, 1 - 0.9 ** 10, 1 - 0.999 ** 10


def adam(p, g, m, v, xp=np):
    m *= B1
    m += (1 - B1) * g
    v *= B2
    v += (1 - B2) * g * g
    p -= LR * (m / BC1) / (xp.sqrt(v / BC2) + EPS)
    return p


def sgd(p, g):
    p -= LR * g
    return p


def set_column(x):
    x[:, 0] = 0
    return x


def kv_cache(cache, k, t):
    cache[:, t] = k
    return cache


def _torch_adam(p, g, m, v):
    import torch
    return adam(p, g, m, v, xp=torch)


def _cases(rng):
    n = 2 ** 26
    big = [rng.standard_normal(n).astype(np.float32) for _ in range(3)] + [rng.random(n).astype(np.float32)]
    x = rng.standard_normal((16384, 1024)).astype(np.float32)
    cache, k = rng.standard_normal((64, 2048, 256)).astype(np.float32), rng.standard_normal((64, 256)).astype(np.float32)
    return {"adam": (adam, _torch_adam, lambda *a: adam(*a, xp=cp), big, 7 * 4 * n),
            "sgd": (sgd, sgd, sgd, big[:2], 3 * 4 * n),
            "set-column": (set_column, set_column, set_column, [x], 2 * 4 * x.shape[0]),
            "kv-cache": (kv_cache, kv_cache, kv_cache, [cache, k, 1000], 2 * k.nbytes)}


def main():
    import torch

    import kfuse
    from kfuse.fusion import pipeline
    out_dir = os.environ.get("OUT", ".")
    rng = np.random.default_rng(0)
    rows = []
    for name, (fn, tfn, cfn, host, least) in _cases(rng).items():
        want = np.asarray(fn(*[a.astype(np.float64) if isinstance(a, np.ndarray) else a for a in host]))
        scale = float(np.max(np.abs(want))) or 1.0
        kf, before = kfuse.jit(fn), kfuse.jit(fn)
        args = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in host]
        targs = [torch.as_tensor(a, device="cuda") if isinstance(a, np.ndarray) else a for a in host]
        keep, defaults = pipeline.with_argument_writes, pipeline.optimize.__defaults__
        pipeline.with_argument_writes = lambda graph, groups: groups   # plans without the passes
        pipeline.optimize.__defaults__ = (tuple(p for p in defaults[0] if p.name != "region_writes"),) + defaults[1:]
        try:
            before(*[cp.asarray(a) if isinstance(a, np.ndarray) else a for a in host])
        finally:
            pipeline.with_argument_writes, pipeline.optimize.__defaults__ = keep, defaults
        calls = {"kfuse[cuda]": (kf, cp.asarray, cp.asnumpy),
                 "kfuse[cuda], copied back": (before, cp.asarray, cp.asnumpy),
                 "torch.compile": (torch.compile(tfn), _torch, _torch_host),
                 "torch eager": (tfn, _torch, _torch_host), "cupy eager": (cfn, cp.asarray, cp.asnumpy)}
        peers, errs = {}, {}
        for k, (f, dev, host_of) in calls.items():
            fresh = [dev(a.copy()) if isinstance(a, np.ndarray) else a for a in host]
            errs[k] = float(np.max(np.abs(host_of(f(*fresh)) - want))) / scale
            on = targs if dev is _torch else args
            peers[k] = lambda f=f, on=on: f(*on)
        times = peer_timing.interleaved(peers)
        copy = peer_timing.copy_ms(least)
        rows += [(name, k, ms, copy / ms * 100, errs[k]) for k, ms in times.items()]
        del args, targs, peers
        cp.get_default_memory_pool().free_all_blocks()
        torch.cuda.empty_cache()
    text = peer_timing.table("inplace_bench", "shapes in the module docstring. ms: median of 15 rounds of 10 "
                             "calls; % copy: a cupy copy of the bytes the case reads and writes at least, "
                             "timed in this run; error: max |y - ref| / max |ref| of one call against NumPy "
                             "(float64).", rows)
    print(text)
    with open(os.path.join(out_dir, "inplace_bench.md"), "w") as f:
        f.write(text)


def _torch(a):
    import torch
    return torch.as_tensor(a, device="cuda")


def _torch_host(t):
    return t.cpu().numpy()


if __name__ == "__main__":
    main()
