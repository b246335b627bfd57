"""Size-generic traces: a new size of a jitted function built without running the tracer, the
optimizer, the planner or the lowering again, where a trace provably does not depend on the
sizes but through products of them.

After a real trace of a shape class (``runtime.shape_class``) at the call's sizes, :func:`learn`
checks that the trace read no size into the function's own code (``trace.size_reads``: it may
branch on ``x.shape[0]`` or use ``x.shape[-1]`` as a Python number) and that its graph holds
only ops whose building computes sizes by products (``ir.size_forms.GENERIC_OPS``: no slice,
reshape, pad or gather, no run-time check, no array constant); then traces once more at probe
sizes (``ir.size_forms.probe_sizes``: a prime per size class, the call's pattern of equal dims
kept), optimizes, maps the shape class template's plan onto it and lowers it. Where every graph
node and kernel IR agrees with the real build's up to monomials of the sizes (and the kernel IRs'
normal forms are the template's), a :class:`SizeGeneric` is kept per shape class and pattern of
equal dims. A later size of that class and pattern (no dim 0, in a planning regime the template
was checked at) is :meth:`SizeGeneric.build`: the graphs rebuilt at its sizes (the interned
nodes a trace would make), the template's plan mapped onto them, the kernel IRs written at the
sizes, the template's program rebound. ``JitFunction.retrace_count`` does not count such a size
(``untraced_count`` does); the probe trace counts as a retrace.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .dispatch_keys import _family
from .errors import CompileError
from .ir.graph import Graph
from .ir.size_forms import GENERIC_OPS, GraphForm, probe_sizes
from .runtime.kir_forms import KirForms
from .runtime.shape_class import _remap, lower_group, normal_form, program_kirs, regime, signature

MAX_PATTERNS = 4            # per shape class: patterns of equal dims kept (or refused) beyond these: none


def size_pattern(args: tuple) -> tuple[tuple, tuple[int, ...]] | None:
    """(per argument the size class of each dim, -1 for a dim of 1, None for a non-array; the
    classes' values, in order of first appearance), or None where an array has a dim of 0.
    Arrays are NumPy arrays, CuPy arrays and torch tensors alike (their ``shape``): what a build
    at new sizes depends on beyond the sizes (type, dtype, device, which dims are 1) is in the
    shape-class key this pattern is kept under, and strides and alignment are not in the trace
    at all (a GPU program picks its launch variant from them per call, as after a real build)."""
    classes: dict[int, int] = {}
    pattern = []
    for a in args:
        if type(a) is not np.ndarray and _family(type(a)) is None:
            pattern.append(None)
            continue
        dims = []
        for d in a.shape:
            if d == 1:
                dims.append(-1)
            elif d == 0:
                return None
            else:
                c = classes.get(d)
                if c is None:
                    c = classes[d] = len(classes)
                dims.append(c)
        pattern.append(tuple(dims))
    return tuple(pattern), tuple(classes)


def probe_shapes(pattern: tuple, probe: tuple[int, ...]) -> list:
    """Each array argument's shape at the probe sizes (None for a non-array)."""
    return [None if p is None else tuple(1 if c < 0 else probe[c] for c in p) for p in pattern]


def qualifies(graph: Graph, optimized: Graph, program) -> bool:
    """The cheap half of :func:`learn`'s test, before any probe: generic ops only, nothing a
    size form cannot rebuild."""
    return (hasattr(program, "rebind") and not (graph.checks or graph.host_checks or graph.constants)
            and graph.ops() <= GENERIC_OPS and optimized.ops() <= GENERIC_OPS)


class SizeGeneric:
    """A shape class's build at any sizes of one pattern of equal dims (see the module docstring)."""

    __slots__ = ("form", "template", "kirs")

    def __init__(self, form: GraphForm, template, kirs: KirForms):
        self.form, self.template, self.kirs = form, template, kirs

    def build(self, sizes: tuple[int, ...]):
        """(traced graph, plan, program) at the class values ``sizes``, or None where the sizes
        leave the planning regimes the template was checked at (a real build then)."""
        traced, optimized = self.form.instantiate(sizes)
        t = self.template
        if not t.near(regime(optimized)):
            return None
        plan = _remap(t, optimized.nodes(), optimized)
        if plan is None:
            return None
        return traced, plan, t.program.rebind(plan, self.kirs.at(sizes))


def learn(graph: Graph, optimized: Graph, program, templates: list, sizes: tuple[int, ...],
          probe_trace: Callable[[tuple[int, ...]], Graph | None],
          optimize: Callable[[Graph], Graph]) -> SizeGeneric | None:
    """The size-generic build of a real build (``graph`` traced and ``optimized`` at the class
    values ``sizes``, run by ``program``, a template's or one rebound from it), or None.
    ``probe_trace(probe)``: the function's graph traced at probe class values, None where that
    trace read a size or failed."""
    if not qualifies(graph, optimized, program):
        return None
    probe = probe_sizes(sizes)
    p_graph = probe_trace(probe)
    if p_graph is None:
        return None
    p_opt = optimize(p_graph)
    form = GraphForm.learn([graph, optimized], [p_graph, p_opt], sizes, probe)
    if form is None:
        return None
    sig, order = signature(p_opt)
    kirs = program_kirs(program)
    normal = tuple(map(normal_form, kirs))
    r = regime(p_opt)
    for t in templates:
        if t.sig != sig or t.normal != normal or not t.near(r):
            continue
        plan = _remap(t, order, p_opt)
        if plan is None:
            continue
        sized = frozenset(order[k] for k in t.sized)
        try:
            p_kirs = tuple(lower_group(g, sized=sized) for g in plan.groups)
        except CompileError:
            continue
        if tuple(map(normal_form, p_kirs)) != normal:
            continue
        kf = KirForms.learn(kirs, p_kirs, sizes, probe)
        if kf is not None:
            return SizeGeneric(form, t, kf)
    return None
