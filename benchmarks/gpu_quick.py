"""Quick GPU bandwidth check of kfuse's CUDA backend on P1-P4, P6 vs a device-to-device copy and
torch.compile (all measured in this one run). Writes gpu_quick.md / gpu_quick.json under $OUT
(or the current directory). Usage: PYTHONPATH=. python3 benchmarks/gpu_quick.py [--no-torch] [--sweep] [--sweep-ew]

Last GPU run (NVIDIA H200, driver 580.159.04, CUDA 13.0 driver, NVRTC 13.5 CUBIN, 2026-11-21 23:19 UTC;
tests/gpu/test_cuda_runtime.py: 17 passed). Copy 4.25 TB/s. Times are per call, 10 calls queued
between two events, median of 15:
| case | kfuse ms | % copy | torch.compile ms | % copy |
| P1 gelu 8192^2      | 0.150 (0.136 at EW_BLOCKS_PER_SM>=64, now the default) | 84.3 (93.0-93.7) | 0.136 | 92.8 |
| P2 softmax          | 0.165 | 76.5 | 0.208 | 60.8 |
| P3 layernorm        | 0.161 | 78.5 | 0.132 | 96.0 |
| P4 row L2 normalize | 0.150 | 84.4 | 0.130 | 97.1 |
| P6 adam 2^26        | 0.479 (0.444 uncapped grid, now the default) | 92.4 (99.5) | 0.444 | 99.6 |
Host time of a cached call on 1024 elements: kfuse 17.7 us, CuPy ElementwiseKernel 7.0 us.

Run 2 (NVIDIA H200, driver 580.159.04, 2026-11-21 23:36 UTC, copy 4.19 TB/s; one barrier per block
reduce; results of 2026-11-21, commit 219ecaa): P1 90.8%, P2 77.4%, P3 85.5%,
P4 84.8%, P6 100.8% of copy; torch.compile 96.0/58.5/95.0/96.3/100.0%. --sweep (same run): best P2
80.3% at ROW_UNITS_PER_THREAD=8, P3 87.2% at 4 (80.0% with the old two barriers), P4 90.3% at 8.
Hot call on 1024 f32: kfuse.jit 17.6 us (program alone 14.8 us), CuPy ElementwiseKernel 8.0 us.
"""
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "gpu"))
import cupy as cp  # noqa: E402

from handplan import one_group_plan, plan_for, trace  # noqa: E402
from kfuse.runtime import device  # noqa: E402
from kfuse.runtime.cuda import compile_plan  # noqa: E402


def p1(x, w, b):
    y = x * w + b
    return 0.5 * y * (1 + np.tanh(0.7978845608 * (y + 0.044715 * y ** 3)))


def p2(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def p3(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def p4(x):
    return x / np.sqrt((x * x).sum(axis=-1, keepdims=True) + 1e-12)


def p6(p, g, m, v):
    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
    m2 = b1 * m + (1 - b1) * g
    v2 = b2 * v + (1 - b2) * g * g
    p2_ = p - lr * (m2 / (1 - b1)) / (np.sqrt(v2 / (1 - b2)) + eps)
    return p2_, m2, v2


N = 8192
CASES = {
    "P1 gelu(x*w+b) 8192x8192": (p1, [(N, N), (N,), (N,)]),
    "P2 softmax 16384x4096": (p2, [(16384, 4096)]),
    "P3 layernorm 16384x4096": (p3, [(16384, 4096), (4096,), (4096,)]),
    "P4 row L2 normalize 16384x4096": (p4, [(16384, 4096)]),
    "P6 adam 2^26": (p6, [(1 << 26,)] * 4),
}


def bench(f, reps=15, inner=10):
    """Median device time of one call; ``inner`` calls are queued back to back between two
    events so that host launch overhead overlaps the GPU work (throughput, not latency)."""
    for _ in range(3):
        f()
    cp.cuda.Device().synchronize()
    ts = []
    s, e = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(reps):
        s.record()
        for _ in range(inner):
            f()
        e.record()
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) * 1e-3 / inner)
    return float(np.median(ts))


def launch_sweep(copy_bw):
    """Time P2/P3/P4 at several row shapes (the row-kernel knobs of kfuse.runtime.cuda: units a
    thread, launch bounds, barriers) and, with --sweep-ew, P1/P6 at several elementwise shapes.
    Every point's output is compared bit for bit with the default's, on the case and on an odd
    row count."""
    from kfuse.runtime import cuda as rc
    out = []
    for name, (fn, shapes) in CASES.items():
        if fn in (p1, p6):
            if "--sweep-ew" not in sys.argv:
                continue
            points = [{"EW_UNITS_PER_THREAD": u, "EW_BLOCK": b} for u in (1, 2, 4) for b in (128, 256, 512)]
        elif "--sweep" not in sys.argv:
            continue
        else:
            points = [{"ROW_UNITS_PER_THREAD": u, "MIN_BLOCKS": m, "ROW_BARRIERS": b}
                      for u in (2, 4, 8) for m in (0, 6) for b in (1, 2)]
        args = [cp.random.standard_normal(s, dtype=cp.float32) for s in shapes]
        odd = [a[:1057] if a.ndim == 2 else a for a in args]
        plan = one_group_plan(trace(fn, *[("float32", s) for s in shapes]))
        plan_odd = one_group_plan(trace(fn, *[("float32", a.shape) for a in odd]))
        ref = [compile_plan(plan)(args), compile_plan(plan_odd)(odd)]
        for point in points:
            defaults = {k: getattr(rc, k) for k in point}
            for k, v in point.items():
                setattr(rc, k, v)
            prog = compile_plan(plan)
            outs = prog(args)
            same = all(bool(cp.array_equal(o, r, equal_nan=True)) for o, r in zip(outs, ref[0]))
            same = same and all(bool(cp.array_equal(o, r, equal_nan=True))
                                for o, r in zip(compile_plan(plan_odd)(odd), ref[1]))
            nbytes = sum(a.nbytes for a in args) + sum(o.nbytes for o in outs)
            t = bench(lambda: prog(args))
            out.append({"case": name, "knob": ",".join(point), "value": ",".join(map(str, point.values())),
                        "ms": t * 1e3, "frac_copy": nbytes / t / copy_bw, "same_as_default": same})
            print(json.dumps(out[-1]), flush=True)
            for k, v in defaults.items():
                setattr(rc, k, v)
        del args, outs, odd, ref
        cp.get_default_memory_pool().free_all_blocks()
    return out


def host_overhead():
    """Host time of one cached call on a 1024-element input: kfuse program vs CuPy ElementwiseKernel."""
    x = cp.random.standard_normal(1024, dtype=cp.float32)
    prog = compile_plan(one_group_plan(trace(lambda x: x * 2.0 + 1.0, ("float32", (1024,)))))
    ek = cp.ElementwiseKernel("float32 x", "float32 y", "y = x * 2.0f + 1.0f", "kf_ref")
    res = {}
    import kfuse
    jf = kfuse.jit(lambda x: x * 2.0 + 1.0)
    for name, f in (("kfuse_program_us", lambda: prog([x])), ("kfuse_jit_us", lambda: jf(x)),
                    ("cupy_elementwise_us", lambda: ek(x))):
        for _ in range(50):
            f()
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(2000):
            f()
        res[name] = (time.perf_counter() - t0) / 2000 * 1e6
        cp.cuda.Device().synchronize()
    return res


def main():
    use_torch = "--no-torch" not in sys.argv
    props = device.device_properties()
    out_dir = os.environ.get("OUT", ".")
    src = cp.random.standard_normal(256 << 20, dtype=cp.float32)   # 1 GiB
    dst = cp.empty_like(src)
    t_copy = bench(lambda: cp.copyto(dst, src))
    copy_bw = 2 * src.nbytes / t_copy
    del src, dst
    rows = []
    for name, (fn, shapes) in CASES.items():
        args = [cp.random.standard_normal(s, dtype=cp.float32) for s in shapes]
        if fn is p6:
            args[3] = cp.abs(args[3])
        t0 = time.perf_counter()
        dname = "h200" if "H200" in props["name"] else "h100" if "H100" in props["name"] else None
        plan, how = plan_for(fn, *[("float32", s) for s in shapes], device=dname)
        prog = compile_plan(plan)
        outs = prog(args)
        cp.cuda.Device().synchronize()
        t_compile = time.perf_counter() - t0
        nbytes = sum(a.nbytes for a in args) + sum(o.nbytes for o in outs)
        # correctness on a slice against NumPy float64
        ref = fn(*[cp.asnumpy(a).astype(np.float64) for a in args])
        ref = ref if isinstance(ref, tuple) else (ref,)
        err = max(float(np.linalg.norm(cp.asnumpy(o).astype(np.float64) - r) / np.linalg.norm(r))
                  for o, r in zip(outs, ref))
        t_k = bench(lambda: prog(args))
        row = {"plan": how, "kernels": len(plan.groups), "case": name, "kfuse_ms": t_k * 1e3, "kfuse_TBps": nbytes / t_k / 1e12,
               "kfuse_frac_copy": nbytes / t_k / copy_bw, "rel_err": err, "compile_s": t_compile,
               "variant": str(prog.launchers[0]._variants and next(iter(prog.launchers[0]._variants.values()))[0].variant)}
        if use_torch:
            try:
                import torch
                targs = [torch.from_dlpack(a) for a in args]
                tfn = {p1: lambda x, w, b: _t_p1(torch, x, w, b), p2: lambda x: torch.softmax(x, -1),
                       p3: lambda x, g, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), g, b, 1e-5),
                       p4: lambda x: x / torch.sqrt((x * x).sum(-1, keepdim=True) + 1e-12),
                       p6: lambda p, g, m, v: _t_p6(torch, p, g, m, v)}[fn]
                cf = torch.compile(tfn)
                t_tc = bench(lambda: cf(*targs))
                row.update(torch_compile_ms=t_tc * 1e3, torch_compile_frac_copy=nbytes / t_tc / copy_bw,
                           kfuse_speedup_vs_torch_compile=t_tc / t_k)
            except Exception as e:  # noqa: BLE001
                row["torch_compile_error"] = f"{type(e).__name__}: {e}"[:200]
        rows.append(row)
        print(json.dumps(row), flush=True)
        del args, outs
        cp.get_default_memory_pool().free_all_blocks()
    sweep = launch_sweep(copy_bw) if {"--sweep", "--sweep-ew"} & set(sys.argv) else []
    ho = host_overhead()
    print(json.dumps(ho))
    meta = {"sweep": sweep, "host_overhead": ho, "gpu": props["name"], "arch": props["arch"], "sm_count": props["sm_count"],
            "copy_TBps": copy_bw / 1e12, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "driver": cp.cuda.runtime.driverGetVersion(), "cupy": cp.__version__}
    with open(os.path.join(out_dir, "gpu_quick.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    lines = [f"# kfuse CUDA quick bench: {meta['gpu']} ({meta['arch']}), {meta['date']}",
             f"device-to-device copy: {meta['copy_TBps']:.2f} TB/s; host time of a cached call on 1024 "
             f"elements: kfuse.jit {ho['kfuse_jit_us']:.1f} us (program alone {ho['kfuse_program_us']:.1f} us), CuPy ElementwiseKernel {ho['cupy_elementwise_us']:.1f} us", "",
             "| case | kfuse ms | kfuse % copy | torch.compile ms | tc % copy | kfuse/tc speedup | rel err |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['kfuse_ms']:.3f} | {100 * r['kfuse_frac_copy']:.1f} | "
                     f"{r.get('torch_compile_ms', float('nan')):.3f} | {100 * r.get('torch_compile_frac_copy', float('nan')):.1f} | "
                     f"{r.get('kfuse_speedup_vs_torch_compile', float('nan')):.2f} | {r['rel_err']:.1e} |")
    if sweep:
        lines += ["", "launch-shape sweep (fraction of copy):", ""]
        lines += [f"- {r['case'].split()[0]} {r['knob']}={r['value']}: {r['ms']:.3f} ms, "
                  f"{100 * r['frac_copy']:.1f}%" + ("" if r.get("same_as_default", True) else " **DIFFERS**")
                  for r in sweep]
    text = "\n".join(lines)
    with open(os.path.join(out_dir, "gpu_quick.md"), "w") as f:
        f.write(text + "\n")
    print(text)


def _t_p1(torch, x, w, b):
    y = x * w + b
    return 0.5 * y * (1 + torch.tanh(0.7978845608 * (y + 0.044715 * y ** 3)))


def _t_p6(torch, p, g, m, v):
    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
    m2 = b1 * m + (1 - b1) * g
    v2 = b2 * v + (1 - b2) * g * g
    return p - lr * (m2 / (1 - b1)) / (torch.sqrt(v2 / (1 - b2)) + eps), m2, v2


if __name__ == "__main__":
    main()
