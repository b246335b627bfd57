"""Issue 33: a step of 20 small fused calls (1024-65536 elements), made one by one and replayed as
one CUDA graph (``kfuse.capture``), timed in the same process. Usage: python benchmarks/graph_bench.py"""
import time

import cupy as cp
import numpy as np

import kfuse


@kfuse.jit
def _gelu_bias(x, b):
    y = x + b
    return 0.5 * y * (1 + np.tanh(0.7978845608 * (y + 0.044715 * y * y * y)))


def _arrays():
    rng = np.random.default_rng(0)
    sizes = [1024 * 2 ** (k % 7) for k in range(20)]          # 1024 .. 65536
    return [(cp.asarray(rng.standard_normal(n).astype(np.float32)),
             cp.asarray(rng.standard_normal(n).astype(np.float32))) for n in sizes]


def step(pairs):
    return [_gelu_bias(x, b) for x, b in pairs]


def _time(fn, reps=200):
    fn()
    cp.cuda.get_current_stream().synchronize()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        cp.cuda.get_current_stream().synchronize()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def main():
    pairs = _arrays()
    eager = _time(lambda: step(pairs))
    g = kfuse.capture(step, pairs)
    replay = _time(g.replay)
    same = all(cp.asnumpy(a).tobytes() == cp.asnumpy(b).tobytes() for a, b in zip(step(pairs), g.replay()))
    print(f"20 calls one by one {eager * 1e6:.1f} us, replayed graph {replay * 1e6:.1f} us, "
          f"{eager / replay:.2f}x, bit-identical {same}")


if __name__ == "__main__":
    main()
