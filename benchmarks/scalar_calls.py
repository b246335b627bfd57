"""GPU probe of calls with host scalar arguments (issue 33's done-when): the kv-cache write
``cache[:, t] = k`` with a Python int ``t`` (a 64x2048x256 float32 cache, k 64x256) and Adam as
users write it (four float32 inputs of 2**20, three outputs, Python float ``lr`` and int step ``t``),
each a cached ``kfuse.jit`` call against the same code in CuPy eager and, for the kv-cache write,
torch eager (torch tensors, where torch is installed), with ``t`` and ``lr`` changing every call. Prints each one's host time a call in us (the
minimum over interleaved rounds of the median of ``--inner`` calls, then a device sync), and
whether kfuse took its direct launch (``runtime.direct_launch``).

Run on a GPU: ``PYTHONPATH=. python benchmarks/scalar_calls.py [--rounds 9] [--inner 300]``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kfuse  # noqa: E402
from tests.scalar_workloads import adam, kv  # noqa: E402


def _per_call(fn, make_args, inner: int, sync) -> float:
    args = [make_args(j) for j in range(inner)]
    sync()
    t = time.perf_counter()
    for a in args:
        fn(*a)
    sync()
    return (time.perf_counter() - t) / inner * 1e6


def _interleaved(cases: dict, rounds: int, inner: int, sync) -> dict:
    best = {name: float("inf") for name in cases}
    for _ in range(rounds):
        for name, (fn, make_args) in cases.items():
            best[name] = min(best[name], _per_call(fn, make_args, inner, sync))
    return best


def _direct(jitted) -> bool:
    return any("launch(" in getattr(e.run, "source", "") for e in jitted._programs.values())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--inner", type=int, default=300)
    a = ap.parse_args(argv)
    import cupy as cp
    sync = cp.cuda.get_current_stream().synchronize
    rng = np.random.default_rng(0)
    cache = cp.asarray(rng.standard_normal((64, 2048, 256), dtype=np.float32))
    k = cp.asarray(rng.standard_normal((64, 256), dtype=np.float32))
    state = [cp.asarray(rng.random(2 ** 20, dtype=np.float32)) for _ in range(4)]
    kv_j, adam_j = kfuse.jit(kv, backend="cuda"), kfuse.jit(adam, backend="cuda")
    cases = {"kv kfuse": (kv_j, lambda j: (cache, k, j % 2048)),
             "kv cupy": (kv, lambda j: (cache, k, j % 2048)),
             "adam kfuse": (adam_j, lambda j: (*state, 1e-3 * (1 + j % 7), 1 + j)),
             "adam cupy": (adam, lambda j: (*state, 1e-3 * (1 + j % 7), 1 + j))}
    try:
        import torch
        tc, tk = torch.as_tensor(cache, device="cuda"), torch.as_tensor(k, device="cuda")
        cases["kv torch"] = (kv, lambda j: (tc, tk, j % 2048))      # (Adam's np.sqrt takes no torch tensor)

        def sync_all():
            torch.cuda.synchronize()
            sync()
    except ImportError:
        sync_all = sync
    for fn, make in (cases["kv kfuse"], cases["adam kfuse"]):
        fn(*make(0))
        fn(*make(1))
    best = _interleaved(cases, a.rounds, a.inner, sync_all)
    print(f"{'case':<12} {'us a call':>10}")
    for name, t in best.items():
        print(f"{name:<12} {t:10.2f}")
    print(f"direct launch: kv {_direct(kv_j)}, adam {_direct(adam_j)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
