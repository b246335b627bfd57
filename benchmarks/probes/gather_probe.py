"""Per-kernel GPU times (torch.profiler / CUPTI) of the gather_bench cases, kfuse and torch.compile.
Usage: PYTHONPATH=. python3 benchmarks/probes/gather_probe.py"""
import sys
import cupy as cp
import numpy as np
import torch
sys.path.insert(0, "benchmarks")
import gather_bench as g  # noqa: E402
import kfuse  # noqa: E402


def xent_nocheck(x, y):
    n, c = x.shape
    picked = np.take(x.reshape(-1), np.arange(n) * c + y, mode="clip")
    return (g._lse(x)[:, 0] - picked).mean()


def lse_only(x, y):
    return g._lse(x)[:, 0]


rng = np.random.default_rng(0)
x = cp.asarray((rng.standard_normal((g.N, g.C)) * 3).astype(np.float32))
y = cp.asarray(rng.integers(0, g.C, g.N).astype(np.int64))
t = cp.asarray(rng.standard_normal((g.V, g.D)).astype(np.float32))
i = cp.asarray(rng.integers(0, g.V, g.B).astype(np.int64))
tx, ty = torch.as_tensor(x, device="cuda"), torch.as_tensor(y, device="cuda")
tt, ti = torch.as_tensor(t, device="cuda"), torch.as_tensor(i, device="cuda")
tf = g._torch_fns()
runs = {"kfuse xent-lse": (kfuse.jit(g.xent_lse), (x, y)),
        "kfuse xent-nocheck": (kfuse.jit(xent_nocheck), (x, y)),
        "kfuse lse-only": (kfuse.jit(lse_only), (x, y)),
        "torch xent-lse": (torch.compile(tf["xent-lse"]), (tx, ty)),
        "kfuse embedding": (kfuse.jit(g.embedding), (t, i)),
        "kfuse embedding-clip": (kfuse.jit(g.embedding_clip), (t, i)),
        "torch embedding": (torch.compile(tf["embedding"]), (tt, ti))}
for name, (f, a) in runs.items():
    for _ in range(3):
        f(*a)
    torch.cuda.synchronize(); cp.cuda.Device().synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA, torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(10):
            f(*a)
        torch.cuda.synchronize(); cp.cuda.Device().synchronize()
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    tot = {}
    for e in evs:
        tot.setdefault(e.name[:60], []).append(e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total)
    print(f"== {name}")
    for k, v in tot.items():
        print(f"   {k:60s} n={len(v):3d} mean={np.mean(v):8.1f} us")
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    for _ in range(20):
        f(*a)
    e.record(); e.synchronize()
    print(f"   wall per call {cp.cuda.get_elapsed_time(s, e) / 20 * 1000:.1f} us")
