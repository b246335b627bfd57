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
"""
from __future__ import annotations

import linecache
import math
import threading

import llvmlite
import numba
import numpy as np

from ..codegen.cpu import FN_NAME, emit
from ..codegen.lower import lower_group
from ..errors import CompileError
from ..ir.ops import Op

PARALLEL_MIN_ELEMENTS = 1 << 15     # below this a kernel runs single-threaded

_COMPILED: dict[tuple, tuple] = {}
_LOCK = threading.Lock()


def source_key(source: str) -> tuple:
    return (source, numba.__version__, llvmlite.__version__)


def _compile_source(source: str, fn_name: str, cache=None):
    """Execute a generated kernel module once per distinct source; returns ``(seq, par)`` Numba
    dispatchers (compiled lazily per argument types on first call). With a disk ``cache``
    (a ``kfuse.runtime.cache.CacheStore``) the dispatchers load/save machine code through
    ``kfuse.runtime.cpu_persist``; without one they compile in memory."""
    key = source_key(source)
    hit = _COMPILED.get(key)
    if hit is not None:
        return hit
    with _LOCK:
        hit = _COMPILED.get(key)
        if hit is not None:
            return hit
        try:
            hit = _build(source, fn_name, cache)
        except CompileError:
            raise
        except Exception as e:          # a bug in the emitter: show the source
            raise CompileError(f"kfuse: generated CPU source for {fn_name} does not load: {e}\n"
                               f"{source}") from e
        _COMPILED[key] = hit
        return hit


def _build(source: str, fn_name: str, cache):
    from . import cpu_persist
    modname = cpu_persist.module_name_for(source)
    filename = f"<kfuse:{modname}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    if cache is not None and hasattr(cache, "get") and hasattr(cache, "put"):
        opts = dict(error_model="numpy", nogil=True)
        key = {"backend": "cpu", "kernel": fn_name}
        seq = cpu_persist.load_or_compile(cache, dict(key, parallel=False), source, fn_name,
                                          parallel=False, **opts)
        par = cpu_persist.load_or_compile(cache, dict(key, parallel=True), source, fn_name,
                                          parallel=True, **opts)
        return seq, par
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
    if group.kind in ("matmul", "scatter"):
        return False
    outer = [d for d in range(len(group.domain)) if d not in group.axes and group.domain[d] != 1]
    n = int(np.prod(group.domain, dtype=np.int64)) if group.domain else 1
    return bool(outer) and n >= PARALLEL_MIN_ELEMENTS


class _Kernel:
    __slots__ = ("group", "kir", "source", "fns", "sizes", "parallel", "threads")

    def __init__(self, group, kir, source, fns):
        self.group, self.kir, self.source, self.fns = group, kir, source, fns
        self.sizes = tuple(np.int64(p.value) for p in kir.sizes)
        self.parallel = default_parallel(group)
        self.threads = 0  # 0: Numba's current thread count


class CpuProgram:
    """A compiled plan: ``program(inputs) -> outputs`` (graph.inputs order in, graph.outputs out)."""

    def __init__(self, plan, kernels: list[_Kernel]):
        self.plan = plan
        self.kernels = kernels
        self.stages = {
            "kernel": "\n\n".join(k.kir.as_text() for k in kernels),
            "cpu": "\n\n".join(f"# ---- {k.kir.name} ----\n{k.source}" for k in kernels),
        }

    def set_variant(self, group_id: int, variant: str, threads: int = 0) -> None:
        """Use the parallel ("par") or sequential ("seq") kernel of a group (the autotuner's knob)."""
        for k in self.kernels:
            if k.group.id == group_id:
                k.parallel = variant == "par"
                k.threads = int(threads)

    def __call__(self, arrays):
        graph = self.plan.graph
        if len(arrays) != len(graph.inputs):
            raise TypeError(f"kfuse: {graph.name} takes {len(graph.inputs)} array(s), got {len(arrays)}")
        env: dict = {}
        for node, a in zip(graph.inputs, arrays):
            a = np.asarray(a)
            if a.shape != node.shape or a.dtype != node.dtype:
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
        g, kir = k.group, k.kir
        ins = [env[n] for n in g.inputs]
        outs = [np.empty(n.shape, dtype=n.dtype) for n in g.outputs]
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
        for n, a in zip(g.outputs, outs):
            env[n] = a
        if all(a.size == 0 for a in outs) or (kir.init_from and not math.prod(g.domain)):
            return
        c = kir.contraction
        if c is not None:
            ins.append(matmul(ins, c))
        fn = k.fns[1] if k.parallel else k.fns[0]
        args = [_arg(a) for a in ins] + [_arg(a) for a in outs]
        if k.parallel and k.threads and k.threads != numba.get_num_threads():
            old = numba.get_num_threads()
            numba.set_num_threads(k.threads)
            try:
                fn(*args, *k.sizes)
            finally:
                numba.set_num_threads(old)
        else:
            fn(*args, *k.sizes)


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
    from .. import config
    threads = config.get().cpu_threads
    if threads:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    kernels = []
    for g in plan.groups:
        kir = lower_group(g)
        src = emit(kir)
        kernels.append(_Kernel(g, kir, src, _compile_source(src, FN_NAME, cache)))
    return CpuProgram(plan, kernels)
