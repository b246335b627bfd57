"""Per-kernel predicted vs measured time (``kfuse explain ... --measure``, and the corpus report).

:func:`measure_kernels` plans and compiles a function for real arrays through the public API
(``JitFunction.lower(...)``, ``Lowered.plan``, ``Lowered.compile()``), runs the program, and times
each of its kernels separately while the whole program runs, pairing each with the plan's
predicted time (``KernelGroup.cost.seconds``):

* CPU (``CpuProgram.kernels``): each kernel's two Numba entry points (``_Kernel.fns``, sequential
  and parallel) are wrapped for the measured calls with a ``perf_counter`` around the call, then
  restored. A matmul group's BLAS product (``runtime.cpu.matmul``, just before its epilogue
  kernel) is timed too and counted in that kernel's time, as its prediction prices both.
  ``other_us``: allocation and host work (the call's time minus the kernels').
* GPU (``GpuProgram.launchers``, both CUDA C and Numba-CUDA): each launcher is wrapped with a pair
  of CUDA events around its launch (a two-stage reduction's launches count as one kernel);
  a one-kernel program is timed whole. A matmul group times its epilogue launch only.

Nothing in the runtime changes: the wrappers sit on the program object this module compiled
itself (not the jitted function's cached one), for the measured calls only.
"""
from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np


def _kind(a) -> str:
    mod = type(a).__module__
    if mod.startswith("cupy"):
        return "cupy"
    if mod.startswith("torch"):
        return "torch" if a.is_cuda else "torch-cpu"
    return "numpy"


def _lowered(fn, args, device, backend):
    import kfuse
    from ..api import JitFunction
    jf = fn if isinstance(fn, JitFunction) else kfuse.jit(fn)
    from .. import backends
    kinds = {_kind(a) for a in args if hasattr(a, "shape")}
    if backend is None:       # the function's own backend if it takes these arrays, else the first that does
        own = jf.options.backend
        backend = None if own == backends.AUTO else backends.get(own)
        if backend is None or not all(backend.accepts(k) for k in kinds):
            backend = backends.first_accepting(kinds)
    backend = backends.get(backend)
    return jf.lower(*args, device=device, backend=backend), backend


def _program_inputs(lowered, args, backend) -> list:
    arrays = [a if hasattr(a, "shape") and not isinstance(a, np.generic) else np.asarray(a) for a in args]
    consts = list(getattr(lowered.graph, "constants", ()) or ())
    if consts and not backend.on_host:
        from ..runtime.interop import host_to_device
        consts = [host_to_device(c) for c in consts]
    return arrays + consts


def measure_kernels(fn, *args, device: str | None = None, backend: str | None = None,
                    reps: int | None = None, budget_s: float = 1.0, warmup: int = 2,
                    more_sets: tuple = (), clock=time.perf_counter) -> dict:
    """Time every kernel of ``fn``'s program for these arrays. Returns ``{"backend", "device",
    "kernels": [{"kernel", "kind", "ops", "predicted_us", "measured_us", "runs", "parallel_runs"}], "call_us",
    "kernels_us", "other_us", "predicted_us", "note"}`` (medians over the measured calls).
    ``more_sets``: other argument tuples of the same signature, which the CPU calls take in turn
    with ``args`` (as the corpus times whole calls: a working set is not warm from the call
    before). ``clock``: what times a CPU kernel's call (``time.thread_time``: the CPU time of a
    one-thread call, which a busy machine's other processes do not stretch). A CPU
    kernel's ``predicted_us`` is for the threads it ran on (``threads``; the plan's own, where
    they differ, in ``plan_predicted_us``)."""
    lowered, backend = _lowered(fn, args, device, backend)
    plan = lowered.plan
    prog = lowered.compile(None)
    ins = _program_inputs(lowered, args, backend)
    sets = [ins] + [_program_inputs(lowered, a, backend) for a in more_sets]
    gpu = not backend.on_host
    sync = _gpu_sync() if gpu else (lambda: None)
    t_first = time.perf_counter()
    for _ in range(max(1, warmup)):
        prog(ins)
    sync()
    one = (time.perf_counter() - t_first) / max(1, warmup)
    if reps is None:
        reps = int(max(3, min(50, budget_s / max(one, 1e-6))))
    if gpu:
        per, calls, note = _measure_gpu(prog, ins, reps)
        par = {}
    else:
        per, calls, note, par = _measure_cpu(prog, sets, reps, clock)
    rows = []
    for i, g in enumerate(plan.groups):
        pred = g.cost.seconds * 1e6 if getattr(g, "cost", None) is not None else None
        got = per.get(i, [])
        row = {"kernel": g.id, "kind": g.kind, "ops": _ops(g), "predicted_us": pred,
               "measured_us": statistics.median(got) if got else None, "runs": len(got),
               "parallel_runs": par.get(i)}
        if not gpu and got:
            row.update(_at_threads_run(g, plan.device, par.get(i) or 0, len(got)))
        rows.append(row)
    call_us = statistics.median(calls) if calls else None
    kern_us = sum(r["measured_us"] or 0.0 for r in rows)
    preds = [r["predicted_us"] for r in rows if r["predicted_us"] is not None]
    return {"backend": backend.name, "device": getattr(plan.device, "name", str(plan.device)), "kernels": rows,
            "call_us": call_us, "kernels_us": kern_us,
            "other_us": (call_us - kern_us) if call_us is not None else None,
            "predicted_us": sum(preds) if preds else None, "note": note}


def _at_threads_run(g, device, parallel_runs: int, runs: int) -> dict:
    """A CPU kernel's prediction for the threads it ran on: the plan prices it at the threads
    ``auto_threads`` gives it on an idle machine, and the runtime runs one thread where the
    machine is busy or the parallel variant is not bought yet (``runtime/cpu_par_policy.py``);
    the model is checked against the time of the threads used. ``{"threads", "plan_predicted_us",
    "predicted_us"}``, or {} where the kernel has no CPU terms or ran as planned."""
    import dataclasses
    from ..fusion import cpu_cost
    t = getattr(getattr(g, "cost", None), "cpu_terms", None)
    if t is None or device.cpu is None:
        return {}
    ran = t.threads if parallel_runs * 2 > runs else 1
    if ran == t.threads:
        return {"threads": ran}
    secs = cpu_cost.seconds(dataclasses.replace(t, threads=ran), device.cpu, device.levels, device.sms)[0]
    return {"threads": ran, "plan_predicted_us": g.cost.seconds * 1e6, "predicted_us": secs * 1e6}


def _ops(g, limit: int = 8) -> str:
    ops = list(getattr(g, "ops", ()) or ())
    return " ".join(ops[:limit]) + (f" ... (+{len(ops) - limit})" if len(ops) > limit else "") if ops else "copy"


def _gpu_sync():
    import cupy
    return lambda: cupy.cuda.get_current_stream().synchronize()


class _TimedFn:
    """A Numba entry point with a perf_counter around each call (CPU); ``parallel``: the entry
    point is the kernel's thread-pool variant (its calls are counted in ``par``)."""

    def __init__(self, inner, store: list, par: list | None = None, clock=time.perf_counter,
                 before: list | None = None):
        self.inner, self.store, self.par, self.clock = inner, store, par, clock
        self.before = before if before is not None else [0.0]     # a product's time, for the next call

    def __call__(self, *a):
        t0 = self.clock()
        r = self.inner(*a)
        self.store.append((self.clock() - t0) * 1e6 + self.before[0])
        self.before[0] = 0.0
        if self.par is not None:
            self.par.append(1)
        return r


def _measure_cpu(prog, sets, reps, clock=time.perf_counter):
    per: dict[int, list] = {i: [] for i in range(len(prog.kernels))}
    par: dict[int, list] = {i: [] for i in range(len(prog.kernels))}
    from ..runtime import cpu as cpu_runtime
    saved = [k.fns for k in prog.kernels]
    product, before = cpu_runtime.matmul, [0.0]

    def timed_product(*a):              # (by the wall clock: BLAS runs on its own threads too)
        t0 = time.perf_counter()
        r = product(*a)
        before[0] += (time.perf_counter() - t0) * 1e6
        return r
    calls = []
    try:
        cpu_runtime.matmul = timed_product
        for i, k in enumerate(prog.kernels):
            k.fns = tuple(_TimedFn(f, per[i], par[i] if j else None, clock, before) for j, f in enumerate(k.fns))
        for i in range(reps):
            ins = sets[i % len(sets)]
            t0 = time.perf_counter()
            prog(ins)
            calls.append((time.perf_counter() - t0) * 1e6)
    finally:
        cpu_runtime.matmul = product
        for k, f in zip(prog.kernels, saved):
            k.fns = f
    note = "CPU: perf_counter around each kernel's Numba call, a matmul group's BLAS product with it; allocation in other_us"
    return per, calls, note, {i: len(p) for i, p in par.items()}


class _TimedLauncher:
    """A GPU launcher with CUDA events recorded around each launch."""

    def __init__(self, inner, events, store: list):
        self.inner, self.events, self.store = inner, events, store

    def __call__(self, *a, **kw):
        s, e = self.events.new_event(), self.events.new_event()
        self.events.record(s)
        r = self.inner(*a, **kw)
        self.events.record(e)
        self.store.append((s, e))
        return r

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


SPIN_US_PER_CALL = 60      # device time a spin holds the stream for each queued call (a cached call's host
                           # work is 10-40 us; a tiny kernel's events around its call measured that, 5x
                           # its 4 us, where the host fell behind the device)


def _spin(us: float) -> None:
    """Keep the current stream busy for ``us`` microseconds (one thread polling the global timer)."""
    import cupy
    global _SPIN
    if _SPIN is None:
        _SPIN = cupy.RawKernel(r"""extern "C" __global__ void kf_spin(unsigned long long ns) {
          unsigned long long t0, t;
          asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
          do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
        }""", "kf_spin")
    _SPIN((1,), (1,), (cupy.uint64(int(us * 1000)),))


_SPIN = None


def _measure_gpu(prog, ins, reps):
    from .timing import EventAPI
    ev = EventAPI.cupy()
    n = len(prog.plan.groups)
    marks: dict[int, list] = {i: [] for i in range(n)}
    whole = []

    def calls():
        _spin(reps * SPIN_US_PER_CALL)      # the calls queue up behind it: their GPU time, not the host's
        for _ in range(reps):
            s, e = ev.new_event(), ev.new_event()
            ev.record(s)
            prog(ins)
            ev.record(e)
            whole.append((s, e))
        ev.synchronize()
    if n == 1:          # one kernel: the program's call is the kernel (events around the call)
        calls()
        t = [ev.elapsed_ms(s, e) * 1e3 for s, e in whole]
        return {0: t}, t, "GPU: one kernel, CUDA events around the call (queued behind a spin: device time)"
    saved = prog.launchers
    try:
        prog.launchers = [_TimedLauncher(launch, ev, marks[i]) for i, launch in enumerate(saved)]
        calls()
    finally:
        prog.launchers = saved
    per = {i: [ev.elapsed_ms(s, e) * 1e3 for s, e in m] for i, m in marks.items()}
    return per, [ev.elapsed_ms(s, e) * 1e3 for s, e in whole], \
        "GPU: CUDA events around each launcher, queued behind a spin (matmul groups: the epilogue launch only)"


# ---- text and inputs for the command line -------------------------------------------------------
def format_measured(rep: dict) -> str:
    """The per-kernel table under ``kfuse explain --measure``."""
    def us(x):
        return "-" if x is None else f"{x:.2f}"
    cpu = any(r.get("parallel_runs") is not None for r in rep["kernels"])
    lines = [f"measured on {rep['backend']} (plan for {rep['device']}): {rep['note']}",
             "  kernel  kind      predicted us  measured us  measured/predicted  " + ("pool  " if cpu else "") + "ops"]
    for r in rep["kernels"]:
        ratio = (r["measured_us"] / r["predicted_us"]) if r["measured_us"] and r["predicted_us"] else None
        pool = f"{r.get('parallel_runs') or 0}/{r['runs']}".rjust(4) + "  " if cpu else ""
        lines.append(f"  {r['kernel']:>6}  {r['kind']:<8}  {us(r['predicted_us']):>12}  {us(r['measured_us']):>11}  "
                     f"{'-' if ratio is None else f'{ratio:.2f}x':>18}  {pool}{r['ops']}")
    if cpu:
        lines.append("  pool: calls on the thread pool / calls (the rest ran on one thread)")
    lines.append(f"  total: predicted {us(rep['predicted_us'])} us, kernels {us(rep['kernels_us'])} us, "
                 f"whole call {us(rep['call_us'])} us (other {us(rep['other_us'])} us)")
    return "\n".join(lines)


def random_arguments(specs: list, on_gpu: bool, seed: int = 0) -> list:
    """Arrays (NumPy, or CuPy when ``on_gpu``) for spec strings or specs: floats standard normal,
    ints in [0, 2) (safe as indices), bools random; scalar specs give 1.0 / 1 / True."""
    from ..ir.specs import ArraySpec, ScalarSpec, spec_from_string
    rng = np.random.default_rng(seed)
    out = []
    for s in specs:
        sp = spec_from_string(s) if isinstance(s, str) else s
        if isinstance(sp, ScalarSpec):
            out.append(sp.pytype(1))
            continue
        if not isinstance(sp, ArraySpec):
            out.append(s)
            continue
        dt, shape = np.dtype(sp.dtype), tuple(sp.shape)
        if dt.kind == "f":
            a = rng.standard_normal(shape, dtype=np.float32).astype(dt)
        elif dt.kind == "b":
            a = rng.random(shape) < 0.5
        elif dt.kind in "iu":
            a = rng.integers(0, 2, size=shape).astype(dt)
        else:
            a = np.zeros(shape, dt)
        if on_gpu:
            import cupy
            a = cupy.asarray(a)
        out.append(a)
    return out


def explain_measure_text(fn, specs: list, device: str | None = None, backend: str | None = None) -> str:
    """``kfuse explain --measure``: random inputs of ``specs`` on the GPU where the device names
    one or the backend is a GPU backend ("cuda", "numba-cuda"), else on the host, then
    :func:`format_measured` of :func:`measure_kernels` on that backend."""
    from .. import backends
    chosen = None if backend is None or backend == backends.AUTO else backend
    on_gpu = device not in (None, "cpu") or (device is None and chosen is not None
                                             and not backends.get(chosen).on_host)
    args = random_arguments(list(specs), on_gpu)
    return format_measured(measure_kernels(fn, *args, device=device, backend=chosen))
