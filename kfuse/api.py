"""The public API: ``jit`` (JitFunction: signature -> cached program), ``explain``, and the
printable stages ``Lowered.as_text(stage)``.

Dispatch (the hot path) is one dictionary lookup keyed by each argument's type, dtype, shape and
strides (static arguments by value, Python scalars by type); on the CPU a hit of a plain program
then runs the direct call built for that key (``runtime.cpu_direct``). A miss of a shape class
whose trace is size-generic (``size_generic``) rebuilds its graph, plan and kernel IRs at the new
sizes without tracing; any other miss traces again; within a shape class (the key without sizes) the plan and compiled program of an earlier size are
reused (``runtime.shape_class``), else it plans and builds a program; compiled kernels are
memoised by their source text below this layer, so a new size never recompiles.
"""
from __future__ import annotations

import dataclasses
import functools
import gc
import inspect
import logging
from typing import Any, Callable

import numpy as np

from . import backends as _backends
from . import config as _config
from . import logs
from .backends import Backend, Feature
from .dask.detect import has_dask_arrays
from .errors import UnsupportedError
from .ir.graph import Graph
from .ir.specs import ArgSpec, ArraySpec, GeneratorSpec, StaticSpec, spec_of_value
from .call_entry import Entry
from .dispatch_guard import MISS, never
from .dispatch_keys import UNCACHEABLE, array_kind, class_key, flat_key, keyer, static_type
from .runtime.seeds import Seeds
from .runtime.signatures import compile_reason, compile_signature

BACKENDS = (_backends.AUTO, *_backends.names())
AUTOTUNE_MODES = ("off", "cached", "on")
STAGES = ("traced", "optimized", "fused", "kernel", *_backends.stages())


@dataclasses.dataclass(frozen=True)
class JitOptions:
    backend: str = "auto"
    static_argnames: tuple[str, ...] = ()
    autotune: str | None = None     # None: config.autotune (KFUSE_AUTOTUNE, default "cached")
    device: str | None = None       # DeviceSpec name used for planning ("h100", "cpu", ...)
    allow_tf32: bool = False
    fullgraph: bool = False         # refuse a graph break (UnsupportedError) instead of segments

    def __post_init__(self):
        if self.backend not in BACKENDS:
            raise ValueError(f"kfuse.jit: backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.autotune is not None and self.autotune not in AUTOTUNE_MODES:
            raise ValueError(f"kfuse.jit: autotune must be one of {AUTOTUNE_MODES}, got {self.autotune!r}")


def jit(fn: Callable | None = None, *, backend: str = "auto", static_argnames=(),
        autotune: str | None = None, device: str | None = None, allow_tf32: bool = False,
        fullgraph: bool = False):
    """Compile a NumPy-style function into fused kernels: ``@kfuse.jit`` or ``@kfuse.jit(...)``.
    What the tracer cannot follow is a graph break: the function runs in fused segments around it
    (``kfuse.breaks``), or with ``fullgraph=True`` raises UnsupportedError (``torch.compile``'s name)."""
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)
    opts = JitOptions(backend, tuple(static_argnames), autotune, device, allow_tf32, fullgraph)
    if fn is None:
        return lambda f: JitFunction(f, opts)
    return JitFunction(fn, opts)


def _operands_of(ufunc: np.ufunc) -> Callable:
    """A Python function of ``ufunc``'s input operands alone, named after it."""
    names = [f"x{k + 1}" for k in range(ufunc.nin)]
    ns: dict = {"ufunc": ufunc}
    exec(f"def {ufunc.__name__}({', '.join(names)}):\n    return ufunc({', '.join(names)})", ns)
    return ns[ufunc.__name__]


class JitFunction:
    """A jitted function: call it like the original; ``lower`` prints stages without running."""

    def __init__(self, fn: Callable, options: JitOptions = JitOptions()):
        if isinstance(fn, np.ufunc):    # kfuse.jit(np.exp): its operands (its signature also lists out=, dtype=...)
            fn = _operands_of(fn)
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.options = options
        self._signature = inspect.signature(fn)
        self._params = list(self._signature.parameters)
        self._nparams = len(self._params)
        for name in options.static_argnames:
            if name not in self._params:
                raise ValueError(f"kfuse.jit: static_argnames names {name!r}, which is not a parameter of {fn.__name__}")
        self._static = frozenset(options.static_argnames)
        self._programs: dict[tuple, "Entry"] = {}
        self._guard = never             # the last called entry's guard (dispatch_guard)
        self._compiled_sigs: dict[tuple, None] = {}   # (dtype, rank, broadcast pattern) per argument, in order
        self._recompiles = None
        self.compile_count = 0
        self._classes: dict[tuple, Any] = {}      # shape class -> runtime.shape_class.ShapeClass
        # (shape class, pattern of equal dims) -> (size_generic.SizeGeneric, backend, store), or
        # None where a trace there could not be made size-generic
        self._generics: dict[tuple, Any] = {}
        self._sizes_read = False        # whether the last trace read a size (trace.size_reads)
        self.retrace_count = 0          # traces after the first: new sizes traced again (their
        #                                 kernels reused or not), probe traces (size_generic)
        self.untraced_count = 0         # new sizes built from a size-generic trace, not traced
        self._last_build: str | Callable[[], str] = ""     # last_build, or what words it when read

    @property
    def last_build(self) -> str:
        """What the last build did and why (``explain``, logs)."""
        text = self._last_build
        if callable(text):
            text = self._last_build = text()
        return text

    @last_build.setter
    def last_build(self, text: str | Callable[[], str]) -> None:
        self._last_build = text

    # ---- argument handling -------------------------------------------------------------
    def _bind(self, args, kwargs) -> dict[str, Any]:
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.fn.__name__}(): {e}") from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def _static_names(self, values: dict[str, Any], *, abstract_ok: bool) -> frozenset:
        """``static_argnames`` and the arguments passed as they are by their type (``static_type``;
        in ``lower()`` a string is an argument spec, unless it is the parameter's default)."""
        params = self._signature.parameters
        return self._static | {n for n, v in values.items() if static_type(type(v)) and not (
            abstract_ok and isinstance(v, str) and v is not params[n].default)}

    def _specs(self, values: dict[str, Any], *, abstract_ok: bool, static=None) -> dict[str, ArgSpec]:
        if static is None:
            static = self._static_names(values, abstract_ok=abstract_ok)
        return {name: StaticSpec(v) if name in static else spec_of_value(v) for name, v in values.items()}

    # ---- stages --------------------------------------------------------------------------
    def trace(self, *args, **kwargs) -> Graph:
        return self._traced(self._bind(args, kwargs), abstract_ok=True)[0]

    def _traced(self, values: dict[str, Any], *, abstract_ok: bool) -> tuple[Graph, dict, frozenset]:
        """The graph, specs and static names of a trace. A Python int argument the function uses
        as a size (``x[:n]``, ``x.reshape(n, -1)``) becomes static from then on (its value in the
        dispatch key), as ``torch.compile`` specialises; one used only in arithmetic stays a
        run-time scalar."""
        from .trace import trace_function
        from .trace.core import SizeArgument
        from .trace.size_reads import watching
        while True:
            static = self._static_names(values, abstract_ok=abstract_ok)
            specs = self._specs(values, abstract_ok=abstract_ok, static=static)
            try:
                with watching() as reads:
                    graph = trace_function(self.fn, specs, self.fn.__name__)
                self._sizes_read = reads.seen
                return graph, specs, static
            except SizeArgument as e:
                names = {n for n in e.names if type(values.get(n)) is int} - static
                if not names:
                    raise UnsupportedError(str(e)) from None
                self._static = self._static | names

    def lower(self, *args, device: str | None = None, backend: str | None = None, **kwargs) -> "Lowered":
        """Trace and plan for these arguments (arrays or spec strings such as ``"f32[4096,4096]"``),
        for ``backend`` (default: the one a call with these arrays runs on)."""
        logs.configure(_config.get().debug)
        from .trace.core import GraphBreak
        try:
            graph = self.trace(*args, **kwargs)
        except GraphBreak as e:
            raise GraphBreak(f"{e}; {self.fn.__name__} has a graph break there, so its stages exist per "
                             "segment: kfuse.explain shows them", e.what, e.location, e.library) from None
        backend = backend or self.options.backend
        if backend == _backends.AUTO:     # arrays given: the backend a call with them would run on
            kinds = {array_kind(v) for v in self._bind(args, kwargs).values()} - {None}
            backend = _backends.for_arrays(backend, kinds, self.fn.__name__) if kinds else backend
        return Lowered(graph, device or self.options.device, backend, self.options)

    # ---- calling ---------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if not kwargs:
            out = self._guard(args)         # the last key's inline test (dispatch_guard)
            if out is not MISS:
                return out
            if len(args) == self._nparams:
                try:
                    entry = self._programs.get(self._key(args) if self._static else flat_key(args))
                except TypeError:  # unhashable static value
                    entry = None
                if entry is not None:
                    if not self._static:
                        self._guard = entry.guard_for(args) if type(entry) is Entry else never
                    return entry.run(args)
        values = self._bind(args, kwargs)
        from .trace.core import tracing
        if tracing():           # called inside another kfuse.jit function's trace
            return self._inline(args, kwargs, values)
        if has_dask_arrays(values.values()):
            return self._dask("call", values)
        args = tuple(values[p] for p in self._params)
        try:
            key = self._key(args)
            hash(key)
        except TypeError:
            raise TypeError(f"{self.fn.__name__}(): static arguments must be hashable") from None
        cacheable = not any(k is UNCACHEABLE for k in key)
        entry = self._programs.get(key) if cacheable else None
        if entry is None:
            self._guard = never         # (the build may make an argument static)
            if self._generics:
                out = self._new_size(args, cacheable)
                if out is not MISS:
                    return out
            entry = self._build(args)
            if cacheable:       # (the key again: the build may have made an int argument static)
                self._programs[self._key(args)] = entry
                if isinstance(entry, Entry):
                    entry.keyed = True
        return entry.run(args)

    def _inline(self, args: tuple, kwargs: dict, values: dict[str, Any]):
        """Inside a caller's trace: run the function on the caller's tracers, so that its ops join
        the caller's graph (one plan, fused across the call, as ``jax.jit`` inlines); this
        function's own options (backend, device) are the caller's business there."""
        from .trace.core import Tracer
        for name in self._static:
            if isinstance(values[name], Tracer):
                raise UnsupportedError(
                    f"kfuse: {self.fn.__name__}() called inside a traced function with static "
                    f"argument {name!r} a traced value: make it static in the caller too")
        return self.fn(*args, **kwargs)

    def _key(self, args: tuple) -> tuple:
        """The dispatch key (``flat_key``); static arguments by value, in a 1-tuple."""
        static = self._static
        if not static:
            return flat_key(args)
        key = []
        for n, a in zip(self._params, args):
            if n in static:
                key.append((a,))
            elif type(a) is np.ndarray:
                key += (a.dtype, a.shape, a.strides)
            else:
                key.append(keyer(type(a))(a))
        return tuple(key)

    def _new_size(self, args: tuple, cacheable: bool):
        """A call at a new size built from a size-generic trace (``_untraced``) and run, with the
        cyclic garbage collector held off until it returns; MISS where there is no such build.
        Why: a build allocates ~100-300 containers, so about one build in three starts a
        collection, and a generation-1 collection (~7000 young objects, whoever made them) takes
        0.6-1.4 ms of thread CPU here beside the build's own ~0.5 ms (layernorm's worst size,
        1.9 ms). Held off, that collection runs at the caller's next allocation: the build's
        latency bound, not less work for the collector."""
        paused = gc.isenabled()
        if paused:
            gc.disable()
        try:
            logs.configure(_config.get().debug)
            entry = self._untraced(args)
            if entry is None:
                return MISS
            if cacheable:
                self._programs[self._key(args)] = entry
                if isinstance(entry, Entry):
                    entry.keyed = True
            return entry.run(args)
        finally:
            if paused:
                gc.enable()

    def _build(self, args: tuple) -> "Entry":
        logs.configure(_config.get().debug)
        values = dict(zip(self._params, args))
        static = self._static_names(values, abstract_ok=False)
        kinds = {array_kind(v) for n, v in values.items() if n not in static} - {None}
        backend = _backends.for_arrays(self.options.backend, kinds, self.fn.__name__)
        for name, spec in self._specs(values, abstract_ok=False, static=static).items():
            if isinstance(spec, ArraySpec):
                from .ir.dtypes import BF16, check_supported
                check_supported(spec.dtype, f"argument {name!r} of {self.fn.__name__}")
                if spec.dtype == BF16 and Feature.BFLOAT16 not in backend.features:
                    raise UnsupportedError(f"kfuse: argument {name!r} of {self.fn.__name__} is bfloat16, which runs "
                                           f"on the CUDA C backend only (torch CUDA tensors), not {backend.name!r}: "
                                           "cast to float32 first")
        from .trace.core import GraphBreak
        try:
            graph, specs, static = self._traced(values, abstract_ok=False)
        except GraphBreak:
            if self.options.fullgraph:
                raise
            return self._segmented(values, backend)
        graph = _prepared(graph, backend)
        lowered = Lowered(graph, self.options.device, backend, self.options)
        from .runtime.shape_class import ShapeClass
        shapes = self._shape_class(args, ShapeClass)
        reused = shapes.reuse(lowered.optimized, lambda: lowered.plan) if shapes and shapes.templates else None
        if reused is not None:          # a new size: the class's plan and kernels, new sizes
            program, plan, store = reused.program, reused.plan, shapes.store
            self.retrace_count += 1
            self.last_build = functools.partial(_reused_text, specs, reused.replanned)  # (worded when read)
            if logs.logger.isEnabledFor(logging.DEBUG):
                logs.logger.debug("%s: %s", self.fn.__qualname__, self.last_build)
        else:
            if shapes is None:
                self.last_build = "built again: an argument without a shape class (a list, a CPU tensor)"
            elif shapes.templates:
                self.retrace_count += 1
                self.last_build = "the graph's structure or plan changed with the sizes: planned and lowered again"
            program, plan, store = self._compile(lowered, specs, backend)
            if shapes is not None:
                shapes.add(plan, program)
                shapes.store = shapes.store or store
        if shapes is not None and shapes.templates and not self._sizes_read:
            self._learn(args, specs, graph, lowered.optimized, program, shapes, backend)
        entry = self._entry(program, graph, specs, static, values, backend)
        self._tune(entry, args, plan, backend, store, program)
        return entry

    def _tune(self, entry: "Entry", args: tuple, plan, backend, store, program) -> None:
        """The autotuner's choice for this build (``autotune`` mode; a tuned lookup, or a search)."""
        mode = self.options.autotune or _config.get().autotune
        if mode != "off" and Feature.AUTOTUNE in backend.features:
            from .autotune.tuner import apply_known, known_choice, tune_and_apply
            known = known_choice(plan, backend, mode, program, store)
            if known is None:
                tune_and_apply(plan, entry.arrays(args), backend, mode, store, program)
            else:
                apply_known(program, known, backend)

    def _untraced(self, args: tuple) -> "Entry | None":
        """A new size built from its shape class's size-generic trace (``size_generic``): no
        trace, optimize, plan or lowering; None where there is none for these arguments."""
        from .size_generic import size_pattern
        key = self._class_key(args)
        sp = size_pattern(args) if key is not None else None
        if sp is None:
            return None
        pattern, sizes = sp
        hit = self._generics.get((key, pattern))
        if hit is None:
            return None
        generic, backend, store = hit
        built = generic.build(sizes)
        if built is None:
            return None
        graph, plan, program = built
        values = dict(zip(self._params, args))
        static = self._static_names(values, abstract_ok=False)
        specs = self._specs(values, abstract_ok=False, static=static)
        self.untraced_count += 1
        self.last_build = functools.partial(_untraced_text, specs)      # (worded when read)
        if logs.logger.isEnabledFor(logging.DEBUG):
            logs.logger.debug("%s: %s", self.fn.__qualname__, self.last_build)
        entry = self._entry(program, graph, specs, static, values, backend)
        self._tune(entry, args, plan, backend, store, program)
        return entry

    def _learn(self, args: tuple, specs: dict, graph: Graph, optimized: Graph, program, shapes, backend) -> None:
        """After a real build of a shape class: its size-generic trace for the arguments'
        pattern of equal dims, where the trace allows one (``size_generic.learn``; at most one
        probe trace per class and pattern)."""
        from . import size_generic as sg
        key = self._class_key(args)
        sp = sg.size_pattern(args) if key is not None else None
        if sp is None or (key, sp[0]) in self._generics or not sg.qualifies(graph, optimized, program):
            return
        pattern, sizes = sp
        if sum(1 for k, _ in self._generics if k == key) >= sg.MAX_PATTERNS:
            return

        def probe_trace(probe: tuple):
            from .trace import trace_function
            from .trace.size_reads import watching
            shapes_at = sg.probe_shapes(pattern, probe)
            pspecs = {n: dataclasses.replace(s, shape=sh) if sh is not None and isinstance(s, ArraySpec) else s
                      for (n, s), sh in zip(specs.items(), shapes_at)}
            self.retrace_count += 1
            try:
                with watching() as reads:
                    g = trace_function(self.fn, pspecs, self.fn.__name__)
            except Exception:          # (at other sizes the function fails: no generic trace)
                return None
            return None if reads.seen else _prepared(g, backend)

        from .fusion.pipeline import optimize
        generic = sg.learn(graph, optimized, program, shapes.templates, sizes, probe_trace, optimize)
        self._generics[(key, pattern)] = None if generic is None else (generic, backend, shapes.store)

    def _class_key(self, args: tuple) -> tuple | None:
        """The shape-class key of these arguments, None when one cannot be formed (an
        unhashable or uncacheable argument)."""
        static = self._static
        key = tuple(a if n in static else class_key(a) for n, a in zip(self._params, args))
        if any(k is UNCACHEABLE for k in key):
            return None
        try:
            hash(key)
        except TypeError:
            return None
        return key

    def _shape_class(self, args: tuple, make):
        """The shape class of these arguments (``runtime.shape_class``), None when one cannot be
        keyed (an unhashable or uncacheable argument)."""
        key = self._class_key(args)
        if key is None:
            return None
        sc = self._classes.get(key)
        if sc is None:
            sc = self._classes[key] = make()
        return sc

    def _compile(self, lowered: "Lowered", specs: dict, backend) -> tuple:
        """(program, plan, store) of a full build: plan, lower, emit, compile (memoised by source)."""
        store = _open_cache()
        if store is not None:       # new kernel entries name this function (`kfuse cache ls`)
            from .runtime.cache import LabelledStore
            store = LabelledStore(store, {
                "function": f"{self.fn.__module__}:{self.fn.__qualname__}",
                "signature": ", ".join(f"{k}: {v}" for k, v in specs.items()),
                "device": lowered.plan.device.name})
        program = lowered.compile(store)
        self._count_compile(specs)
        _log_compile(self.fn, specs, backend, program, self.last_build)
        if _config.get().dump_dir:
            _dump_stages(_config.get().dump_dir, self.fn.__name__, specs, program)
        return program, lowered.plan, store

    def _entry(self, program, graph: Graph, specs: dict, static, values: dict, backend) -> "Entry":
        dynamic = [n for n in self._params if n not in static and not isinstance(specs[n], GeneratorSpec)]
        entry = Entry(program, graph, [self._params.index(n) for n in dynamic],
                       [specs[n] for n in dynamic], backend, Seeds(graph, self._params) or None)
        # device arrays only: later calls with this key (argument types are in it) pass them to
        # the program as they are (it views torch tensors itself); CuPy arrays only: the key holds
        # each one's dtype, shape, strides and device, so the program need not check them again
        arg_kinds = [array_kind(values[n]) for n in dynamic]
        entry._device_arrays_only = not backend.on_host and all(k in ("cupy", "torch") for k in arg_kinds)
        if not backend.on_host and arg_kinds and all(k == "cupy" for k in arg_kinds):
            devices = {values[n].data.device_id for n in dynamic}
            entry._cupy_device = devices.pop() if len(devices) == 1 else None   # several: the program says so
        if not backend.on_host and arg_kinds and all(k == "torch" for k in arg_kinds):
            devices = {values[n].get_device() for n in dynamic}
            entry._torch_device = devices.pop() if len(devices) == 1 else None
        return entry

    def _dispatch_notes(self, args: tuple, kwargs: dict) -> tuple[str, ...]:
        """What a call with these arguments would build, after this function's calls so far
        (``explain``): a compile and the argument that caused it, or a new size's retrace."""
        specs = self._specs(self._bind(args, kwargs), abstract_ok=True)
        sigs = tuple(compile_signature(s) for s in specs.values())
        if sigs in self._compiled_sigs:
            now = ("dispatch: compiled before for these dtypes, ranks and broadcast patterns: "
                   "a new size is traced again and reuses the kernels")
        else:
            now = "dispatch: a call would compile: " + compile_reason(self._compiled_sigs, sigs, list(specs))
        return (now, f"last build: {self.last_build}") if self.last_build else (now,)

    def _count_compile(self, specs: dict[str, ArgSpec]) -> None:
        """Count a compile per new kernel signature (sizes don't count: they don't recompile);
        past the limit warn once, naming the argument that keeps changing."""
        sigs = tuple(compile_signature(s) for s in specs.values())
        if sigs in self._compiled_sigs:
            return
        self.last_build = "compiled: " + compile_reason(self._compiled_sigs, sigs, list(specs))
        self._compiled_sigs[sigs] = None
        self.compile_count += 1
        if self._recompiles is None:
            from .runtime.cache import RecompileCounter
            self._recompiles = RecompileCounter()
        msg = self._recompiles.record(self.fn.__qualname__, sigs, list(specs))
        if msg:
            msg += f" (this compile: {self.last_build[len('compiled: '):]})"
            import warnings
            from .runtime.cache import RecompileWarning
            warnings.warn(msg, RecompileWarning, stacklevel=5)   # user -> __call__ -> _build -> _compile -> here

    def _segmented(self, values: dict[str, Any], backend: Backend | str):
        """The runner of a signature whose whole-function trace breaks (``kfuse.breaks``)."""
        from .breaks import SegmentedEntry
        specs = self._specs(values, abstract_ok=False)
        return SegmentedEntry(self.fn, self.fn.__name__, specs, _SegmentCompiler(self, backend))

    # ---- Dask arrays (kfuse.dask) ---------------------------------------------------------
    def _dask(self, what: str, values: dict[str, Any]):
        """``call`` (lazy Dask arrays) or ``explain`` (the chunk plan) on Dask arguments."""
        from . import dask as kdask
        return getattr(kdask, what)(self, self._specs(values, abstract_ok=False), values)

    def _chunk_program(self, graph: Graph, backend: Backend):
        """The program of a chunk graph built by ``kfuse.dask``, planned and compiled as a call's."""
        return Lowered(graph, self.options.device, backend, self.options).compile(_open_cache())

    def __reduce__(self):
        """Pickled (Dask ships tasks so) as the Python function and options, never compiled code:
        where it is unpickled it compiles, or loads from its disk cache, by itself."""
        return (JitFunction, (self.fn, self.options))

    def __repr__(self) -> str:
        return f"<kfuse.jit {self.fn.__module__}.{self.fn.__qualname__} backend={self.options.backend}>"


class _SegmentCompiler:
    """What ``kfuse.breaks`` asks of this layer: a segment's graph planned, or compiled and
    wrapped as a call's ``Entry`` (its inputs the segmented run's values, in order)."""

    def __init__(self, jf: JitFunction, backend: Backend | str):
        self.jf, self.backend = jf, backend

    def plan(self, graph: Graph):
        return Lowered(graph, self.jf.options.device, self.backend, self.jf.options).plan

    def entry(self, graph: Graph, specs: list) -> "Entry":
        if not _config.get().index_checks:
            graph = graph.without_checks()
        lowered = Lowered(graph, self.jf.options.device, self.backend, self.jf.options)
        if lowered.backend.on_host:
            graph = graph.with_host_checks_on_device()
            lowered = Lowered(graph, self.jf.options.device, lowered.backend, self.jf.options)
        program = lowered.compile(_open_cache())
        self.jf.compile_count += 1
        _log_compile(self.jf.fn, {f"in{i}": s for i, s in enumerate(specs)}, lowered.backend, program)
        return Entry(program, graph, list(range(len(specs))), specs, lowered.backend)


def _prepared(graph: Graph, backend: Backend) -> Graph:
    """A traced graph as a build takes it: without run-time checks (``KFUSE_INDEX_CHECKS=0``),
    or on a host backend with its host checks computed by the kernels."""
    if not _config.get().index_checks:
        return graph.without_checks()
    if backend.on_host:
        return graph.with_host_checks_on_device()
    return graph


def _untraced_text(specs: dict) -> str:
    """``JitFunction.last_build`` of a new size built from a size-generic trace."""
    return ("new sizes (" + ", ".join(f"{k}: {v}" for k, v in specs.items()) + "): not traced "
            "(the shape class's size-generic trace), kernels reused")


def _reused_text(specs: dict, replanned: bool) -> str:
    """``JitFunction.last_build`` of a new size that reused its shape class's kernels."""
    return ("new sizes (" + ", ".join(f"{k}: {v}" for k, v in specs.items()) + "): traced "
            + ("and planned again" if replanned else "again") + ", kernels reused")


def _log_compile(fn, specs: dict, backend: str, program, why: str = "") -> None:
    """The plan of a new compile and what caused it, at INFO on the ``kfuse`` logger
    (``KFUSE_DEBUG=1``)."""
    if logs.logger.isEnabledFor(logging.INFO):
        sig = ", ".join(f"{k}: {v}" for k, v in specs.items())
        logs.logger.info("compiled %s.%s(%s) for %s (%s):\n%s", fn.__module__, fn.__qualname__, sig,
                         backend, why or "new sizes whose structure changed", program.plan)


def _dump_stages(root: str, name: str, specs: dict, program) -> None:
    """KFUSE_DUMP_DIR: every stage of this compile in ``root/<fn>-<signature hash>/``."""
    import hashlib
    import os
    sig = ", ".join(f"{k}: {v}" for k, v in specs.items())
    d = os.path.join(root, f"{name}-{hashlib.sha256(sig.encode()).hexdigest()[:12]}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "signature.txt"), "w") as f:
        f.write(sig + "\n")
    with open(os.path.join(d, "fused.txt"), "w") as f:
        f.write(str(program.plan) + "\n")
    with open(os.path.join(d, "optimized.txt"), "w") as f:
        f.write(program.plan.graph.as_text() + "\n")
    for stage, text in getattr(program, "stages", {}).items():
        ext = {"cpu": "py", "cuda": "cu", "numba": "py", "ptx": "ptx"}.get(stage, "txt")
        with open(os.path.join(d, f"{stage}.{ext}"), "w") as f:
            f.write(text + "\n")




class Lowered:
    """A traced function planned for one device and backend; ``as_text(stage)`` prints any stage."""

    def __init__(self, graph: Graph, device: str | None, backend: str | Backend, options: JitOptions):
        self.graph = graph
        self.backend = _backends.get(backend) if backend != _backends.AUTO else _auto_backend(device)
        self.options = options
        self._device_name = device
        self._optimized = None
        self._plan = None

    @property
    def optimized(self) -> Graph:
        if self._optimized is None:
            from .fusion.pipeline import optimize
            self._optimized = optimize(self.graph)
        return self._optimized

    @property
    def plan(self):
        """The fusion plan, with a refusal for every kernel the backend cannot run (the compile
        raises the first; ``explain`` shows them all)."""
        if self._plan is None:
            from .fusion.pipeline import plan
            device = self._device_name
            if device is None:
                device = _config.get().device or self.backend.default_device
            p = plan(self.optimized, device)
            if _backends.Feature.ATTENTION not in self.backend.features:
                from .fusion.attention import without_attention
                p = without_attention(p, self.backend.name)
            refused = self.backend.refusals(p)
            self._plan = dataclasses.replace(p, refused=p.refused + refused) if refused else p
        return self._plan

    def kernels(self, for_gpu: bool = False):
        """KernelIR of every non-matmul group (matmul groups run a GEMM plus an epilogue). Every
        backend lowers the same KernelIR; ``for_gpu`` is accepted for callers that say which."""
        from .codegen.lower import lower_group
        return [lower_group(g) for g in self.plan.groups]

    def as_text(self, stage: str = "fused") -> str:
        if stage == "traced":
            return self.graph.as_text()
        if stage == "optimized":
            return self.optimized.as_text()
        if stage == "fused":
            return str(self.plan)
        if stage == "kernel":
            return "\n\n".join(k.as_text() for k in self.kernels())
        if stage == "ptx":
            return self.ptx()
        renderer = _backends.for_stage(stage)
        if renderer is None or stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
        return "\n\n".join(renderer.render(k) for k in self.kernels(for_gpu=not renderer.on_host))

    def ptx(self, arch: str = "sm_90", ptx_isa: str | None = None) -> str:
        """PTX of every kernel for ``arch``, from this Lowered's backend (a backend that writes
        none: the first that does, CUDA C); no GPU needed. The CUDA C backend's is written for
        ``ptx_isa`` (default: the newest that NVRTC and the installed driver, or without one the
        ``ptxas`` on PATH, accept; ``nvrtc.ptx_dump``), each kernel headed by a comment naming the
        NVRTC, ISA and arch; the kernels make one PTX module."""
        writer = self.backend if "ptx" in self.backend.stages else _backends.for_stage("ptx")
        return writer.ptx(self.kernels(for_gpu=True), arch, ptx_isa)

    def compile(self, store=None):
        """The runnable program; ``store`` is the kernel store (``_open_cache()``), or None."""
        return self.backend.compile_plan(self.plan, store, allow_tf32=self.options.allow_tf32)


def _auto_backend(device: str | None) -> Backend:
    """The backend of a function lowered without arrays: the first registered, or for a GPU
    device named (``device="h100"``) the first that runs on a GPU, so the plan is the one a call
    on that device makes."""
    if device is not None:
        from .fusion.cost import get_device_spec
        try:
            gpu = get_device_spec(device).kind == "gpu"
        except ValueError:          # (a device name no spec knows: "gpu", "auto")
            gpu = False
        if gpu:
            return next(b for b in map(_backends.get, _backends.names()) if not b.on_host)
    return _backends.default()


def _open_cache():
    """The disk store, or None when disabled/unavailable (the store warns once itself)."""
    cfg = _config.get()
    if not cfg.cache_enabled:
        return None
    try:
        from .runtime.cache import CacheStore
    except ImportError:
        return None
    return CacheStore.open(cfg)


def explain(fn, *args, device: str | None = None, **kwargs):
    """The fusion plan of ``fn`` for these arguments (arrays or spec strings); ``str(plan)`` is a
    table and ``plan.kernels`` the list of kernels. Needs no GPU and allocates nothing."""
    jf = fn if isinstance(fn, JitFunction) else JitFunction(fn)
    if has_dask_arrays(args) or has_dask_arrays(kwargs.values()):
        return jf._dask("explain", jf._bind(args, kwargs))     # the chunk plan
    from .trace.core import GraphBreak
    try:
        plan = jf.lower(*args, device=device, **kwargs).plan
    except GraphBreak:
        if jf.options.fullgraph:
            raise
    else:
        if jf.compile_count:
            plan = dataclasses.replace(plan, notes=plan.notes + jf._dispatch_notes(args, kwargs))
        return plan
    values = jf._bind(args, kwargs)         # the segments: run on copies of arrays, or on specs
    concrete = all(not isinstance(v, str) for v in values.values())
    specs = jf._specs(values, abstract_ok=not concrete)
    jf = JitFunction(jf.fn, dataclasses.replace(jf.options, device=device or jf.options.device))
    from .breaks import SegmentedEntry
    if concrete:
        kinds = {array_kind(v) for v in values.values()} - {None}
        backend = _backends.for_arrays(jf.options.backend, kinds, jf.fn.__name__)
    else:
        backend = jf.options.backend
    entry = SegmentedEntry(jf.fn, jf.fn.__name__, specs, _SegmentCompiler(jf, backend))
    return entry.explain(tuple(values[p] for p in jf._params) if concrete else None)
