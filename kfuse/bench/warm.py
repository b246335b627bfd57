"""Warm disk load, measured in a fresh process: ``python -m kfuse.bench.warm --device cpu
--backend cpu --cases P1,P3``. The parent has already compiled these cases into
``$KFUSE_CACHE_DIR``; here each case's first call (trace + plan + load from the disk cache + run)
and its hot call time are measured, after one unrelated tiny function has paid the process's
one-time start-up (reported as ``init_s``). Prints one JSON line:
``{"import_s": ..., "init_s": ..., "cases": {label: {"first_s": ..., "hot_ms": ...}}}``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kfuse.bench.warm")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--cases", required=True)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    import numpy as np

    import kfuse
    from .workloads import public_cases
    import_s = time.perf_counter() - t0
    from .peers import warm_up_kfuse
    cp = None
    if args.device == "gpu":
        import cupy as cp
    init_s = warm_up_kfuse(kfuse, args.backend, cp)
    want = set(args.cases.split(","))
    cases = [c for c in public_cases(args.device, "quick" if args.quick else "full") if c.label in want]
    res: dict = {"import_s": import_s, "init_s": init_s, "cases": {}}
    for case in cases:
        try:
            host = case.make_inputs(0)
            xs = [cp.asarray(a) for a in host] if cp is not None else host
            fn = kfuse.jit(case.body(np), backend=args.backend)

            def call():
                out = fn(*xs)
                if cp is not None:
                    cp.cuda.get_current_stream().synchronize()
                return out
            t0 = time.perf_counter()
            call()
            first = time.perf_counter() - t0
            hot = []
            for _ in range(3):
                t0 = time.perf_counter()
                call()
                hot.append((time.perf_counter() - t0) * 1e3)
            res["cases"][case.label] = {"first_s": first, "hot_ms": statistics.median(hot),
                                        "compiles": getattr(fn, "compile_count", None)}
        except Exception as e:
            res["cases"][case.label] = {"error": f"{type(e).__name__}: {e}".splitlines()[0]}
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
