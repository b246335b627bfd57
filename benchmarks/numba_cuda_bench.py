"""Both GPU emitters side by side: kfuse's CUDA C (NVRTC) vs kfuse's Numba-CUDA backend on P1-P4 and
P6 at GPU sizes: device time, fraction of the device-to-device copy bandwidth (measured in this same
run with CuPy), and compile time (plan -> first result, cold, per backend). Writes
numba_cuda_bench.md / .json under $OUT (or the current directory).
Usage: PYTHONPATH=. python3 benchmarks/numba_cuda_bench.py"""
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "gpu"))
import cupy as cp  # noqa: E402

from handplan import one_group_plan, trace  # noqa: E402
from kfuse.runtime import cuda as rt_cuda  # noqa: E402
from kfuse.runtime import device  # noqa: E402
from kfuse.runtime import numba_cuda as rt_numba  # noqa: E402


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
    return p - lr * (m2 / (1 - b1)) / (np.sqrt(v2 / (1 - b2)) + eps), m2, v2


N = 8192
CASES = {
    "P1 gelu(x*w+b) 8192x8192": (p1, [(N, N), (N,), (N,)]),
    "P2 softmax 16384x4096": (p2, [(16384, 4096)]),
    "P3 layernorm 16384x4096": (p3, [(16384, 4096), (4096,), (4096,)]),
    "P4 row L2 norm 16384x4096": (p4, [(16384, 4096)]),
    "P6 adam 2^26": (p6, [(1 << 26,)] * 4),
}


def make_plan(fn, shapes, dname):
    g = trace(fn, *[("float32", s) for s in shapes])
    try:
        from kfuse.fusion import pipeline
        return pipeline.plan(pipeline.optimize(g), device=dname), "planner"
    except Exception as e:  # noqa: BLE001
        return one_group_plan(g), f"hand ({type(e).__name__})"


def bench(f, reps=10, inner=10):
    for _ in range(3):
        f()
    cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(reps):
        s.record()
        for _ in range(inner):
            f()
        e.record()
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) * 1e-3 / inner)
    return float(np.median(ts))


def main():
    props = device.device_properties()
    out_dir = os.environ.get("OUT", ".")
    src = cp.random.standard_normal(256 << 20, dtype=cp.float32)   # 1 GiB
    dst = cp.empty_like(src)
    copy_bw = 2 * src.nbytes / bench(lambda: cp.copyto(dst, src))
    del src, dst
    dname = "h200" if "H200" in props["name"] else "h100" if "H100" in props["name"] else None
    rows = []
    for name, (fn, shapes) in CASES.items():
        args = [cp.random.standard_normal(s, dtype=cp.float32) for s in shapes]
        if fn is p6:
            args[3] = cp.abs(args[3])
        plan, how = make_plan(fn, shapes, dname)
        ref = fn(*[cp.asnumpy(a).astype(np.float64) for a in args])
        ref = ref if isinstance(ref, tuple) else (ref,)
        row = {"case": name, "plan": how, "kernels": len(plan.groups)}
        for tag, mod in (("cuda", rt_cuda), ("numba", rt_numba)):
            try:
                t0 = time.perf_counter()
                prog = mod.compile_plan(plan)
                outs = prog(args)
                cp.cuda.Device().synchronize()
                t_compile = time.perf_counter() - t0
                nbytes = sum(a.nbytes for a in args) + sum(o.nbytes for o in outs)
                err = max(float(np.linalg.norm(cp.asnumpy(o).astype(np.float64) - r) / np.linalg.norm(r))
                          for o, r in zip(outs, ref))
                t = bench(lambda: prog(args))
                variants = [str(getattr(v[0], "variant", v[0])) for l in prog.launchers
                            for v in list(l._variants.values())[:1]]
                row.update({f"{tag}_ms": t * 1e3, f"{tag}_frac_copy": nbytes / t / copy_bw,
                            f"{tag}_compile_s": t_compile, f"{tag}_rel_err": err, f"{tag}_variants": variants})
                del outs, prog
            except Exception as e:  # noqa: BLE001
                row[f"{tag}_error"] = f"{type(e).__name__}: {e}"[:300]
        rows.append(row)
        print(json.dumps(row), flush=True)
        del args
        cp.get_default_memory_pool().free_all_blocks()
    meta = {"gpu": props["name"], "arch": props["arch"], "copy_TBps": copy_bw / 1e12,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "driver": cp.cuda.runtime.driverGetVersion(), "cupy": cp.__version__, "numpy": np.__version__}
    try:
        from importlib.metadata import version
        meta["numba_cuda"] = version("numba-cuda")
    except Exception:  # noqa: BLE001
        pass
    with open(os.path.join(out_dir, "numba_cuda_bench.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    nan = float("nan")
    lines = [f"# kfuse CUDA C vs Numba-CUDA: {meta['gpu']} ({meta['arch']}), {meta['date']}",
             f"device-to-device copy (CuPy, this run): {meta['copy_TBps']:.2f} TB/s; compile = plan -> first "
             "result, cold in this process", "",
             "| case | kernels | cuda ms | cuda % copy | cuda compile s | numba ms | numba % copy | numba compile s | numba rel err |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['kernels']} | {r.get('cuda_ms', nan):.3f} | {100 * r.get('cuda_frac_copy', nan):.1f} | "
                     f"{r.get('cuda_compile_s', nan):.2f} | {r.get('numba_ms', nan):.3f} | {100 * r.get('numba_frac_copy', nan):.1f} | "
                     f"{r.get('numba_compile_s', nan):.2f} | {r.get('numba_rel_err', nan):.1e} |")
    for r in rows:
        for k in ("cuda_error", "numba_error"):
            if k in r:
                lines.append(f"\n{r['case']} {k}: {r[k]}")
    text = "\n".join(lines)
    with open(os.path.join(out_dir, "numba_cuda_bench.md"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
