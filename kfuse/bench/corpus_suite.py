"""Runs the corpus (``kfuse bench --suite corpus``): every selected entry against every available
peer, in the public suite's interleaved rounds (``suite._time_interleaved``), with the copy-bandwidth
ceiling, correctness against a float64 reference, kfuse's kernel count and its predicted vs
measured time per kernel (``kernel_timing``). Returns one plain dict (``corpus_report`` writes it
as JSON and markdown). A peer that cannot run an entry records why; the run goes on.

Peers: CPU: kfuse[cpu], NumPy eager, jax.jit. GPU: kfuse[cuda] (and kfuse[numba-cuda] with
``numba_cuda=True``), torch.compile, jax.jit, CuPy eager, torch eager.

The float64 reference runs the entry's body in float64 (``corpus.reference_mode``: casts to a float
dtype give float64) on the full inputs: with NumPy on the CPU, with CuPy on the GPU when it imports
(the same float64 arithmetic, on the device: NumPy would take minutes at the GPU sizes).
bfloat16 inputs go to torch tensors (torch, and kfuse's CUDA C backend on torch tensors) or JAX
arrays; other peers record that they cannot hold them.
"""
from __future__ import annotations

import datetime
import functools
import gc
import math
import os
import sys
import time
from typing import Callable

import numpy as np

from . import ceilings as _ceil
from .corpus import TOLERANCE_CLASSES, cases as corpus_cases, reference_mode
from .peers import CupyPeer, JaxPeer, KfusePeer, NumpyPeer, Peer, PeerUnavailable, TorchPeer, select
from .suite import (first_call, prepare_peers, start_run, _Ready, _derive, _err, _free, _loadavg, _time_interleaved,
                    versions)
from .workloads import as_tuple, relative_error


def corpus_peers(device: str, numba_cuda: bool = False) -> list[Peer]:
    """The corpus's peers for ``device``, kfuse first."""
    if device == "cpu":
        return [KfusePeer("cpu"), NumpyPeer(), JaxPeer("cpu")]
    peers: list[Peer] = [KfusePeer("cuda")]
    if numba_cuda:
        peers.append(KfusePeer("numba-cuda"))
    return peers + [TorchPeer("gpu", compiled=True), JaxPeer("gpu"), CupyPeer(), TorchPeer("gpu")]


# ---- inputs and outputs across peers -------------------------------------------------------------
def _torch_device(peer: Peer) -> str:
    return "cuda" if peer.device == "gpu" else "cpu"


def put(peer: Peer, a: np.ndarray, dtype: str, case_has_bf16: bool):
    """``a`` on ``peer``'s device; bfloat16 arguments (float32 host values already rounded) as
    torch bfloat16 tensors or JAX bfloat16 arrays. kfuse's GPU peer takes every argument of a
    bfloat16 case as a torch tensor (kfuse runs bfloat16 on torch tensors only)."""
    torch_side = isinstance(peer, TorchPeer) or (isinstance(peer, KfusePeer) and peer.device == "gpu" and case_has_bf16)
    if dtype == "bfloat16" or (torch_side and case_has_bf16):
        if torch_side:
            import torch
            t = torch.from_numpy(np.ascontiguousarray(a)).to(_torch_device(peer))
            return t.to(torch.bfloat16) if dtype == "bfloat16" else t
        if isinstance(peer, JaxPeer):
            import jax.numpy as jnp
            return peer.jax.device_put(jnp.asarray(a, dtype=jnp.bfloat16), peer.jdev)
        raise PeerUnavailable("bfloat16 arguments: torch tensors (torch, kfuse[cuda]) or JAX only")
    return peer.put(a)


def to_host(out) -> np.ndarray:
    """Any peer's output as a host NumPy array (bfloat16 widened to float32)."""
    mod = type(out).__module__
    if mod.startswith("cupy"):
        import cupy
        return cupy.asnumpy(out)
    if mod.startswith("torch"):
        t = out.detach()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.cpu().numpy()
    a = np.asarray(out)
    return a.astype(np.float32) if a.dtype.name == "bfloat16" else a


def reference(case, host: list, device: str) -> tuple[list | None, str, str | None]:
    """(float64 outputs on the host, how they were computed, error)."""
    spaces = [(np, "numpy float64")]
    if device == "gpu":
        try:
            import cupy
            spaces.insert(0, (cupy, "cupy float64 (on the GPU)"))
        except Exception:
            pass
    err = None
    for xp, how in spaces:          # CuPy first on the GPU; NumPy if CuPy fails
        try:
            args = [xp.asarray(a.astype(np.float64) if a.dtype.kind == "f" else a) for a in host]
            with reference_mode(), np.errstate(all="ignore"):
                out = case.body(xp)(*args)
            res = [to_host(o) for o in as_tuple(out)]
            del args, out
            return res, how, None
        except Exception as e:
            err = _err(e)
        finally:
            if xp is not np:        # the float64 temporaries back to the device, for the peers
                xp.get_default_memory_pool().free_all_blocks()
    return None, spaces[-1][1], err


# ---- the run -----------------------------------------------------------------------------------
def run_corpus(device: str = "cpu", *, quick: bool = False, peers: str | None = None,
               filter: str | None = None, shard: str | None = None, budget_s: float | None = None,
               numba_cuda: bool = False, kernels: bool = True, progress: bool = True, seed: int = 0,
               size: str | None = None, partial_json: str | None = None, machine: bool = False) -> dict:
    """Run the selected corpus entries on ``device`` ("cpu"/"gpu"); returns the results dict.
    ``size`` overrides the size class (default: the device's); ``partial_json``: rewritten after
    every entry, so a run cut short leaves what it measured; ``machine`` (the CLI's run on the
    CPU): this machine measured and stored in the configured cache directory before it plans
    (``autotune.machine``), so the run's predictions are this machine's."""
    t_start = time.perf_counter()
    load_start = _loadavg()
    size = size or device
    cases = corpus_cases(size, filter, shard)
    candidates = select(corpus_peers(device, numba_cuda), peers)
    peer_info, live, dev_info, plan_dev, prog = start_run(device, candidates, len(cases), progress)
    try:
        # full-size copies even when quick: a 64 MiB copy would sit partly in a GPU's L2
        if device == "cpu" and machine:     # stored first: the run's plans are priced on them
            from .. import config
            from ..autotune import machine as _machine
            _, rates, _ = _machine.measure_and_save(config.get().cache_dir)
            ceil = _ceil.cpu_ceilings(False, rates=rates)
        elif device == "cpu":
            ceil = _ceil.cpu_ceilings(False)
        else:
            ceil = _ceil.gpu_ceilings(False)
    except Exception as e:
        ceil = {"errors": {"all": _err(e)}}
    prog.step()
    result = {"schema": "kfuse-bench-corpus/1",
              "meta": {"device": device, "device_info": dev_info, "planner_device": plan_dev,
                       "versions": versions(), "suite": "corpus", "size": size, "quick": quick,
                       "filter": filter, "shard": shard, "argv": sys.argv, "budget_s": budget_s,
                       "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                       "loadavg_start": load_start, "tolerance_classes": TOLERANCE_CLASSES,
                       "kfuse_cpu_threads": _cpu_threads()},
              "ceilings": ceil, "peers": peer_info, "cases": [], "rows": []}
    for case in cases:
        _run_case(case, live, result, device=device, quick=quick, budget_s=budget_s, t_start=t_start,
                  plan_dev=plan_dev, ceil=ceil, kernels=kernels, seed=seed, prog=prog)
        result["meta"]["wall_s"] = time.perf_counter() - t_start
        if partial_json:
            from .corpus_report import write_json
            write_json(result, partial_json)
    prog.close()
    result["meta"].update(wall_s=time.perf_counter() - t_start, loadavg_end=_loadavg())
    return result


def _run_case(case, live, result, *, device, quick, budget_s, t_start, plan_dev, ceil, kernels, seed, prog):
    e = case.entry
    c_val, c_unit = _ceil.ceiling_for(ceil, case)
    meta = {"label": case.label, "workload": e.name, "category": e.category, "title": e.title,
            "tags": list(e.tags), "dtypes": list(case.dtypes), "shapes": [list(s) for s in case.shapes],
            "bound": e.bound, "tol": e.tol, "only": e.only, "ceiling": c_val, "ceiling_unit": c_unit}
    result["cases"].append(meta)
    rows = []
    skip = None
    if e.only == "gpu-torch" and device != "gpu":
        skip = "skipped: bfloat16 entry, GPU with torch tensors only"
    elif budget_s is not None and time.perf_counter() - t_start > budget_s:
        skip = f"skipped: time budget ({budget_s:.0f} s) spent"      # no inputs made either
    if skip:
        for peer in live:
            rows.append({"case": case.label, "workload": e.name, "impl": peer.name, "ok": False, "error": skip})
            prog.step()
        result["rows"].extend(rows)
        return
    try:
        meta.update(flops=case.flops, bytes=case.nbytes, intensity=case.intensity)
    except Exception as ex:
        meta["bytes_error"] = _err(ex)
    prog.status(f"{case.label}: inputs + float64 reference")
    host = case.make_inputs(seed)
    ref, how, ref_err = reference(case, host, device)
    meta.update(reference=how, reference_error=ref_err)
    tol = TOLERANCE_CLASSES[e.tol][0]
    has_bf16 = "bfloat16" in case.dtypes
    ready, rows = prepare_peers(
        live, case.label, e.name, prog, t_start, budget_s,
        functools.partial(_prepare, case=case, host=host, ref=ref, tol=tol, has_bf16=has_bf16, copies=2))
    _time_interleaved(ready, quick=quick, device=device)
    for r in ready:
        if r.row.get("ok") and r.peer.compiles:
            r.row["compile_s"] = max(0.0, r.first_s - r.row["ms"] * 1e-3)
        if isinstance(r.peer, KfusePeer):
            _kfuse_extras(r, case, plan_dev, kernels)
        r.sets = None
        _free(r.peer)
    for row in rows:
        _derive(row, case, c_val, c_unit)
        result["rows"].append(row)
    del host, ready, ref
    gc.collect()


def _prepare(peer, case, host, ref, tol, row, has_bf16, *, copies) -> _Ready | None:
    """:func:`suite.first_call` of a corpus case, checked against the float64 reference."""
    def check(got):
        row["out_dtypes"] = [str(g.dtype) for g in got]
        if ref is not None:
            row["rel_err"] = relative_error(got, ref)
            row["correct"] = bool(row["rel_err"] <= tol)
    return first_call(peer, case, host, row, copies=copies, get=to_host, check=check,
                      put=lambda a, k: put(peer, a, case.dtypes[k], has_bf16))


def _kfuse_extras(r: _Ready, case, plan_dev, kernels: bool) -> None:
    """kfuse's kernel count, predicted time and per-kernel predicted vs measured, on the first
    input set (still on the device)."""
    row = r.row
    row["compiles"] = getattr(r.fn, "compile_count", None)
    if kernels and r.sets:
        try:
            from .kernel_timing import measure_kernels
            # the CPU's calls take the input sets in turn, as the entry's timing does
            more = tuple(tuple(s) for s in r.sets[1:]) if r.peer.device == "cpu" else ()
            rep = measure_kernels(r.fn, *r.sets[0], device=plan_dev, budget_s=0.3, more_sets=more)
            row["kernels"] = len(rep["kernels"])
            row["predicted_ms"] = rep["predicted_us"] * 1e-3 if rep["predicted_us"] is not None else None
            row["kernel_times"] = rep
            return
        except Exception as e:
            row["kernel_times_error"] = _err(e)
    try:
        import kfuse
        plan = kfuse.explain(r.fn, *case.specs, device=plan_dev)
        row["kernels"] = len(plan.groups)
        secs = [g.cost.seconds for g in plan.groups if g.cost is not None]
        row["predicted_ms"] = sum(secs) * 1e3 if secs else None
    except Exception as e:
        row["plan_error"] = _err(e)


def _cpu_threads():
    """Numba's thread count for kfuse[cpu] (KFUSE_CPU_THREADS, else Numba's default)."""
    try:
        from .. import config
        import numba
        return config.get().cpu_threads or numba.get_num_threads()
    except Exception:
        return None


def finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def run_from_args(args, log: Callable[[str], None] | None = None) -> dict:
    """``kfuse bench --suite corpus`` with the parsed arguments of ``bench/cli.py``."""
    budget = args.budget if args.budget is not None else (420.0 if args.device == "gpu" else None)
    partial = (args.json + ".partial") if args.json else None
    res = run_corpus(args.device, quick=args.quick, peers=args.peers, filter=args.filter, shard=args.shard,
                     budget_s=budget, numba_cuda=args.numba_cuda, progress=not args.no_progress,
                     size=args.size, partial_json=partial, machine=True)
    if partial and os.path.exists(partial):
        os.remove(partial)
    return res
