"""Where does the idle gap between back-to-back kernels come from? One 256 MiB float32 copy kernel
launched in the suite's per-call timing loop several ways (CuPy RawKernel with 2 or 14
parameters; torch's own copy, a cudaMemcpy and no kernel), under torch.profiler; per kernel:
duration and the gap before it (µs). An experiment tool.

Usage on the GPU machine: PYTHONPATH=. python3 benchmarks/launch_gap_probe.py (writes
launch_gap.md under $OUT or the current directory)."""
import os

import cupy as cp
import numpy as np
import torch
from harness_probe import profiled_medians

from kfuse.bench import timing

SRC = r"""
extern "C" __global__ void __launch_bounds__(128) copy2(float* __restrict__ o, const float* __restrict__ x) {
  const long long i = ((long long)blockIdx.x * 128 + threadIdx.x) * 4;
  *reinterpret_cast<float4*>(o + i) = *reinterpret_cast<const float4*>(x + i);
}
extern "C" __global__ void __launch_bounds__(128) copy14(float* __restrict__ o, const float* __restrict__ x,
    long long a, long long b, long long c, long long d, long long e, long long f, long long g, long long h,
    long long k, long long l, unsigned m, unsigned n) {
  const long long i = ((long long)blockIdx.x * 128 + threadIdx.x) * 4;
  *reinterpret_cast<float4*>(o + i) = *reinterpret_cast<const float4*>(x + i);
}
"""


def main():
    n = 64 << 20
    xs = [cp.random.standard_normal(n, dtype=cp.float32) for _ in range(2)]
    outs = [cp.empty(n, dtype=cp.float32) for _ in range(3)]
    txs = [torch.from_dlpack(x) for x in xs]
    touts = [torch.from_dlpack(o) for o in outs]
    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    k2, k14 = (mod.get_function(k) for k in ("copy2", "copy14"))
    grid = n // 512
    tail = tuple(np.int64(i) for i in range(10)) + (np.uint32(1), np.uint32(2))
    ways = {
        "cupy RawKernel, 2 params": lambda i: k2((grid,), (128,), (outs[i % 3], xs[i % 2])),
        "cupy RawKernel, 14 params": lambda i: k14((grid,), (128,), (outs[i % 3], xs[i % 2]) + tail),
        "torch copy_": lambda i: touts[i % 3].copy_(txs[i % 2]),
    }
    for f in ways.values():
        f(0)
    cp.cuda.Device().synchronize()
    med, evs = profiled_medians(ways, timing.EventAPI.cupy(), "/tmp/gap.json")
    by = {}
    for e in evs:
        if e["gap"] is not None:
            by.setdefault(e["name"][:60], []).append((e["dur"], e["gap"]))
    lines = ["| way | suite median ms (2 rounds) |", "|---|---|"]
    lines += [f"| {k} | {' '.join(f'{x:.4f}' for x in v)} |" for k, v in med.items()]
    lines += ["", "| kernel | n | dur p50 µs | gap before p10 / p50 / p90 µs |", "|---|---|---|---|"]
    for k, v in by.items():
        d, g = np.array([x[0] for x in v]), np.array([x[1] for x in v])
        lines.append(f"| {k} | {len(v)} | {np.median(d):.1f} | {np.percentile(g, 10):.1f} / {np.median(g):.1f} / "
                     f"{np.percentile(g, 90):.1f} |")
    with open(os.path.join(os.environ.get("OUT", "."), "launch_gap.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
