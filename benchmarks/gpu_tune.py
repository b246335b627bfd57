"""GPU autotuning benchmark (issue 8): per public workload (P1-P6, CUDA C backend), the program's
time under the heuristic launch shapes and under the tuned ones, the chosen configs, and the
tuning wall time. Writes gpu_tune.json and gpu_tune.md to --out (default $OUT, else .).

Usage: PYTHONPATH=. python3 benchmarks/gpu_tune.py [--out DIR] [--budget 120] [--cases P1,P2]
       [--size full|quick] [--top-k 8]

``--budget`` is the total tuning time in seconds, shared out between the cases still to run and,
inside a case, between its kernels (``tune_program``'s per-kernel budget). Program times: 10 calls
queued between two CUDA events, median of 7 rounds, heuristic and tuned rounds interleaved (the
tile is switched with ``CudaProgram.set_tile``), so clock drift hits both alike. Kernel times are
the tuner's own measurements (median of 10 single launches, inputs rotated through L2-sized sets).
P5 (GEMM + bias + GELU): the product is cuBLAS's; only the epilogue kernel is tuned.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402


def program_time(prog, arrays, rounds_out: list, inner: int = 10) -> None:
    import cupy as cp
    s = cp.cuda.get_current_stream()
    a, b = cp.cuda.Event(), cp.cuda.Event()
    a.record(s)
    for _ in range(inner):
        prog(arrays)
    b.record(s)
    b.synchronize()
    rounds_out.append(cp.cuda.get_elapsed_time(a, b) / 1e3 / inner)


def rel_err(out, ref) -> float:
    import cupy as cp
    worst = 0.0
    for o, r in zip(out, ref):
        o64, r64 = o.astype(cp.float64), r.astype(cp.float64)
        den = float(cp.linalg.norm(r64.ravel()))
        num = float(cp.linalg.norm((o64 - r64).ravel()))
        worst = max(worst, num / den if den else num)
    return worst


def run_case(case, budget: float, top_k: int, device_name: str, rounds: int) -> dict:
    import cupy as cp

    from kfuse.autotune import tuner
    from kfuse.autotune.gpu_targets import apply_gpu
    from kfuse.fusion import pipeline
    from kfuse.ir.specs import spec_of_value
    from kfuse.runtime.cuda import compile_plan
    from kfuse.trace import trace_function

    import inspect
    host = case.make_inputs(0)
    fn = case.body(np)
    names = list(inspect.signature(fn).parameters)
    graph = trace_function(fn, {n: spec_of_value(a) for n, a in zip(names, host)}, fn.__name__)
    plan = pipeline.plan(pipeline.optimize(graph), device_name)
    prog = compile_plan(plan)
    arrays = [cp.asarray(a) for a in host]
    del host
    ref = [o.copy() for o in prog(arrays)]
    for _ in range(3):
        prog(arrays)
    cp.cuda.get_current_stream().synchronize()

    reports: list = []
    n = max(1, len(plan.groups))
    t0 = time.perf_counter()
    tuner.tune_program(plan, arrays, "cuda", "on", None, program=prog, budget=budget / n,
                       total_budget=budget, top_k=top_k, reports=reports, progress=False,
                       process_budget=tuner.Budget())
    tune_s = time.perf_counter() - t0
    chosen = {r.group_id: r.config for r in reports if r.source in tuner.CHOSEN}

    heur_t, tuned_t = [], []
    for _ in range(rounds):                   # interleaved: heuristic, then tuned
        for tiles, times in (({gid: None for gid in chosen}, heur_t), (chosen, tuned_t)):
            apply_gpu(prog, tiles)
            prog(arrays)                      # re-picks the launch shapes (host work) untimed
            program_time(prog, arrays, times)
    out = prog(arrays)
    err = rel_err(out, ref)

    kernels = []
    for r in reports:
        ms = {m.config: m for m in r.measurements}
        h, b = ms.get(r.heuristic), ms.get(r.config)
        kernels.append({
            "group": r.group_id, "kind": r.kind, "source": r.source, "note": r.note,
            "heuristic": r.heuristic.as_dict(), "chosen": r.config.as_dict(),
            "heuristic_kernel_s": h.seconds if h is not None and h.ok else None,
            "chosen_kernel_s": b.seconds if b is not None and b.ok else None,
            "measured": len(r.measurements),
            "failed": [[m.config.name, m.error] for m in r.measurements if not m.ok],
            "pruned": len(r.dropped), "tuning_s": round(r.seconds, 3), "stopped_early": r.stopped_early,
        })
    h_med, t_med = statistics.median(heur_t), statistics.median(tuned_t)
    return {"case": str(case), "label": case.label, "groups": len(plan.groups),
            "heuristic_s": h_med, "tuned_s": t_med, "speedup": h_med / t_med if t_med else None,
            "heuristic_rounds_s": heur_t, "tuned_rounds_s": tuned_t,
            "tuning_wall_s": round(tune_s, 3), "rel_err_tuned_vs_heuristic": err,
            "nbytes": case.nbytes, "tuned_gbs": case.nbytes / t_med / 1e9 if t_med else None,
            "kernels": kernels}


def markdown(res: dict) -> str:
    lines = [f"# GPU autotuning (CUDA C backend) — {res['device']}", "",
             f"{res['date']}; total tuning budget {res['budget_s']} s, top-k {res['top_k']}; "
             f"program time = 10 queued calls between CUDA events, median of {res['rounds']} "
             "interleaved rounds.", "",
             "| case | heuristic ms | tuned ms | speedup | tuned GB/s | tuning s | chosen (per kernel) | rel err |",
             "|---|---|---|---|---|---|---|---|"]
    for c in res["cases"]:
        if "error" in c:
            lines.append(f"| {c['case']} | error: {c['error']} | | | | | | |")
            continue
        chosen = "; ".join(f"g{k['group']} {k['chosen']['kind']}:{fmt_kparams(k['chosen'])}"
                           + ("" if k["source"] == "tuned" else f" ({k['source']})") for k in c["kernels"])
        lines.append(f"| {c['case']} | {c['heuristic_s'] * 1e3:.3f} | {c['tuned_s'] * 1e3:.3f} | "
                     f"{c['speedup']:.3f}x | {c['tuned_gbs']:.0f} | {c['tuning_wall_s']:.1f} | {chosen} | "
                     f"{c['rel_err_tuned_vs_heuristic']:.1e} |")
    lines += ["", "Per kernel (the tuner's measurements, single launches):", "",
              "| case | kernel | heuristic | heuristic us | chosen | chosen us | measured | failed |",
              "|---|---|---|---|---|---|---|---|"]
    for c in res["cases"]:
        for k in c.get("kernels", []):
            hs, cs = k["heuristic_kernel_s"], k["chosen_kernel_s"]
            lines.append(f"| {c['label']} | g{k['group']} {k['kind']} | {fmt_kparams(k['heuristic'])} | "
                         f"{hs * 1e6 if hs else math.nan:.1f} | {fmt_kparams(k['chosen'])} | "
                         f"{cs * 1e6 if cs else math.nan:.1f} | {k['measured']} | {len(k['failed'])} |")
    return "\n".join(lines) + "\n"


def fmt_kparams(d: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(d.get("params", {}).items()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or ".")
    ap.add_argument("--budget", type=float, default=120.0, help="total tuning seconds (default 120)")
    ap.add_argument("--cases", default="P1,P2,P3,P4,P6,P5")
    ap.add_argument("--size", default="full", choices=("full", "quick"))
    ap.add_argument("--top-k", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)

    import cupy as cp

    from kfuse.bench.workloads import public_cases
    from kfuse.runtime import device as devmod

    props = devmod.device_properties()
    low = props["name"].lower()
    device_name = "h200" if "h200" in low else "h100"
    names = [s.strip() for s in args.cases.split(",") if s.strip()]
    cases = [c for name in names for c in public_cases("gpu", args.size, [name])]
    res = {"device": f"{props['name']} ({props['arch']}, {props['sm_count']} SMs)",
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "budget_s": args.budget,
           "top_k": args.top_k, "rounds": args.rounds, "cases": []}
    os.makedirs(args.out, exist_ok=True)
    t_start = time.perf_counter()
    for k, case in enumerate(cases):
        left = args.budget - (time.perf_counter() - t_start)
        share = max(2.0, left / (len(cases) - k))
        print(f"[{time.perf_counter() - t_start:6.1f} s] {case}: tuning budget {share:.1f} s", flush=True)
        try:
            r = run_case(case, share, args.top_k, device_name, args.rounds)
        except Exception as e:          # one case failing must not lose the others
            r = {"case": str(case), "label": case.label, "error": f"{type(e).__name__}: {e}"[:300]}
        res["cases"].append(r)
        cp.get_default_memory_pool().free_all_blocks()
        if "error" in r:
            print(f"    error: {r['error']}", flush=True)
        else:
            print(f"    heuristic {r['heuristic_s'] * 1e3:.3f} ms, tuned {r['tuned_s'] * 1e3:.3f} ms "
                  f"({r['speedup']:.3f}x), tuning {r['tuning_wall_s']:.1f} s, rel err "
                  f"{r['rel_err_tuned_vs_heuristic']:.1e}; chosen "
                  + "; ".join(fmt_kparams(k['chosen']) + f" [{k['source']}]" for k in r["kernels"]),
                  flush=True)
        with open(os.path.join(args.out, "gpu_tune.json"), "w") as f:
            json.dump(res, f, indent=1, default=str)
        with open(os.path.join(args.out, "gpu_tune.md"), "w") as f:
            f.write(markdown(res))
    res["total_wall_s"] = round(time.perf_counter() - t_start, 1)
    with open(os.path.join(args.out, "gpu_tune.json"), "w") as f:
        json.dump(res, f, indent=1, default=str)
    print(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
