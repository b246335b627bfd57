"""P5 benchmark: GEMM + bias + GELU(tanh) in f16 at 4096x4096x4096 and 8192x1024x4096.

Per shape: cuBLAS GEMM alone (cupy.matmul), kfuse's generated fused kernel (every tile of the
search space, best kept), the cuBLAS + generated-epilogue candidate, the runtime's auto pick,
torch eager and torch.compile when importable. Prints a table; writes gemm_bench.json and
gemm_bench.md under $OUT (or ./bench_out). Times: median of per-call CUDA-event times after
warm-up. Run on a GPU machine: ``python3 benchmarks/gemm_bench.py [--quick]``.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import cupy as cp
import numpy as np

from kfuse.codegen.gemm_cuda import EpInput, GemmEpilogue, GemmSpec, gemm_search_space
from kfuse.runtime.gemm import GemmRunner

SHAPES = [(4096, 4096, 4096), (8192, 1024, 4096)]


def time_cupy(fn, reps=20, trials=5, warm=3):
    """Median over trials of (events around `reps` back-to-back calls) / reps: launches queue up,
    so host overhead overlaps device work (measured apart as `host_us`)."""
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(trials):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) / reps)
    return statistics.median(ts)


def host_us(fn, reps=50):
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    t = (time.perf_counter() - t) / reps * 1e6
    cp.cuda.Device().synchronize()
    return t


def time_torch(fn, reps=20, trials=5, warm=3):
    import torch
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(trials):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / reps)
    return statistics.median(ts)


def ref_f32(a, b, bias):
    x = cp.matmul(a.astype(cp.float32), b.astype(cp.float32)) + bias.astype(cp.float32)
    return 0.5 * x * (1 + cp.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def rel(got, ref):
    return float(cp.linalg.norm(got.astype(cp.float32) - ref) / cp.linalg.norm(ref))


def main():
    quick = "--quick" in sys.argv
    out_dir = os.environ.get("OUT") or "bench_out"
    os.makedirs(out_dir, exist_ok=True)
    dev = cp.cuda.Device()
    name = cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()
    ep = GemmEpilogue.chain(("add", ("in", 0)), "gelu_tanh", inputs=(EpInput("f16", "row"),))
    spec = GemmSpec("f16", ep)
    runner = GemmRunner()
    rows = []
    rng = cp.random.default_rng(0)
    for M, N, K in SHAPES:
        a = rng.standard_normal((M, K), dtype=cp.float32).astype(cp.float16)
        b = rng.standard_normal((K, N), dtype=cp.float32).astype(cp.float16)
        bias = rng.standard_normal((N,), dtype=cp.float32).astype(cp.float16)
        flops = 2.0 * M * N * K
        ref = ref_f32(a, b, bias)
        r = {"shape": [M, N, K], "gpu": name}
        r["cublas_ms"] = time_cupy(lambda: cp.matmul(a, b))
        tiles = {}
        for t in (gemm_search_space()[:3] if quick else gemm_search_space()):
            try:
                out = runner.run(a, b, [bias], spec, t, backend="generated")
                err = rel(out, ref)
                ms = time_cupy(lambda: runner.run(a, b, [bias], spec, t, backend="generated"))
                tiles[t.name()] = {"ms": ms, "err": err}
            except Exception as e:  # a failing tile is infinitely slow
                tiles[t.name()] = {"ms": float("inf"), "err": None, "error": f"{type(e).__name__}: {e}"[:300]}
        best = min(tiles, key=lambda k: tiles[k]["ms"])
        r["generated_tiles"] = tiles
        r["generated_best_tile"] = best
        r["generated_ms"] = tiles[best]["ms"]
        r["generated_host_us"] = host_us(lambda: runner.run(a, b, [bias], spec, tiles_best(tiles), backend="generated"))
        plain = GemmSpec("f16", GemmEpilogue(out_dtype="f16"))
        runner.run(a, b, [], plain, tiles_best(tiles), backend="generated")
        r["generated_noepi_ms"] = time_cupy(lambda: runner.run(a, b, [], plain, tiles_best(tiles), backend="generated"))
        out = runner.run(a, b, [bias], spec, backend="cublas")
        r["cublas_epi_err"] = rel(out, ref)
        r["cublas_epi_ms"] = time_cupy(lambda: runner.run(a, b, [bias], spec, backend="cublas"))
        runner.run(a, b, [bias], spec, backend="auto")
        r["auto_pick"] = runner.last_choice
        r["auto_timings_ms"] = runner.timings.get(next(iter(k for k in runner.choices if k[2] == runner_bucket(M, N, K))), {})
        try:
            import torch
            import torch.nn.functional as F
            ta, tb, tbias = (torch.from_dlpack(x) for x in (a, b, bias))
            f = lambda: F.gelu(torch.addmm(tbias, ta, tb), approximate="tanh")
            r["torch_eager_ms"] = time_torch(f)
            r["torch_mm_alone_ms"] = time_torch(lambda: ta @ tb)
            try:
                fc = torch.compile(lambda x, y, z: F.gelu(x @ y + z, approximate="tanh"))
                r["torch_compile_ms"] = time_torch(lambda: fc(ta, tb, tbias))
            except Exception as e:
                r["torch_compile_error"] = f"{type(e).__name__}: {e}"[:300]
        except ImportError:
            pass
        for k in [k for k in list(r) if k.endswith("_ms") and isinstance(r[k], float)]:
            r[k.replace("_ms", "_tflops")] = flops / (r[k] * 1e-3) / 1e12
        rows.append(r)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    lines = [f"# P5 GEMM + bias + GELU(tanh), f16 — {name}, {stamp}", "",
             "| shape | cuBLAS alone (cupy.matmul) | generated (best tile) | cuBLAS+epilogue | auto pick | torch eager | torch.compile | torch matmul alone |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cb = r["cublas_tflops"]
        def cell(k):
            v = r.get(k + "_tflops")
            return f"{v:.0f} TF/s ({v / cb:.2f}x)" if v else "-"
        lines.append(f"| {'x'.join(map(str, r['shape']))} | {cb:.0f} TF/s | {cell('generated')} "
                     f"[{r['generated_best_tile']}] | {cell('cublas_epi')} | {r['auto_pick']} | "
                     f"{cell('torch_eager')} | {cell('torch_compile')} | {cell('torch_mm_alone')} |")
    lines.append("")
    for r in rows:
        lines.append(f"tiles {r['shape']}: " + ", ".join(
            f"{k} {flops_of(r) / (v['ms'] * 1e-3) / 1e12:.0f} TF/s err {v['err']:.1e}" if v.get("err") is not None
            else f"{k} failed: {v.get('error')}" for k, v in r["generated_tiles"].items()))
        lines.append(f"errors {r['shape']}: cublas+epi {r['cublas_epi_err']:.1e}; generated without epilogue "
                     f"{r['generated_noepi_tflops']:.0f} TF/s; host time of one generated call {r['generated_host_us']:.0f} us")
    text = "\n".join(lines)
    with open(os.path.join(out_dir, "gemm_bench.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(out_dir, "gemm_bench.json"), "w") as f:
        json.dump({"date": stamp, "gpu": name, "rows": rows}, f, indent=1, default=str)
    print(text)


def tiles_best(tiles):
    name = min(tiles, key=lambda k: tiles[k]["ms"])
    return next(t for t in gemm_search_space() if t.name() == name)


def flops_of(r):
    M, N, K = r["shape"]
    return 2.0 * M * N * K


def runner_bucket(M, N, K):
    import math
    return tuple(1 << max(0, math.ceil(math.log2(max(1, v)))) for v in (1, M, N, K))


if __name__ == "__main__":
    main()
