"""Runs the public suite: every case against every available peer, with ceilings, correctness
against a float64 NumPy reference, compile / warm-load / dispatch costs and the planner's
predicted time for kfuse. Returns one plain dict (what ``report.py`` writes as JSON, markdown and
the roofline plot). Nothing here raises because one peer fails: the row records the error.
"""
from __future__ import annotations

import dataclasses
import datetime
import functools
import gc
import json
import os
import platform
import subprocess
import sys
import time
from typing import Any, Callable

import numpy as np

from ..fusion.cost import known_device
from . import ceilings as _ceil
from . import timing
from .peers import KfusePeer, Peer, PeerUnavailable, all_peers, kfuse_predicted_ms, select
from .workloads import REL_TOL, Case, as_tuple, public_cases, relative_error, tiny_case


def _err(e: BaseException) -> str:
    s = f"{type(e).__name__}: {e}".strip().splitlines()
    return s[0][:300] if s else type(e).__name__


def over_budget(peer, elapsed: float, budget_s) -> bool:
    """Whether a run ``elapsed`` seconds in skips ``peer`` (a slow compiler past 70% of it)."""
    return budget_s is not None and (elapsed > budget_s or (peer.slow_compile and elapsed > 0.7 * budget_s))


def start_run(device: str, candidates, n_cases: int, progress: bool):
    """(peer availability, the peers that set up, the device's info, the planner's device name, the
    progress bar, at "ceilings") at the start of a run of ``n_cases`` cases."""
    peer_info, live = setup_peers(candidates)
    dev_info = cpu_info() if device == "cpu" else {**gpu_info(), "host_cpu": cpu_info()}
    plan_dev = planner_device_name(device, dev_info)
    prog = _Progress(n_cases * max(1, len(live)) + 1, progress)
    prog.status("ceilings")
    return peer_info, live, dev_info, plan_dev, prog


def prepare_peers(live, label: str, workload: str, prog, t_start: float, budget_s,
                  prepare: Callable) -> tuple[list, list[dict]]:
    """(the peers ready to time, one result row per live peer) for case ``label``: a peer past the
    time budget is skipped (its row says so), every other one goes through ``prepare(peer, row=row)``,
    which builds and checks it and returns its ``_Ready`` or None."""
    ready, rows = [], []
    for peer in live:
        prog.status(f"{label}: {peer.name}")
        row = {"case": label, "workload": workload, "impl": peer.name, "ok": False}
        if over_budget(peer, time.perf_counter() - t_start, budget_s):
            row["error"] = f"skipped: time budget ({budget_s:.0f} s) spent"
        else:
            r = prepare(peer, row=row)
            if r is not None:
                ready.append(r)
        rows.append(row)
        prog.step()
    prog.status(f"{label}: timing {len(ready)} peers, interleaved")
    return ready, rows


def setup_peers(candidates) -> tuple[dict, list]:
    """``({peer name: availability, version or the reason}, the peers that set up)``."""
    info: dict[str, dict] = {}
    live: list[Peer] = []
    for p in candidates:
        try:
            p.setup()
            info[p.name] = {"available": True, "version": p.version()}
            if getattr(p, "warmup_s", None) is not None:
                info[p.name]["process_warmup_s"] = p.warmup_s
            live.append(p)
        except PeerUnavailable as e:
            info[p.name] = {"available": False, "reason": str(e)}
        except Exception as e:
            info[p.name] = {"available": False, "reason": _err(e)}
    return info, live


# ---- device and versions -----------------------------------------------------------------------
def gpu_present() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        pass
    try:
        import torch
        return bool(torch.cuda.is_available())
    except Exception:
        return False


def _pkg_version(name: str) -> str | None:
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return None


def versions() -> dict:
    v = {"python": platform.python_version()}
    for name in ("kfuse", "numpy", "numba", "llvmlite", "numba-cuda", "cupy-cuda13x", "cupy-cuda12x",
                 "cupy", "torch", "triton", "jax", "jaxlib", "jax-cuda13-plugin", "cuda-bindings",
                 "nvidia-cuda-nvrtc", "matplotlib"):
        ver = _pkg_version(name)
        if ver:
            v[name] = ver
    return v


def cpu_info() -> dict:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    mem = f"{int(line.split()[1]) / 2**20:.0f} GiB"
                    break
    except OSError:
        pass
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"name": model, "cores": threads, "memory": mem, "platform": platform.platform()}


def gpu_info() -> dict:
    info: dict[str, Any] = {}
    try:
        import cupy
        rt = cupy.cuda.runtime
        p = rt.getDeviceProperties(0)
        name = p["name"]
        info.update(name=name.decode() if isinstance(name, bytes) else str(name),
                    sms=p.get("multiProcessorCount"), l2_bytes=p.get("l2CacheSize"),
                    memory_bytes=p.get("totalGlobalMem"), cc=f"{p.get('major')}.{p.get('minor')}",
                    cuda_driver_api=rt.driverGetVersion(), cuda_runtime=rt.runtimeGetVersion())
    except Exception:
        try:
            import torch
            p = torch.cuda.get_device_properties(0)
            info.update(name=p.name, sms=p.multi_processor_count, memory_bytes=p.total_memory,
                        cc=f"{p.major}.{p.minor}", cuda_runtime=torch.version.cuda)
        except Exception as e:
            info["error"] = _err(e)
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
        if r.returncode == 0 and r.stdout.strip():
            info["driver"] = r.stdout.strip().splitlines()[0].split(",")[-1].strip()
    except Exception:
        pass
    return info


def planner_device_name(device: str, info: dict) -> str | None:
    if device == "cpu":
        return "cpu"
    spec = known_device(str(info.get("name", "")))
    return spec.name if spec else "h100"


# ---- the run -----------------------------------------------------------------------------------
class _Progress:
    def __init__(self, total: int, enabled: bool):
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, desc="kfuse bench", unit="run", dynamic_ncols=True, mininterval=1.0,
                                file=sys.stderr)
            except ImportError:
                pass
        self.enabled = enabled

    def status(self, s: str):
        if self.bar is not None:
            self.bar.set_postfix_str(s[:60])
        elif self.enabled:
            print(f"[kfuse bench] {s}", file=sys.stderr, flush=True)

    def step(self, n: int = 1):
        if self.bar is not None:
            self.bar.update(n)

    def log(self, s: str):
        if self.bar is not None:
            self.bar.write(s, file=sys.stderr)
        elif self.enabled:
            print(s, file=sys.stderr, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


@dataclasses.dataclass
class _SuiteRun:
    """The settings one suite run times every case with, and where it reports progress."""
    device: str
    quick: bool
    budget_s: float | None
    copies: int
    seed: int
    plan_dev: str | None
    dispatch_set: set | None
    prog: Any
    log: Callable[[str], None] | None
    t_start: float


def run_suite(device: str = "cpu", *, quick: bool = False, peers: str | None = None,
              workloads: list[str] | None = None, budget_s: float | None = None,
              dispatch: str = "P1,P3", warm: bool = True, tune: bool = False,
              progress: bool = True, copies: int = 2, seed: int = 0,
              log: Callable[[str], None] | None = None) -> dict:
    """Run the public suite on ``device`` ("cpu"/"gpu"); returns the results dict."""
    t_start = time.perf_counter()
    load_start = _loadavg()
    size = "quick" if quick else "full"
    cases = public_cases(device, size, workloads)
    candidates = select(all_peers(device, tune=tune), peers)
    peer_info, live, dev_info, plan_dev, prog = start_run(device, candidates, len(cases), progress)
    ceil = _ceilings(device, cases, quick)
    prog.step()

    dispatch_set = None if dispatch == "all" else {w.strip().upper() for w in (dispatch or "").split(",") if w.strip()}
    run = _SuiteRun(device, quick, budget_s, copies, seed, plan_dev, dispatch_set, prog, log, t_start)
    rows: list[dict] = []
    case_meta: list[dict] = []
    for case in cases:
        meta, case_rows = _run_case(run, case, live, ceil)
        case_meta.append(meta)
        rows += case_rows
        gc.collect()
    prog.close()

    if warm:
        for peer in live:
            if isinstance(peer, KfusePeer) and peer.autotune is None:
                _warm_load(peer, device, quick, workloads, rows)

    ratios = _ratios(rows)
    return {
        "schema": "kfuse-bench/1",
        "meta": {"device": device, "device_info": dev_info, "planner_device": plan_dev,
                 "versions": versions(), "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                 "suite": "public", "size": size, "argv": sys.argv, "wall_s": time.perf_counter() - t_start,
                 "kfuse_cache_dir": os.environ.get("KFUSE_CACHE_DIR"), "budget_s": budget_s,
                 "loadavg_start": load_start, "loadavg_end": _loadavg(),
                 "rel_tol": REL_TOL},
        "ceilings": ceil,
        "peers": peer_info,
        "cases": case_meta,
        "rows": rows,
        "ratios": ratios,
    }


def _ceilings(device: str, cases, quick: bool) -> dict:
    """The device's ceilings (bandwidth, peak FLOP/s at the suite's GEMM shapes), or the error."""
    try:
        if device == "cpu":
            gemm = [(c.dims["M"], c.dims["N"], c.dims["K"]) for c in cases if c.bound == "compute"]
            return _ceil.cpu_ceilings(quick, gemm)
        gemm = [(c.dims["M"], c.dims["N"], c.dims["K"], c.dtype) for c in cases if c.bound == "compute"]
        return _ceil.gpu_ceilings(quick, gemm)
    except Exception as e:
        return {"errors": {"all": _err(e)}}


def _run_case(run: _SuiteRun, case: Case, live: list, ceil: dict) -> tuple[dict, list[dict]]:
    """One case: its float64 reference, every live peer prepared, timed in interleaved rounds
    and finished; ``(the case's metadata, its rows)``."""
    prog = run.prog
    c_val, c_unit = _ceil.ceiling_for(ceil, case)
    ref_rows = case.reference_rows()
    prog.status(f"{case.label}: inputs + float64 reference")
    host = case.make_inputs(run.seed)
    try:
        ref = [np.asarray(r) for r in as_tuple(case.body(np)(*case.reference_inputs(host, ref_rows)))]
    except Exception as e:
        ref, ref_err = None, _err(e)
    else:
        ref_err = None
    meta = {"label": case.label, "workload": case.workload.name, "title": case.workload.title,
            "dtype": case.dtype, "shapes": [list(s) for s in case.shapes],
            "flops": case.flops, "bytes": case.nbytes, "intensity": case.intensity,
            "bound": case.bound, "ceiling": c_val, "ceiling_unit": c_unit,
            "reference_rows": ref_rows, "reference_error": ref_err}
    want_dispatch = run.dispatch_set is None or case.workload.name in run.dispatch_set
    ready, case_rows = prepare_peers(
        live, case.label, case.workload.name, prog, run.t_start, run.budget_s,
        functools.partial(_prepare, case=case, host=host, ref=ref, ref_rows=ref_rows, copies=run.copies))
    _time_interleaved(ready, quick=run.quick, device=run.device)
    for r in ready:
        _finish(r, case, dispatch=want_dispatch, plan_dev=run.plan_dev, device=run.device)
    for row in case_rows:
        _derive(row, case, c_val, c_unit)
        if not row["ok"] and run.log is None:
            prog.log(f"  {case.label} {row['impl']}: {row.get('error')}")
    return meta, case_rows


# Each case's peers are timed in interleaved rounds (every peer once a round, the order rotated),
# and each row pools its rounds' runs: a peer's median then spans the whole window the case was
# timed in, not one stretch of it, so a drift of the shared GPU (clocks, other tenants) lands on
# every peer alike (measured in one window each, two peers at the copy bandwidth differed by 1-3%
# from run to run, H100/H200 2026-11-24).
ROUNDS = 5


@dataclasses.dataclass
class _Ready:
    """A peer built, checked and holding its input sets: what the timed rounds call."""
    peer: Peer
    row: dict
    fn: Callable
    sets: list
    first_s: float
    windows: list = dataclasses.field(default_factory=list)    # one Timing a round


def first_call(peer: Peer, case, host: list, row: dict, *, copies: int, put: Callable,
               get: Callable, check: Callable) -> _Ready | None:
    """Build ``peer``'s function, put ``copies`` input sets on its device (``put(array, k)`` for
    argument ``k``), make the first call (timed) and ``check(outputs, got back by get)`` into
    ``row``; None (the error in ``row``, the peer's memory freed) on failure."""
    try:
        fn = peer.build(case)
        sets = [[put(a if (k == 0 or peer.device == "gpu") else a.copy(), i) for i, a in enumerate(host)]
                for k in range(max(1, copies))]
        peer.sync()
        t0 = time.perf_counter()
        out = fn(*sets[0])
        peer.block(out)
        first_s = time.perf_counter() - t0
        got = [get(o) for o in as_tuple(out)]
        del out
        check(got)
        return _Ready(peer, row, fn, sets, first_s)
    except Exception as e:
        row["ok"] = False
        row["error"] = _err(e)
        _free(peer)
        return None


def _prepare(peer: Peer, case: Case, host: list, ref, ref_rows: int, row: dict, *,
             copies: int) -> _Ready | None:
    """:func:`first_call` of a public-suite case, checked against the reference."""
    def check(got):
        row["out_dtypes"] = sorted({str(g.dtype) for g in got})
        if ref is not None:
            row["rel_err"] = relative_error(got, ref)
            row["correct"] = bool(row["rel_err"] <= REL_TOL.get(case.dtype, 1e-4))
        if any(str(g.dtype) != case.dtype for g in got):
            row["note"] = f"output dtype {row['out_dtypes']} != {case.dtype}"
    return first_call(peer, case, host, row, copies=copies, put=lambda a, k: peer.put(a),
                      get=lambda o: peer.get(o, ref_rows), check=check)


def _time_interleaved(ready: list[_Ready], *, quick: bool, device: str) -> None:
    """Time every ready peer in ``ROUNDS`` rounds (1 when ``quick``), pooling each one's runs."""
    rounds = 1 if quick else ROUNDS
    kw = dict(budget_s=(0.15 if quick else (1.0 if device == "cpu" else 0.4)) / rounds)
    if quick:
        kw.update(min_reps=3, max_reps=5, warmup=1)
    live = list(ready)
    for k in range(rounds):
        for r in live[k % len(live):] + live[:k % len(live)] if live else []:
            n = len(r.sets)
            try:
                r.windows.append(r.peer.measure(lambda i, r=r: r.fn(*r.sets[i % n]), **kw))
            except Exception as e:
                r.row.update(ok=False, error=_err(e))
                live.remove(r)
    for r in live:
        t = timing.pooled(r.windows)
        r.row.update(ok=True, ms=t.median_ms, ms_min=t.min_ms, ms_max=t.max_ms, runs=t.runs,
                     timer=t.method, rounds=rounds, first_call_s=r.first_s)


def _finish(r: _Ready, case: Case, *, dispatch: bool, plan_dev, device: str) -> None:
    """After the rounds: compile time, kfuse's plan and prediction, the peer's memory freed, then
    its dispatch cost on a tiny input."""
    peer, row = r.peer, r.row
    r.sets = None
    try:
        if row.get("ok") and peer.compiles:
            row["compile_s"] = max(0.0, r.first_s - row["ms"] * 1e-3)
        if row.get("ok") and isinstance(peer, KfusePeer):
            row["predicted_ms"], row["plan"] = kfuse_predicted_ms(r.fn, case, plan_dev)
            row["compiles"] = getattr(r.fn, "compile_count", None)
            if case.bound == "compute" and peer.device == "gpu":
                row["gemm_choices"] = _gemm_choices()
    except Exception as e:
        row["ok"] = False
        row["error"] = _err(e)
    _free(peer)
    if row.get("ok") and dispatch:
        try:
            row["dispatch_us"] = _dispatch_us(peer, case, device)
        except Exception as e:
            row["dispatch_error"] = _err(e)
        _free(peer)


def _free(peer: Peer) -> None:
    try:
        peer.free()
    except Exception:
        pass


def _gemm_choices() -> str | None:
    """kfuse's GEMM candidate picks (generated kernel vs cuBLAS + epilogue, with their times)."""
    try:
        from kfuse.runtime.gemm import default_runner
        return default_runner().describe_choices() or None
    except Exception:
        return None


def _dispatch_us(peer: Peer, case: Case, device: str) -> float:
    from .timing import host_overhead_us
    tc = tiny_case(case, device)
    fn = peer.build(tc)
    args = [peer.put(a) for a in tc.make_inputs(1)]
    return host_overhead_us(lambda: fn(*args), block=peer.block, sync=peer.sync)


def _derive(row: dict, case: Case, c_val, c_unit) -> None:
    if not row.get("ok"):
        return
    s = row["ms"] * 1e-3
    row["gbps"] = case.nbytes / s / 1e9
    row["gflops"] = case.flops / s / 1e9
    if c_val:
        achieved = case.nbytes / s if c_unit == "B/s" else case.flops / s
        row["frac_ceiling"] = achieved / c_val


def _ratios(rows: list[dict]) -> dict:
    """{case: {impl: {peer: t_peer / t_impl}}} over the rows that ran (>1: impl is faster)."""
    by_case: dict[str, dict[str, float]] = {}
    for r in rows:
        if r.get("ok"):
            by_case.setdefault(r["case"], {})[r["impl"]] = r["ms"]
    return {c: {a: {b: tb / ta for b, tb in t.items() if b != a} for a, ta in t.items()}
            for c, t in by_case.items()}


# ---- warm disk load (a new process) -------------------------------------------------------------
def first_call_in_new_process(device: str, backend: str, labels, *, quick: bool = False,
                              env: dict | None = None, timeout: float = 300) -> dict:
    """Run ``python -m kfuse.bench.warm`` for the cases ``labels`` of ``backend`` in a new process
    (environment ``env``, default this one's) and return its JSON: ``{"import_s", "init_s",
    "cases": {label: {"first_s", "hot_ms", ...} or {"error"}}}``. With ``KFUSE_CACHE_DIR`` filled
    this measures a warm disk load; with a fresh one, a cold compile. Raises when the process fails."""
    cmd = [sys.executable, "-m", "kfuse.bench.warm", "--device", device, "--backend", backend,
           "--cases", ",".join(sorted(labels))]
    if quick:
        cmd.append("--quick")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ) if env is None else env)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        raise RuntimeError((r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"])
    return json.loads(lines[-1])


def _warm_load(peer: KfusePeer, device: str, quick: bool, workloads, rows: list[dict]) -> None:
    labels = {r["case"] for r in rows if r["impl"] == peer.name and r.get("ok")}
    if not labels:
        return
    try:
        res = first_call_in_new_process(device, peer.backend, labels, quick=quick)
    except Exception as e:
        for row in rows:
            if row["impl"] == peer.name and row.get("ok"):
                row["warm_load_error"] = _err(e)
        return
    for row in rows:
        if row["impl"] == peer.name and row["case"] in res.get("cases", {}):
            w = res["cases"][row["case"]]
            if "first_s" in w:
                row["warm_load_s"] = max(0.0, w["first_s"] - w["hot_ms"] * 1e-3)
                row["warm_first_call_s"] = w["first_s"]
            else:
                row["warm_load_error"] = w.get("error")
    for row in rows:
        if row["impl"] == peer.name:
            row["warm_import_s"] = res.get("import_s")
            row["warm_init_s"] = res.get("init_s")


def _loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None
