"""Attention written in NumPy style, kfuse against torch.compile and SDPA (issue 34).

``softmax(q @ swapaxes(k, -1, -2) / sqrt(d)) @ v`` and its causal variant (an ``np.triu`` mask),
q/k/v (batch*heads, seq, head dim) in float16 (CuPy arrays for kfuse) and bfloat16 (torch
tensors), at the issue's shapes. Peers in the same run: ``torch.compile`` of the same function
written with torch ops, and ``torch.nn.functional.scaled_dot_product_attention`` (``is_causal``
for the causal rows) on (1, batch*heads, seq, d) tensors. TFLOP/s count 4*B*S*S*d (half for
causal). Times: best of 3 trials of (CUDA events around 10 back-to-back calls)/10. Writes
attention_bench.json and .md under $OUT (else ./bench_out).
Run on a GPU machine: ``python3 benchmarks/attention_bench.py [--quick] [--no-compile]``.
"""
from __future__ import annotations

import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import cupy as cp
import numpy as np
import torch

import kfuse

SHAPES = [(32, 2048, 128), (16, 4096, 64), (8, 8192, 128)]


def np_attn(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) * (1.0 / math.sqrt(q.shape[-1]))
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    return p / p.sum(-1, keepdims=True) @ v


def np_causal(q, k, v):
    T = q.shape[-2]
    s = q @ np.swapaxes(k, -1, -2) * (1.0 / math.sqrt(q.shape[-1]))
    s = np.where(np.triu(np.ones((T, T), dtype=bool), k=1), -np.inf, s)
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    return p / p.sum(-1, keepdims=True) @ v


def torch_attn(q, k, v, causal=False):
    s = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        T = q.shape[-2]
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    s = s - s.amax(-1, keepdim=True)
    p = torch.exp(s)
    return p / p.sum(-1, keepdim=True) @ v


def timed(fn, reps=10, trials=3):
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(trials):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        best = min(best, s.elapsed_time(e) / reps)
    return best


def main():
    quick, compile_peer = "--quick" in sys.argv, "--no-compile" not in sys.argv
    out_dir = os.environ.get("OUT", "bench_out")
    os.makedirs(out_dir, exist_ok=True)
    rows = []
    for (B, S, d) in SHAPES[:1] if quick else SHAPES:
        for dt in ("f16", "bf16"):
            tdt = torch.float16 if dt == "f16" else torch.bfloat16
            gen = torch.Generator("cuda").manual_seed(0)
            q, k, v = (torch.randn(B, S, d, device="cuda", dtype=tdt, generator=gen) for _ in range(3))
            args = [cp.asarray(x) for x in (q, k, v)] if dt == "f16" else [q, k, v]
            for causal in (False, True):
                fn = kfuse.jit(np_causal if causal else np_attn)
                plan = kfuse.explain(fn, *args)
                row = dict(shape=[B, S, d], dtype=dt, causal=causal, kernels=len(plan.groups),
                           kinds=[str(g.kind) for g in plan.groups],
                           predicted_ms=sum(g.cost.seconds for g in plan.groups) * 1e3)
                flops = 4 * B * S * S * d / (2 if causal else 1)
                row["kfuse_ms"] = timed(lambda: fn(*args))
                q4, k4, v4 = (x[None] for x in (q, k, v))
                row["sdpa_ms"] = timed(lambda: torch.nn.functional.scaled_dot_product_attention(
                    q4, k4, v4, is_causal=causal))
                if compile_peer:
                    tc = torch.compile(lambda a, b, c: torch_attn(a, b, c, causal))
                    row["torch_compile_ms"] = timed(lambda: tc(q, k, v))
                for key in ("kfuse", "sdpa", "torch_compile"):
                    if f"{key}_ms" in row:
                        row[f"{key}_tflops"] = flops / row[f"{key}_ms"] / 1e9
                rows.append(row)
                print(json.dumps(row), flush=True)
    dev = torch.cuda.get_device_name()
    with open(os.path.join(out_dir, "attention_bench.json"), "w") as f:
        json.dump(dict(device=dev, rows=rows), f, indent=1)
    lines = [f"GPU: {dev}", "", "| shape | dtype | causal | kernels | kfuse ms (TFLOP/s) | torch.compile ms "
             "(TFLOP/s) | SDPA ms (TFLOP/s) | kfuse / torch.compile | kfuse / SDPA |", "|---" * 9 + "|"]
    for r in rows:
        def cell(key):
            return f"{r[key + '_ms']:.3f} ({r[key + '_tflops']:.0f})" if key + "_ms" in r else "–"
        tc = f"{r['torch_compile_ms'] / r['kfuse_ms']:.2f}×" if "torch_compile_ms" in r else "–"
        lines.append(f"| {tuple(r['shape'])} | {r['dtype']} | {r['causal']} | {r['kernels']} | {cell('kfuse')} | "
                     f"{cell('torch_compile')} | {cell('sdpa')} | {tc} | {r['sdpa_ms'] / r['kfuse_ms']:.2f}× |")
    with open(os.path.join(out_dir, "attention_bench.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
