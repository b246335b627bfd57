"""CPU runtime: compile a fusion Plan to Numba kernels and run them on NumPy arrays.

``compile_plan(plan)`` lowers every group (``codegen.lower.lower_group``), emits its source
(``codegen.cpu.emit``) and gets the compiled functions through :func:`_compile_source`, which
memoises by source text (+ Numba/llvmlite versions): generated code never embeds sizes, so the same
kernel at a new size never recompiles. The returned :class:`CpuProgram` allocates outputs and
intermediates with NumPy, runs the kernels in plan order (skipping kernels whose outputs are all
empty), computes ``matmul`` products with ``np.matmul`` (exact NumPy semantics, integer wraparound
included) before their fused epilogue, and returns the graph outputs (``Plan.passthrough`` inputs
are returned as the caller's arrays).

Disk cache: every source is compiled through :func:`_compile_source` (the one place to wrap);
given a ``kfuse.runtime.cache.CacheStore`` it hands the dispatchers to
``kfuse.runtime.cpu_persist.load_or_compile`` so machine code is reloaded instead of recompiled.
Where Numba is not imported yet, a kernel's variants are ``cpu_native`` stand-ins that run its
stored native object (no Numba at all) and build the Numba dispatchers only when a call needs
them; this module imports Numba only through them.
"""
from __future__ import annotations

import linecache
import math
import threading
import time

import numpy as np

from ..codegen import cpu_blocks, cpu_schedule as CS
from ..codegen.phase_merge import rereading_form
from ..codegen.cpu import FN_NAME, emit, helper_work
from ..codegen.cpu_layout import allocate
from ..codegen.kernel_ir import Op as KOp
from ..codegen.lower import lower_group
from ..errors import CompileError
from ..fusion.kinds import GroupKind
from ..ir.ops import Op
from . import cpu_native
from .cpu_load import machine_busy
from .cpu_par_policy import ParState
from .cpu_threads import call_parallel, thread_cap

PARALLEL_MIN_ELEMENTS = 1 << 15     # below this a kernel runs single-threaded (the autotuner's default)
# Threads per call (untuned kernels): one thread below PAR_MIN_WORK (kernel_work), then one per
# PAR_WORK_PER_THREAD, capped by KFUSE_CPU_THREADS / Numba's pool. Measured on the 2-core dev box
# (a prange row sum vs range): idle, 2 threads win from ~16K elements (6.1 vs 7.1 us) and by 1.7x
# at 64K (16 vs 27 us); with other processes on the cores a parallel region's join waits for a
# descheduled worker: 8 ms minimum at 256K elements, where one thread takes 0.11 ms. So when the
# load average reaches the core count, only kernels past BUSY_PAR_MIN_WORK for each parallel loop
# they run (~22 ms on one thread a loop) take threads, and the rest degrade as NumPy's
# single-threaded loops do: with six runnable processes on the two cores every parallel loop
# waited ~12 ms (the corpus at 23:24: a layernorm 7.8 ms, a 32000-wide cross-entropy 11.9 ms, a
# column standardisation of four parallel loops 56 ms, against 1.7 ms on one thread), so a
# loop's threads pay only past twice that.
PAR_MIN_WORK = 1 << 18            # (work counts that row sum's load + add as 2 per element)
PAR_WORK_PER_THREAD = 1 << 17
BUSY_PAR_MIN_WORK = 1 << 28
# Whether a kernel that auto_threads gives threads runs its parallel variant yet (a second compile):
# runtime/cpu_par_policy.py, with the measured crossover.

_COMPILED: dict[tuple, tuple] = {}
_LOCK = threading.Lock()


def source_key(source: str) -> tuple:
    return (source, cpu_native.dist_version("numba"), cpu_native.dist_version("llvmlite"))


def _compile_source(source: str, fn_name: str, cache=None):
    """Execute a generated kernel module once per distinct source; returns ``(seq, par)`` Numba
    dispatchers (compiled lazily per argument types on first call). With a disk ``cache``
    (a ``kfuse.runtime.cache.CacheStore``) the dispatchers load/save machine code through
    ``kfuse.runtime.cpu_persist``; without one they compile in memory. With a cache and Numba
    not imported, ``cpu_native``'s stand-ins instead (the dispatchers built when needed)."""
    key = source_key(source)
    hit = _COMPILED.get(key)
    if hit is not None:
        return hit
    with _LOCK:
        hit = _COMPILED.get(key)
        if hit is not None:
            return hit
        hit = cpu_native.lazy_pair(source, fn_name, cache, lambda: _numba_pair(source, fn_name, cache))
        if hit is None:
            hit = _numba_pair(source, fn_name, cache, locked=True)
        _COMPILED[key] = hit
        return hit


def _numba_pair(source: str, fn_name: str, cache, locked: bool = False):
    """The Numba dispatchers of ``source`` (``_build``), an emitter's bug shown with its source."""
    if not locked:
        with _LOCK:
            return _numba_pair(source, fn_name, cache, locked=True)
    try:
        return _build(source, fn_name, cache)
    except CompileError:
        raise
    except Exception as e:          # a bug in the emitter: show the source
        raise CompileError(f"kfuse: generated CPU source for {fn_name} does not load: {e}\n"
                           f"{source}") from e


def _build(source: str, fn_name: str, cache):
    from . import cpu_persist
    modname = cpu_persist.module_name_for(source)
    filename = f"<kfuse:{modname}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    if cache is not None:
        glb = cpu_persist.exec_module(source, modname)        # one exec, two dispatchers
        key = {"backend": "cpu", "kernel": fn_name}
        fns = []
        for p in (False, True):
            disp = cpu_persist.exec_source(source, fn_name, glb=glb, parallel=p,
                                           **cpu_native.SEQ_OPTIONS)
            cpu_persist.attach(disp, cache, dict(key, parallel=p), source, fn_name, native=not p)
            fns.append(disp)
        return tuple(fns)
    ns: dict = {"__name__": modname}
    exec(compile(source, filename, "exec"), ns)
    return ns[f"{fn_name}_seq"], ns[f"{fn_name}_par"]


def _arg(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint16) if a.dtype == np.float16 else a


def default_parallel(group) -> bool:
    """The untuned choice of the parallel (``prange``) variant: an outer loop exists and the
    kernel is large enough. Matmul epilogues stay sequential: the BLAS product is multithreaded
    already, and a parallel epilogue leaves Numba's threads spinning while the next call's BLAS
    threads start (measured: P5 512^3 8.5 ms with a parallel epilogue, 3.1 ms sequential)."""
    if group.kind in (GroupKind.MATMUL, GroupKind.SCATTER):
        return False
    outer = [d for d in range(len(group.domain)) if d not in group.axes and group.domain[d] != 1]
    n = int(np.prod(group.domain, dtype=np.int64)) if group.domain else 1
    return bool(outer) and n >= PARALLEL_MIN_ELEMENTS


# Relative per-element cost of an op in the generated loop: a libm call (Numba's scalar np.sin,
# float64 np.sin, ...; the emitter's vectorised helpers count less: codegen.cpu.helper_work) costs about as
# much as 16 simple ops (a 4096x1024 f32 log/log1p row loss through libm: 45 ms on one thread, a
# row sum 2 ms).
_LIBM = {"exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sin", "cos", "tan", "arcsin",
         "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "power",
         "arctan2", "hypot", "logaddexp", "logaddexp2", "cbrt"}


def kernel_work(kir) -> int:
    """A kernel's cost in simple-op element-passes: its domain's size times (the loops it runs
    over the domain + the cost of its ops, a libm call counting 16)."""
    n = math.prod(kir.extent(d) for d in range(len(kir.domain)))
    ops = 0
    for ph in kir.phases:
        for s in ph.pre + ph.body:
            if isinstance(s, KOp):
                ops += 1 if s.op not in _LIBM else helper_work(s.op, s.dtype)
    return n * (max(1, sum(ph.has_loop for ph in kir.phases)) + ops)


def auto_threads(k: "_Kernel", cap: int | None = None) -> int:
    """Threads for an untuned kernel's call (1: the sequential variant); see PAR_MIN_WORK.
    ``cap`` (default :func:`~kfuse.runtime.cpu_threads.thread_cap`) is asked for only when the
    kernel is large enough to share, so small kernels never start the thread pool."""
    if not k.parallel_ok or k.work < PAR_MIN_WORK:
        return 1
    if cap is None:
        cap = thread_cap()
    if cap <= 1:
        return 1
    if k.work < BUSY_PAR_MIN_WORK * k.loops and machine_busy():
        return 1
    return max(1, min(cap, k.work // PAR_WORK_PER_THREAD))


class _Variants:
    """A kernel's schedules (:mod:`kfuse.codegen.cpu_schedule`): the one for the inputs' strides
    of each call, its source emitted and compiled on first use (memoised by source)."""

    def __init__(self, kir, cache, korder: bool = False):
        self.kir, self.cache, self.korder = kir, cache, korder
        self.sizes = {p.name: p.value for p in kir.sizes}
        self.by_strides: dict = {}
        self.by_sched: dict = {}
        self.direct: dict = {}      # strides -> (seq, par, schedule) that take the arguments as they are
        self.accounts: dict = {}    # schedule -> ParState (when its parallel variant is worth it)
        self.last = None

    def rebind(self, kir) -> "_Variants":
        """The schedules of ``kir``, this kernel's IR at other sizes: the compiled ones shared."""
        new = _Variants(kir, self.cache, self.korder)
        new.by_sched, new.accounts, new.last = self.by_sched, self.accounts, self.last
        return new

    def schedule(self, ins) -> CS.CpuSchedule:
        key = tuple(a.strides for a in ins)
        sched = self.by_strides.get(key)
        if sched is None:
            sched = self.by_strides[key] = CS.choose(self.kir, ins, self.sizes, self.korder)
        return sched

    def account(self, ins) -> tuple[ParState, CS.CpuSchedule]:
        """The parallel-variant account of the schedule for inputs ``ins``, and that schedule."""
        sched = self.schedule(ins)
        acc = self.accounts.get(sched)
        if acc is None:
            acc = self.accounts[sched] = ParState()
        return acc, sched

    def compiled(self, sched):
        hit = self.by_sched.get(sched)
        if hit is None:
            # the cols order reads memory again in every pass: a variance's two passes in one,
            # independent reductions (min and max) in one
            kir = rereading_form(self.kir) if sched.order == "cols" else self.kir
            src = emit(kir, sched)
            hit = self.by_sched[sched] = (src,) + tuple(_compile_source(src, FN_NAME, self.cache))
        self.last = sched
        return hit


class _Call:
    """``fns[0]``/``fns[1]`` of a kernel: called as the unscheduled kernel was (inputs, outputs,
    sizes), it picks the schedule for the inputs' strides and passes the arguments it takes
    (``cpu_schedule.call_args``: buffers joined, outputs in the loop order, a block size)."""
    __slots__ = ("v", "par", "nin", "nout", "shaped")

    def __init__(self, variants: _Variants, par: bool):
        self.v, self.par = variants, par
        self.nin, self.nout = len(variants.kir.inputs), len(variants.kir.outputs)
        self.shaped: dict = {}      # (strides, threads) -> how call_args shaped the arguments

    def __call__(self, *args):
        v, nin = self.v, self.nin
        key = tuple([a.strides for a in args[:nin]])
        hit = v.direct.get(key)
        if hit is not None:                     # the hot path: nothing to collapse or add
            v.last = hit[2]
            hit[self.par](*args)
            return
        threads = thread_cap() if self.par else 1
        got = self.shaped.get((key, threads))
        if got is not None:                     # the arguments shaped as call_args did before
            fn, sched, ops, extra = got         # (the shapes: this kernel's sizes, fixed)
            v.last = sched
            a = list(args)
            for j, perm, shape in ops:
                a[j] = (a[j].transpose(perm) if perm else a[j]).reshape(shape)
            fn(*a, *extra)
            return
        ins = list(args[:nin])
        sched = v.schedule(ins)
        _, seq, par = v.compiled(sched)
        if not (sched.flat or sched.perm or sched.merge) and sched.order not in ("cols", "blocks"):
            v.direct[key] = (seq, par, sched)
        got, alone = CS.call_args(v.kir, sched, ins, args, nin, threads)
        fn = seq if alone or not self.par else par
        n = nin + self.nout
        ops = tuple((j, sched.perm if j >= nin else (), b.shape) for j, (a, b) in enumerate(zip(args[:n], got[:n]))
                    if b is not a)
        self.shaped[(key, threads)] = (fn, sched, ops, got[len(args):])
        fn(*got)


class _Kernel:
    __slots__ = ("group", "kir", "variants", "fns", "sizes", "parallel", "threads", "tuned",
                 "work", "parallel_ok", "calls", "out_specs", "plain", "f16", "size_args", "loops")

    def __init__(self, group, kir, variants: _Variants):
        self.group, self.kir, self.variants = group, kir, variants
        self.fns = (_Call(variants, False), _Call(variants, True))
        self.sizes = tuple(np.int64(p.value) for p in kir.sizes)
        self.size_args = list(self.sizes)
        self.parallel = default_parallel(group)
        self.parallel_ok = group.kind not in (GroupKind.MATMUL, GroupKind.SCATTER) and \
            (bool(kir.loop_dims(kir.outer)) or cpu_blocks.eligible(kir))
        self.work = kernel_work(kir)
        # parallel loops a call runs (each a fork and join), in the schedule compiled first
        self.loops = max(1, self.source.count("numba.prange(")) if variants.last is not None else 1
        self.threads = 0  # 0: Numba's current thread count
        self.tuned = False  # set_variant (the autotuner) fixed variant and threads
        self.calls = 0      # calls run through launch()
        self.out_specs = [(n.shape, n.dtype) for n in group.outputs]
        # plain: fresh outputs, none empty, no product: the call path without the cases below
        self.plain = not (group.in_place or kir.init_from or kir.contraction is not None
                          or any(0 in shape for shape, _ in self.out_specs))
        self.f16 = any(np.dtype(n.dtype) == np.float16 for n in group.inputs + group.outputs)

    def out_perm(self, ins: list) -> tuple:
        """The layout of the outputs for inputs ``ins`` (``cpu_layout.allocate``): NumPy's K order
        where the kernel takes it (``korder_groups``), else () for C order."""
        return self.variants.schedule(ins).perm if self.variants.korder else ()

    def seq_form(self, ins: list) -> tuple | None:
        """How the sequential variant took its arguments on its last call with inputs of these
        strides: ``(dispatcher, ops, extra)`` (``ops``: ``(position, perm, shape)`` of each
        argument transposed and reshaped, ``extra``: arguments appended, as ``_Call`` passes
        them), or None where it has not run for them."""
        key = tuple(a.strides for a in ins)
        hit = self.variants.direct.get(key)
        if hit is not None:
            return hit[0], (), ()
        got = self.fns[0].shaped.get((key, 1))
        return None if got is None else (got[0], got[2], tuple(got[3]))

    @property
    def source(self) -> str:
        """The source of the schedule last run (before any call: C-contiguous inputs')."""
        return self.variants.compiled(self.variants.last)[0]


class CpuProgram:
    """A compiled plan: ``program(inputs) -> outputs`` (graph.inputs order in, graph.outputs out)."""

    def __init__(self, plan, kernels: list[_Kernel]):
        self.plan = plan
        self.kernels = kernels
        self._in_specs = [(n, n.shape, n.dtype) for n in plan.graph.inputs]
        self._stages: dict | None = None    # rendered when read (a new size's program may never be)
        self._shown: tuple = ()

    @property
    def stages(self) -> dict[str, str]:
        """Printable stages: "kernel" (KernelIR) and "cpu", every kernel's source in the schedule
        it last ran (rendered again when a call's strides chose another one since)."""
        shown = tuple(k.variants.last for k in self.kernels)
        if self._stages is None:
            self._stages = {"kernel": "\n\n".join(k.kir.as_text() for k in self.kernels)}
        if "cpu" not in self._stages or any(a is not b for a, b in zip(shown, self._shown)):
            self._shown = shown
            self._stages["cpu"] = "\n\n".join(f"# ---- {k.kir.name} ----\n{k.source}" for k in self.kernels)
        return self._stages

    def rebind(self, plan, kirs, share: bool = True) -> "CpuProgram":
        """This program for ``plan``, the same plan at other sizes (each group's kernel IR equal to
        this program's but for its size values): nothing is emitted or compiled again. Not
        ``share``: a program of ``kirs`` compiled afresh (other code, same plan)."""
        if not share:
            return CpuProgram(plan, [_kernel(g, kir, k.variants.cache, k.variants.korder)
                                     for g, kir, k in zip(plan.groups, kirs, self.kernels)])
        return CpuProgram(plan, [_Kernel(g, kir, k.variants.rebind(kir))
                                 for g, kir, k in zip(plan.groups, kirs, self.kernels)])

    def set_variant(self, group_id: int, variant: str, threads: int = 0) -> None:
        """Use the parallel ("par") or sequential ("seq") kernel of a group (the autotuner's knob)."""
        for k in self.kernels:
            if k.group.id == group_id:
                k.parallel = variant == "par"
                k.threads = int(threads)
                k.tuned = True

    def __call__(self, arrays):
        graph = self.plan.graph
        if len(arrays) != len(graph.inputs):
            raise TypeError(f"kfuse: {graph.name} takes {len(graph.inputs)} array(s), got {len(arrays)}")
        env: dict = {}
        for (node, shape, dtype), a in zip(self._in_specs, arrays):
            if type(a) is not np.ndarray:
                a = np.asarray(a)
            if a.shape != shape or a.dtype != dtype:
                raise ValueError(f"kfuse: argument {node.attr('name')} is {a.dtype}{list(a.shape)}; "
                                 f"this program was compiled for {node.dtype}{list(node.shape)}")
            env[node] = a
        for k in self.kernels:
            self._run(k, env)
        outs = []
        for o in graph.outputs:
            if o in env:
                outs.append(env[o])
            elif o in self.plan.views:
                outs.append(env[o.inputs[0]].reshape(o.shape))
            elif o.op is Op.CONST:
                outs.append(np.full(o.shape, o.attr("value"), dtype=o.dtype))
            else:
                raise CompileError(f"kfuse: output {o!r} of {graph.name} is computed by no kernel")
        return outs

    def _run(self, k: _Kernel, env: dict) -> None:
        g = k.group
        ins = [env[n] for n in g.inputs]
        perm = k.out_perm(ins)
        if perm:                                # NumPy's K-order layout (codegen.cpu_layout)
            outs = [allocate(shape, dtype, perm) for shape, dtype in k.out_specs]
        else:
            outs = [np.empty(shape, dtype) for shape, dtype in k.out_specs]
        if not k.plain and not self._prepare(k, env, ins, outs):
            return
        for n, a in zip(g.outputs, outs):
            env[n] = a
        launch(k, ins, outs)

    def _prepare(self, k: _Kernel, env: dict, ins: list, outs: list) -> bool:
        """Outputs written in place or copied from a scatter's base, a product's operand: edits
        ``ins``/``outs``; False when there is nothing to run (empty outputs)."""
        g, kir = k.group, k.kir
        if g.in_place:                          # an argument's final value, written into it
            raise_failed_checks(self.plan.graph, env)
            for o, base in g.in_place:
                outs[o] = env[base]
        for o, i in kir.init_from:              # a scatter's base: the output starts as its copy
            if self.plan.scatters_into_argument(g):
                raise_failed_checks(self.plan.graph, env)
                outs[o] = ins[i]                # (or is the argument itself, written in place,
            elif self.plan.scatters_in_place(g):
                outs[o] = ins[i]                # or the base's buffer, dead after this kernel)
            else:
                np.copyto(outs[o], ins[i])
        if all(a.size == 0 for a in outs) or (kir.init_from and not math.prod(g.domain)):
            for n, a in zip(g.outputs, outs):
                env[n] = a
            return False
        c = kir.contraction
        if c is not None:
            ins.append(matmul(ins, c))
        return True


def launch(k: _Kernel, ins: list, outs: list) -> None:
    """Run kernel ``k`` on its inputs and allocated outputs, on the threads chosen for it (tuned,
    or ``auto_threads`` once the parallel variant is worth getting: ``cpu_par_policy``)."""
    account = None
    if k.tuned:
        parallel, threads = k.parallel, k.threads
    elif k.work < PAR_MIN_WORK:             # (auto_threads' first test, inline: the hot path)
        parallel, threads = False, 1
    else:
        threads = auto_threads(k)
        parallel = False
        if threads > 1:
            account, parallel = _parallel_now(k, ins, threads)
    k.calls += 1
    if k.f16:
        args = [_arg(a) for a in ins] + [_arg(a) for a in outs] + k.size_args
    else:
        args = ins + outs + k.size_args
    if parallel:
        call_parallel(k.fns[1], args, threads)
    elif account is None:
        k.fns[0](*args)
    else:                                   # what threads would have saved: the account's rent
        t0 = time.perf_counter()
        k.fns[0](*args)
        account.pay(time.perf_counter() - t0, threads, k.work)


def _parallel_now(k: _Kernel, ins: list, threads: int) -> tuple:
    """(the account to charge a sequential call to, or None; whether this call runs the parallel
    variant) for an untuned kernel that ``auto_threads`` gives ``threads``."""
    account, sched = k.variants.account(ins)
    if account.ready:
        return None, True
    if account.renting(k.work, threads):
        return account, False
    _, seq, par = k.variants.compiled(sched)
    if account.buy(k.work, threads, seq, par):
        return None, True
    return account, False


def raise_failed_checks(graph, env) -> None:
    """NumPy's error for a check already computed (in ``env``) that failed: called before a
    kernel writes into an argument in place (``Plan.scatters_into_argument``,
    ``KernelGroup.in_place``)."""
    graph.raise_failed_checks(lambda k: bool(env[graph.outputs[k]]))


def matmul(ins, c) -> np.ndarray:
    def operand(i, steps):
        a = ins[i]
        for kind, arg in steps:
            a = a.astype(np.dtype(arg)) if kind == "cast" else a.transpose(arg)
        return a
    r = np.matmul(operand(c.lhs, c.lhs_steps), operand(c.rhs, c.rhs_steps))
    return r.astype(np.dtype(c.dtype), copy=False)


def compile_plan(plan, cache=None) -> CpuProgram:
    """Lower, emit and compile (memoised by source) every kernel of ``plan``."""
    free = korder_groups(plan)
    return CpuProgram(plan, [_kernel(g, lower_group(g), cache, g.id in free) for g in plan.groups])


def korder_groups(plan) -> set:
    """The elementwise groups whose outputs take NumPy's K-order layout (``codegen.cpu_layout``):
    each output a result of the function that nothing else reads (no later kernel, no returned
    reshape), written to fresh memory."""
    graph = plan.graph
    read = {n for g in plan.groups for n in g.inputs} | {o.inputs[0] for o in plan.views}
    outs = set(graph.outputs)
    return {g.id for g in plan.groups
            if g.kind == GroupKind.ELEMENTWISE and not g.in_place
            and all(o in outs and o not in read and o.ndim == len(g.domain) for o in g.outputs)}


def _kernel(g, kir, cache, korder: bool = False) -> _Kernel:
    """Group ``g``'s kernel of ``kir``, its contiguous inputs' schedule compiled."""
    variants = _Variants(kir, cache, korder and not (kir.init_from or kir.contraction is not None))
    metas = [CS.Meta(b.shape, np.dtype(b.dtype).itemsize) for b in kir.inputs]
    variants.compiled(CS.choose(kir, metas, variants.sizes))
    return _Kernel(g, kir, variants)
