"""The tuner: choose a TileConfig per kernel group, by mode, within budgets, persisted.

Modes (``JitOptions.autotune`` / ``KFUSE_AUTOTUNE``):
  ``off``     the heuristic (``prune.heuristic``: what the runtime does untuned); no disk access.
  ``cached``  a stored result for (kernel, shape bucket, arch), else the heuristic (the default).
  ``on``      a stored result, else tune now: space -> prune (resource limits, top-k by the cost
              model) -> compile -> measure (the heuristic first: its outputs are the reference)
              -> store the fastest. At most ``config.autotune_budget`` seconds a kernel and
              ``config.autotune_total_budget`` seconds a process (:class:`Budget`).

Backends (a ``kfuse.backends`` object or its name): those with ``Feature.AUTOTUNE`` are tuned, a
host backend's threads by ``targets.CpuTarget``, a device backend's launch shapes by
``gpu_targets.CudaTarget`` (the CUDA C runtime; its heuristic is read back from the launcher, so
"heuristic" means exactly the untuned runtime; chosen tiles reach it through
``CudaProgram.set_tile``). Other backends get heuristics.

Results are kept in the disk store's tuning namespace (``CacheStore.put_tuning``) keyed by
``keys.tuning_key(kernel_key, shape_bucket(domain), arch)``, where the kernel key is
``keys.build_kernel_key`` over the kernel's generated source and input layouts (so a change of
code generator or toolchain invalidates it), and in a process memo. Tuning never fails the call:
any error falls back to the heuristic. ``config.print_autotuning`` prints every candidate's time
to stderr; a tqdm bar appears when tuning lasts more than about a second.
"""
from __future__ import annotations

import dataclasses
import hashlib
import sys
import threading
import time

from .. import backends as _backends
from .. import config as _config
from ..fusion import cost as costmod
from ..fusion.kinds import GroupKind
from ..runtime import keys
from . import prune as P, space as S
from .targets import CpuTarget, apply, cpu_arch  # noqa: F401  (apply re-exported)

MODES = ("off", "cached", "on")
TOP_K = 8
CHOSEN = ("tuned", "stored", "memo")      # report sources that differ from "use the heuristic"


class Budget:
    """Seconds of tuning left in this process (``autotune_total_budget``)."""

    def __init__(self, total: float | None = None):
        self.total = total
        self.spent = 0.0
        self._lock = threading.Lock()

    def left(self, total: float) -> float:
        total = self.total if self.total is not None else total
        return max(0.0, total - self.spent)

    def charge(self, seconds: float) -> None:
        with self._lock:
            self.spent += max(0.0, seconds)


PROCESS_BUDGET = Budget()
_MEMO: dict = {}                # (kernel key hash, bucket, arch) -> TileConfig; a cache only
# the keys of _MEMO looked up in the store and found nothing usable (mode "cached"): a new size in
# the same bucket does not read the disk again; a tuning another process stores later is seen by
# this process's next bucket, or after ``reset()``
_ABSENT: set = set()
STATS = {"measured": 0, "tuned_kernels": 0, "store_hits": 0, "memo_hits": 0}


@dataclasses.dataclass
class GroupReport:
    group_id: int
    kind: str
    source: str                 # "heuristic" | "memo" | "stored" | "tuned" | "fallback"
    config: S.TileConfig
    heuristic: S.TileConfig
    measurements: list = dataclasses.field(default_factory=list)
    dropped: list = dataclasses.field(default_factory=list)
    seconds: float = 0.0        # tuning time spent
    stopped_early: bool = False
    note: str = ""


def _say(msg: str) -> None:
    print(f"kfuse autotune: {msg}", file=sys.stderr, flush=True)


def _fmt(sec: float) -> str:
    if sec == float("inf"):
        return "inf"
    return f"{sec * 1e6:.1f} us" if sec < 1e-3 else f"{sec * 1e3:.3f} ms"


def _plan_of(lowered_or_plan):
    return getattr(lowered_or_plan, "plan", lowered_or_plan)


def kernel_key(source: str, signature, backend, arch: str) -> dict:
    be = _backends.get(backend)
    known = None
    if "nvrtc" in be.tools:         # (read without loading libnvrtc: ~6 ms of a warm first call)
        from ..runtime import nvrtc_lib
        known = {"nvrtc": nvrtc_lib.version()}
    return keys.build_kernel_key(graph_hash=hashlib.sha256(source.encode()).hexdigest(),
                                 signature=signature, backend=be.name, arch=arch,
                                 extra={"purpose": "tuning"}, tools=be.tools, known=known)


_KHASH: dict = {}


def _kernel_hash(source: str, sig: tuple, backend, arch: str) -> str:
    """``key_hash(kernel_key(...))``, memoised: a kernel at each new size of its shape class has
    the same source, so its tuning key is hashed once per process."""
    memo = (source, sig, backend.name, arch)
    h = _KHASH.get(memo)
    if h is None:
        h = _KHASH[memo] = keys.key_hash(kernel_key(source, [list(s) for s in sig], backend, arch))
    return h


def tune_program(lowered_or_plan, arrays=None, backend="cpu", mode: str | None = None,
                 store=None, *, program=None, device=None, budget: float | None = None,
                 total_budget: float | None = None, top_k: int = TOP_K, progress: bool | None = None,
                 print_autotuning: bool | None = None, max_threads: int | None = None,
                 reports: list | None = None, process_budget: Budget | None = None) -> dict:
    """``{group_id: TileConfig}`` for every group of the plan (a ``Lowered`` or a ``Plan``).

    ``arrays``: the program's inputs (graph.inputs order; needed only to tune); ``program``: the
    compiled program (``runtime.cpu.compile_plan(plan)``; built here when tuning needs it);
    ``store``: a ``runtime.cache.CacheStore`` or None. ``budget``/``total_budget`` default to the
    config's. ``reports`` (a list) receives one :class:`GroupReport` a group. Never raises for
    tuning reasons: anything going wrong yields the heuristic."""
    cfg = _config.get()
    mode = (mode or cfg.autotune or "cached").lower()
    if mode not in MODES:
        raise ValueError(f"kfuse autotune: mode must be one of {MODES}, got {mode!r}")
    plan = _plan_of(lowered_or_plan)
    backend = _backends.get(backend)
    if backend.on_host:
        device = costmod.get_device_spec(device or backend.default_device)
        if device.kind != "cpu":           # a host backend's threads are tuned for the host
            device = costmod.get_device_spec(backend.default_device)
    else:
        device = costmod.get_device_spec(device or plan.device or cfg.device or backend.default_device)
    budget = cfg.autotune_budget if budget is None else float(budget)
    total_budget = cfg.autotune_total_budget if total_budget is None else float(total_budget)
    printing = cfg.print_autotuning if print_autotuning is None else bool(print_autotuning)
    pbudget = process_budget or PROCESS_BUDGET
    heur = {g.id: P.heuristic(g, backend, device) for g in plan.groups}
    out = dict(heur)
    if mode == "off" or not plan.groups:
        for g in plan.groups:
            _report(reports, GroupReport(g.id, g.kind, "heuristic", heur[g.id], heur[g.id]))
        return out
    if _backends.Feature.AUTOTUNE not in backend.features:
        for g in plan.groups:
            _report(reports, GroupReport(g.id, g.kind, "heuristic", heur[g.id], heur[g.id],
                                         note=f"no tuning hook in the {backend} runtime"))
        return out
    try:
        program, sources, arch = _prepare(plan, backend, program, store)
    except Exception as e:             # tuning never fails the call
        if printing:
            _say(f"cannot prepare tuning ({type(e).__name__}: {e}); using heuristics")
        for g in plan.groups:
            _report(reports, GroupReport(g.id, g.kind, "heuristic", heur[g.id], heur[g.id],
                                         note=f"cannot prepare tuning: {type(e).__name__}: {e}"))
        return out
    target = None
    bar = None
    try:
        for g in plan.groups:
            rep = GroupReport(g.id, g.kind, "heuristic", heur[g.id], heur[g.id])
            if g.kind == GroupKind.ATTENTION:
                rep.note = "the attention kernel has one tile (not tuned)"
                _report(reports, rep)
                continue
            try:
                bucket = keys.shape_bucket(g.domain)
                khash = _kernel_hash(sources[g.id], tuple((str(n.dtype), len(n.shape)) for n in g.inputs),
                                     backend, arch)
                _KHASH_BY_DTYPE[(sources[g.id], tuple([(n.dtype, len(n.shape)) for n in g.inputs]),
                                 backend.name, arch)] = khash
                memo_key = (khash, tuple(bucket), arch)
                hit = _MEMO.get(memo_key)
                if hit is not None:
                    rep.source, rep.config = "memo", hit
                    STATS["memo_hits"] += 1
                else:
                    stored = None if memo_key in _ABSENT else _load(store, khash, bucket, arch, g,
                                                                    device, max_threads, backend)
                    if stored is None and mode != "on":
                        _ABSENT.add(memo_key)
                    if stored is not None:
                        rep.source, rep.config = "stored", stored
                        STATS["store_hits"] += 1
                        _MEMO[memo_key] = stored
                    elif mode == "on":
                        if arrays is None:
                            rep.note = "no arrays given: cannot tune"
                        else:
                            if target is None:
                                target = _make_target(backend, program, arrays, heur)
                            if bar is None:
                                bar = _progress(progress, len(plan.groups))
                            if hasattr(target, "heuristic"):
                                rep.heuristic = rep.config = target.heuristic(target.group_index(g.id))
                            _tune_group(target, g, rep.heuristic, device, rep, budget, total_budget,
                                        pbudget, top_k, printing, max_threads)
                            if rep.source == "tuned":
                                _MEMO[memo_key] = rep.config
                                _save(store, khash, bucket, arch, rep, plan, backend)
                if printing and rep.source in ("memo", "stored"):
                    _say(f"kernel {g.id} [{g.kind}] bucket {bucket}: {rep.source} {rep.config}")
            except Exception as e:        # tuning never fails the call
                rep.source, rep.config = "fallback", heur[g.id]
                rep.note = f"{type(e).__name__}: {e}"
                if printing:
                    _say(f"kernel {g.id}: tuning failed ({rep.note}); using the heuristic")
            out[g.id] = rep.config
            _report(reports, rep)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        if target is not None and hasattr(target, "release"):
            target.release()
    return out


def _prepare(plan, backend, program, store):
    """(program, {group id: kernel source for the key}, arch) for a tunable backend."""
    if backend.on_host:
        if program is None:
            program = backend.compile_plan(plan, store)
        return program, {k.group.id: k.source for k in program.kernels}, cpu_arch()
    from .gpu_targets import gpu_arch, kernel_source
    arch = gpu_arch()
    if program is None:
        program = backend.compile_plan(plan)
    # a program of a new size shares its template's texts (rebind): the source is not emitted again
    memo = getattr(program, "tuning_sources", {})
    sources = {}
    for i, (g, k) in enumerate(zip(plan.groups, program.kirs)):
        if i not in memo:
            memo[i] = kernel_source(k, store)
        sources[g.id] = memo[i]
    return program, sources, arch


def _make_target(backend, program, arrays, heur):
    if backend.on_host:
        return CpuTarget(program, arrays, heur)
    from .gpu_targets import CudaTarget
    return CudaTarget(program, arrays, heur)


_KHASH_BY_DTYPE: dict = {}


def known_choice(plan, backend, mode: str | None, program, store) -> dict | None:
    """In mode "cached", for a program whose kernels' tuning keys this process has formed before
    (a new size of a built shape class; a host program's kernel sources, a GPU program's
    ``tuning_sources``, shared by its sizes), the configs :func:`tune_and_apply` would apply
    (``{group id: config}``: the memo's, counted as memo hits; none where ``store`` holds none for
    a group's bucket, which is then remembered as absent, as the full path does); else None (a
    stored config to read and check, a search or a printed report: the full path). Why: the full
    path prices each group's heuristic and formats each input's dtype to form the key, 0.05-0.1
    ms of a new size's ~0.5 ms build for the same lookup. :func:`apply_known` applies them."""
    mode = (mode or _config.get().autotune or "cached").lower()
    be = _backends.get(backend)
    if mode != "cached" or _config.get().print_autotuning:
        return None
    if be.on_host:
        arch = cpu_arch()
        kernels = [(k.group, k.source) for k in program.kernels]
    else:
        sources = getattr(program, "tuning_sources", None)
        if not sources:
            return None
        from .gpu_targets import gpu_arch
        arch = gpu_arch()
        kernels = [(g, sources.get(i)) for i, g in enumerate(plan.groups)]
    chosen: dict = {}
    hits = 0
    for g, source in kernels:
        if g.kind == GroupKind.ATTENTION:
            continue
        memo = (source, tuple([(n.dtype, len(n.shape)) for n in g.inputs]), be.name, arch)
        khash = _KHASH_BY_DTYPE.get(memo)
        if khash is None:
            return None             # (the full path forms the key once, then this memo holds it)
        memo_key = (khash, tuple(keys.shape_bucket(g.domain)), arch)
        hit = _MEMO.get(memo_key)
        if hit is not None:
            chosen[g.id] = hit
            hits += 1
        elif memo_key not in _ABSENT:
            if store is not None:
                try:
                    if store.get_tuning(khash, list(memo_key[1]), arch):
                        return None
                except Exception:
                    return None
            _ABSENT.add(memo_key)
    STATS["memo_hits"] += hits
    return chosen


def apply_known(program, chosen: dict, backend) -> None:
    """Set :func:`known_choice`'s configs on ``program`` as :func:`tune_and_apply` sets its own."""
    if _backends.get(backend).on_host:
        apply(program, chosen)
    else:
        from .gpu_targets import apply_gpu
        apply_gpu(program, chosen)


def tune_and_apply(lowered_or_plan, arrays, backend, mode: str | None, store, program,
                   **kw) -> dict:
    """What ``kfuse.jit`` calls after compiling: tune (by ``mode``) and set the chosen configs on
    ``program``. Only configs that differ from "the heuristic" (tuned, stored, memo) are set, so
    mode ``off`` and cache misses leave the runtime's own choice untouched (on the CPU: threads per
    call from the kernel's work and the machine's load, ``runtime.cpu.auto_threads``)."""
    reports: list = []
    tiles = tune_program(lowered_or_plan, arrays, backend, mode, store, program=program,
                         reports=reports, **kw)
    if _backends.get(backend).on_host:
        apply(program, {r.group_id: r.config for r in reports if r.source in CHOSEN})
    else:
        from .gpu_targets import apply_gpu
        apply_gpu(program, {r.group_id: r.config for r in reports if r.source in CHOSEN})
    return tiles


def _report(reports, rep) -> None:
    if reports is not None:
        reports.append(rep)


def _progress(progress, total):
    if progress is False:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="kfuse autotune", unit="kernel", delay=1.0, file=sys.stderr,
                leave=False)


def _load(store, khash, bucket, arch, group, device, max_threads, backend=_backends.CPU):
    if store is None:
        return None
    try:
        body = store.get_tuning(khash, bucket, arch)
        if not body:
            return None
        cfg = S.TileConfig.from_dict(body.get("config"))
    except Exception:
        return None
    if cfg.kind not in backend.tile_kinds:
        return None                         # another backend's knobs
    if backend.on_host and P.check(cfg, group, device, max_threads=max_threads) is not None:
        return None                         # stale (e.g. fewer threads now): ignore it
    if not backend.on_host:
        from ..runtime.cuda_tiles import unsupported
        if unsupported(cfg) is not None:
            return None                     # the launcher also ignores a tile that does not fit
    return cfg


def _save(store, khash, bucket, arch, rep, plan, backend) -> None:
    if store is None:
        return
    timings = {m.config.name: (m.seconds if m.ok else None) for m in rep.measurements}
    try:
        store.put_tuning(khash, bucket, arch, rep.config.as_dict(), timings,
                         meta={"function": plan.graph.name, "kernel_kind": rep.kind,
                               "backend": backend.name, "group": rep.group_id,
                               "heuristic": rep.heuristic.as_dict(),
                               "complete": not rep.stopped_early,
                               "tuning_seconds": round(rep.seconds, 4)})
    except Exception:                       # the store is best effort
        pass


def _tune_group(target, g, heur, device, rep, budget, total_budget, pbudget, top_k, printing,
                max_threads) -> None:
    from . import bench         # (statistics, concurrent.futures: not for a cached lookup)
    i = target.group_index(g.id)
    if target.empty(i):
        rep.note = "empty outputs: nothing to tune"
        return
    left = min(budget, pbudget.left(total_budget))
    if left <= 0:
        rep.note = "autotune budget spent"
        if printing:
            _say(f"kernel {g.id}: budget spent, using the heuristic {heur}")
        return
    t0 = time.perf_counter()
    deadline = t0 + left
    try:
        if hasattr(target, "space"):
            space = target.space(g, rep.dropped)
        else:
            space = S.space_for(g, _backends.CPU, max_threads=max_threads)
        cands = P.prune(space + [heur], g, device, top_k=top_k, keep=heur,
                        max_threads=max_threads, dropped=rep.dropped)
        if (not cands or cands[0] != heur) and getattr(target, "trust_heuristic", False):
            cands = [heur] + [c for c in cands if c != heur][:max(0, top_k - 1)]
        if not cands or cands[0] != heur:
            rep.note = "the heuristic config does not fit; no reference to check against"
            return
        if printing:
            for c, why in rep.dropped:
                _say(f"kernel {g.id}: pruned {c} ({why})")
        compiled: dict = {}
        if target.compile_workers > 1:        # compile up front, concurrently
            compiled = bench.compile_all(cands, lambda c: target.precompile(i, c),
                                         workers=target.compile_workers, deadline=deadline)
        reductions = g.kind in (GroupKind.REDUCE, GroupKind.SCAN, GroupKind.SCATTER)    # a scatter's float atomics add in any order
        reference = None
        for c in cands:
            if time.perf_counter() >= deadline and c != heur:     # the reference always runs
                rep.stopped_early = True
                break
            run = compiled.get(c)
            if run is None and target.compile_workers > 1:
                rep.stopped_early = True
                break
            if run is not None and not isinstance(run, Exception):
                run = None                      # compiled in the pool: load it here
            if run is None:                     # compile this one now (one at a time)
                run = bench.compile_all([c], lambda c: target.prepare(i, c))[c]
                if time.perf_counter() >= deadline and c != heur:
                    rep.stopped_early = True
                    break
            if isinstance(run, Exception):
                m = bench.Measurement(c, error=f"compile: {type(run).__name__}: {run}".splitlines()[0])
            else:
                m = bench.measure(c, run, reference, deadline=deadline, reductions=reductions,
                                  gpu=target.gpu, warmup=getattr(target, "warmup", 1),
                                  reps=getattr(target, "reps", 5))
                STATS["measured"] += 1
            if c == heur:
                if not m.ok:
                    rep.note = f"the heuristic config failed ({m.error}); not tuning"
                    rep.measurements.append(m)
                    return
                reference = [o.copy() for o in run(0)]
            rep.measurements.append(m)
            if printing:
                _say(f"kernel {g.id} [{g.kind}] {c}: {_fmt(m.seconds)}"
                     + (f"  ({m.error})" if m.error else ""))
        ok = [m for m in rep.measurements if m.ok]
        if ok:
            best = min(ok, key=lambda m: m.seconds)
            margin = getattr(target, "keep_heuristic_within", 0.0)
            h = next((m for m in ok if m.config == heur), None)
            if h is not None and h.seconds <= best.seconds * (1.0 + margin):
                best = h                        # not measurably faster: keep the heuristic
            rep.source, rep.config = "tuned", best.config
            STATS["tuned_kernels"] += 1
            if printing:
                _say(f"kernel {g.id}: chose {best.config} ({_fmt(best.seconds)}; heuristic "
                     f"{heur}) in {time.perf_counter() - t0:.2f} s"
                     + ("  [budget reached]" if rep.stopped_early else ""))
    finally:
        rep.seconds = time.perf_counter() - t0
        pbudget.charge(rep.seconds)


def reset() -> None:
    """Forget the process memo, counters and spent budget (tests)."""
    _MEMO.clear()
    _ABSENT.clear()
    _KHASH.clear()
    _KHASH_BY_DTYPE.clear()
    for k in STATS:
        STATS[k] = 0
    PROCESS_BUDGET.spent = 0.0
