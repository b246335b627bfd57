"""Kernel cache benchmark (issue 7): cold compile vs warm disk load vs hot call, per backend.

For each backend (cpu; cuda and numba-cuda where a GPU and the backend are there) and each case
(P1 gelu, P3 layernorm of kfuse/bench/workloads.py, quick sizes unless --full):

  cold compile  first call minus a hot call, in a NEW process with a FRESH cache dir
  warm load     the same in another new process with the SAME cache dir (filled by the cold one)
  hot call      median of 3 calls in the warm process (synchronised on the GPU)

Both processes are ``python -m kfuse.bench.warm`` (the public suite's warm-load helper,
``kfuse.bench.suite.first_call_in_new_process``): each first pays its one-time start-up on an
unrelated tiny function, so cold and warm differ only in what the disk cache saves. The CUDA
driver's own JIT cache (numba-cuda loads PTX) is pointed at a fresh folder per cold run too
(CUDA_CACHE_PATH), shared with the warm run as it would be on a user's machine.

usage: python3 benchmarks/cache_bench.py [--out DIR] [--backends cpu,cuda,numba-cuda]
                                         [--cases P1,P3] [--repeats N] [--full]
Prints a markdown table; writes cache_bench.json and cache_bench.md under --out.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from kfuse.bench import suite  # noqa: E402
from kfuse.bench.workloads import public_cases  # noqa: E402

LIMIT = 0.20     # issue 7: a warm disk load costs under 20% of a cold compile


def available(backend: str) -> str | None:
    """None when ``backend`` can run here, else why not."""
    if backend == "cpu":
        try:
            import numba  # noqa: F401
        except Exception as e:
            return f"numba: {type(e).__name__}: {e}"
        return None
    from kfuse.runtime import device
    if not device.has_gpu():
        return "no CUDA GPU / CuPy"
    if backend == "numba-cuda":
        from kfuse.codegen import numba_cuda as nc
        ok, why = nc.numba_cuda_available()
        return None if ok else (why.splitlines() or ["numba-cuda unavailable"])[0]
    return None


def _entries(cache_dir: str) -> int:
    try:
        return len(os.listdir(os.path.join(cache_dir, "kernels")))
    except OSError:
        return 0


def one_round(backend: str, labels: list[str], quick: bool, timeout: float) -> dict:
    """A cold process on a fresh cache dir, then a warm process on the same dir."""
    device = "cpu" if backend == "cpu" else "gpu"
    tmp = tempfile.mkdtemp(prefix="kfuse-cache-bench-")
    try:
        cache = os.path.join(tmp, "kc")
        env = dict(os.environ, KFUSE_CACHE_DIR=cache, CUDA_CACHE_PATH=os.path.join(tmp, "nv"),
                   PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
        env.pop("KFUSE_CACHE", None)              # the cache must be on
        t = time.perf_counter()
        cold = suite.first_call_in_new_process(device, backend, labels, quick=quick, env=env,
                                               timeout=timeout)
        cold["wall_s"] = time.perf_counter() - t
        cold["entries_after"] = _entries(cache)
        t = time.perf_counter()
        warm = suite.first_call_in_new_process(device, backend, labels, quick=quick, env=env,
                                               timeout=timeout)
        warm["wall_s"] = time.perf_counter() - t
        warm["entries_after"] = _entries(cache)
        return {"cold": cold, "warm": warm}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def summarise(backend: str, label: str, shapes, rounds: list[dict]) -> dict:
    row: dict = {"backend": backend, "case": label, "shapes": shapes, "repeats": len(rounds)}
    cold_s, warm_s, hot_ms, errors = [], [], [], []
    for r in rounds:
        c, w = r["cold"]["cases"].get(label, {}), r["warm"]["cases"].get(label, {})
        if "first_s" not in c or "first_s" not in w:
            errors.append(c.get("error") or w.get("error") or "missing")
            continue
        cold_s.append(max(0.0, c["first_s"] - c["hot_ms"] * 1e-3))
        warm_s.append(max(0.0, w["first_s"] - w["hot_ms"] * 1e-3))
        hot_ms.append(w["hot_ms"])
    if errors:
        row["error"] = errors[0]
    if cold_s:
        row.update(cold_compile_s=statistics.median(cold_s), warm_load_s=statistics.median(warm_s),
                   hot_call_ms=statistics.median(hot_ms), cold_all_s=cold_s, warm_all_s=warm_s)
        row["warm_over_cold"] = row["warm_load_s"] / row["cold_compile_s"] if row["cold_compile_s"] else None
        row["under_limit"] = row["warm_over_cold"] is not None and row["warm_over_cold"] < LIMIT
    # process-level context: start-up paid before the timed first call, and whether the warm
    # process wrote new entries (it should not: everything loads from disk)
    row["cold_import_s"] = statistics.median(r["cold"]["import_s"] for r in rounds)
    row["cold_init_s"] = statistics.median(r["cold"]["init_s"] for r in rounds)
    row["warm_import_s"] = statistics.median(r["warm"]["import_s"] for r in rounds)
    row["warm_init_s"] = statistics.median(r["warm"]["init_s"] for r in rounds)
    row["warm_new_entries"] = max(r["warm"]["entries_after"] - r["cold"]["entries_after"] for r in rounds)
    return row


def _ms(s) -> str:
    if s is None:
        return "–"
    return f"{s * 1e3:.1f} ms" if s < 10 else f"{s:.1f} s"


def _us(ms) -> str:
    return f"{ms * 1e3:.0f} µs" if ms < 1 else f"{ms:.2f} ms"


def markdown(res: dict) -> str:
    m = res["meta"]
    out = ["# kfuse kernel cache: cold compile vs warm disk load vs hot call",
           "",
           f"{m['date']}; CPU: {m['cpu']}; GPU: {m.get('gpu') or 'none'}; sizes: {m['size']}; "
           f"repeats: {m['repeats']} (medians)",
           "",
           "cold compile: first call minus a hot call, new process, fresh cache dir. warm load: the "
           "same in a second new process on that cache dir. Both after the process's one-time "
           "start-up (init, on a tiny unrelated function). hot call: median of 3 synchronised calls. "
           f"Issue 7's bar: warm/cold < {LIMIT:.0%}.",
           "",
           "| backend | case | shapes | cold compile | warm load | hot call | warm/cold | < 20% | "
           "init cold / warm | new entries (warm) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        shapes = " ".join("x".join(map(str, s)) for s in r["shapes"])
        if "cold_compile_s" not in r:
            out.append(f"| {r['backend']} | {r['case']} | {shapes} | error: {r.get('error')} "
                       "| | | | | | |")
            continue
        ratio = r["warm_over_cold"]
        out.append(f"| {r['backend']} | {r['case']} | {shapes} | {_ms(r['cold_compile_s'])} | "
                   f"{_ms(r['warm_load_s'])} | {_us(r['hot_call_ms'])} | "
                   f"{'–' if ratio is None else f'{ratio:.1%}'} | {'yes' if r['under_limit'] else 'NO'} | "
                   f"{_ms(r['cold_init_s'])} / {_ms(r['warm_init_s'])} | {r['warm_new_entries']} |")
    for b, why in res["skipped"].items():
        out.append(f"\n- {b}: skipped ({why})")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="folder for cache_bench.json / cache_bench.md")
    ap.add_argument("--backends", default="cpu,cuda,numba-cuda")
    ap.add_argument("--cases", default="P1,P3")
    ap.add_argument("--repeats", type=int, default=1, help="cold+warm pairs per backend (medians)")
    ap.add_argument("--full", action="store_true", help="the suite's full sizes (default: quick)")
    ap.add_argument("--timeout", type=float, default=240, help="seconds per process")
    ap.add_argument("--check", action="store_true", help="exit 1 when a row misses the 20%% bar")
    args = ap.parse_args(argv)

    labels = [c.strip() for c in args.cases.split(",") if c.strip()]
    quick = not args.full
    rows, skipped, raw = [], {}, {}
    gpu = None
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        why = available(backend)
        if why:
            skipped[backend] = why
            print(f"[cache_bench] {backend}: skipped ({why})", flush=True)
            continue
        device = "cpu" if backend == "cpu" else "gpu"
        if device == "gpu" and gpu is None:
            gpu = suite.gpu_info().get("name")
        cases = [c for c in public_cases(device, "quick" if quick else "full") if c.label in labels]
        rounds = []
        for i in range(max(1, args.repeats)):
            try:
                rounds.append(one_round(backend, [c.label for c in cases], quick, args.timeout))
            except Exception as e:
                skipped[backend] = f"{type(e).__name__}: {e}"
                break
        raw[backend] = rounds
        if not rounds:
            print(f"[cache_bench] {backend}: failed ({skipped[backend]})", flush=True)
            continue
        for c in cases:
            rows.append(summarise(backend, c.label, [list(s) for s in c.shapes], rounds))
            print(f"[cache_bench] {json.dumps(rows[-1])}", flush=True)

    res = {"schema": "kfuse-cache-bench/1",
           "meta": {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    "cpu": suite.cpu_info().get("name"), "gpu": gpu,
                    "size": "quick" if quick else "full", "repeats": max(1, args.repeats),
                    "versions": suite.versions(), "limit": LIMIT, "argv": sys.argv},
           "rows": rows, "skipped": skipped, "raw": raw}
    md = markdown(res)
    print(md)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "cache_bench.json"), "w") as f:
            json.dump(res, f, indent=1)
        with open(os.path.join(args.out, "cache_bench.md"), "w") as f:
            f.write(md)
    if args.check and any(not r.get("under_limit") for r in rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
