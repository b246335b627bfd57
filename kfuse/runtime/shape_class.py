"""Shape classes: a new size of a function reuses the plan and the compiled program of an earlier
size instead of planning, lowering for code and compiling again.

A *shape class* is what ``kfuse.jit`` dispatches the expensive build on: per argument its type,
dtype, rank and which dims are 1 (the broadcast pattern), static values; no sizes (strides
neither: every program picks its schedule from the strides per call). A :class:`ShapeClass`
holds :class:`Template` s, each a plan and the program compiled for it at one size. For a new size
the caller traces and optimizes again (the function's Python code may depend on the sizes; where
it provably does not, ``kfuse.size_generic`` rebuilds the graph, plan and kernel IRs of a
template at the new sizes instead, no step below run), then :meth:`ShapeClass.reuse`:

1. the optimized graph's :func:`signature` (ops, dtypes, size-1 dims, wiring, attributes with the
   sizes masked, the constants' values masked) selects the templates of the same structure; none:
   the structure changed with the sizes (``x[:, :4]`` on a dim of 3, ``if x.shape[0] > 8``), a
   full build;
2. the template's plan is mapped onto the new graph node by node (same topological position) and
   each group's domain read off the node that gave it at the template's size; the planner runs
   only when the inputs' bytes move 64x away from every size the plan was checked at (its
   size-dependent choices, re-reading or splitting rows beyond on-chip memory, follow the data's
   order of magnitude), and that plan must group the same nodes as the template's, else it is a
   template of its own; a new tuning bucket only looks its tuned choice up (``autotune``);
3. every group is lowered again (sizes are the kernel's run-time parameters) and its KernelIR
   must equal the template's but for the size values; this is the proof that the compiled code
   computes the new graph, so a structure the signature missed falls back to a full build;
   where the difference is integer constants that changed with the sizes (an index check's
   bound), those are lowered from size parameters at both sizes and, if that makes the kernel
   IR equal, give a new template (compiled once, then reused);
4. ``program.rebind(plan, kirs)`` gives the program at the new size: the same compiled kernels
   (CPU schedules, CUDA/Numba-CUDA variants emitted so far), new size arguments.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from ..codegen import kernel_ir as K
from ..codegen.lower import lower_group
from ..errors import CompileError
from ..ir.graph import Graph, Node
from ..ir.ops import Op
from ..records import record

# attributes that are never sizes: compared exactly (every other int in an attribute is masked;
# a size baked into code would differ in the KernelIR comparison of step 3)
_EXACT = frozenset({"axes", "axis", "perm", "index", "name", "keepdims", "mode", "side", "kind"})
_MASK = "#"
MAX_TEMPLATES = 8           # per shape class: structures beyond these are built, not kept
# The planner's size-dependent choices (a row or columns beyond on-chip memory or L2: re-read or
# split) change with the data's order of magnitude: a size whose inputs hold REPLAN_FACTOR times
# more (or less) bytes than every size the template's plan was checked at is planned again (a
# call that much larger pays the planner in proportion); inputs under SMALL_BYTES all count as one.
REPLAN_BITS = 6             # 64x
SMALL_BYTES = 1 << 16


def _masked(v: Any) -> Any:
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        return _MASK
    if isinstance(v, tuple):
        return tuple(_masked(x) for x in v)
    return v


def _attrs(n: Node) -> tuple:
    if n.op is Op.CONST or not n.attrs:     # (a constant's value is a Const of the kernel IR, or an output)
        return ()
    return tuple([(k, v if k in _EXACT else _masked(v)) for k, v in n.attrs])


def signature(graph: Graph) -> tuple[tuple, list[Node]]:
    """(the graph's structure without its sizes, its nodes in topological order)."""
    order = graph.nodes()
    pos = {n: k for k, n in enumerate(order)}
    at = pos.__getitem__
    rows = tuple([(n.op, n.dtype.str, tuple([d == 1 for d in n.shape]), tuple(map(at, n.inputs)), _attrs(n))
                  for n in order])
    sig = (rows, tuple(pos[o] for o in graph.outputs), repr(graph.out_tree), graph.writebacks,
           tuple((k, e) for k, _, e in graph.checks), len(graph.constants), len(graph.host_checks))
    return sig, order


def regime(graph: Graph) -> int:
    """The planning regime of a size: log2 of the inputs' bytes, those below SMALL_BYTES one."""
    return max(SMALL_BYTES, sum(n.nbytes for n in graph.inputs)).bit_length()


def _domain_sources(g) -> tuple:
    """The nodes of group ``g`` (paths from it) whose shape is its domain."""
    cands = [("out", k, o) for k, o in enumerate(g.outputs)]
    if g.anchor is not None:
        cands.append(("anchor", -1, g.anchor))
        cands += [("anchor", k, i) for k, i in enumerate(g.anchor.inputs)]
    return tuple((kind, k) for kind, k, n in cands if n.shape == tuple(g.domain))


def _follow(g, path) -> Node:
    kind, k = path
    if kind == "out":
        return g.outputs[k]
    return g.anchor if k < 0 else g.anchor.inputs[k]


_SIZED = ("inputs", "outputs", "sizes")
_UNSIZED = tuple(f.name for f in dataclasses.fields(K.KernelIR) if f.name not in _SIZED)


def normal_form(kir: K.KernelIR) -> tuple:
    """The kernel IR without its size values (what the compiled code depends on): every field,
    the buffers without their (informational) shapes (a host scalar, taken by value, is other
    code than a 0-d array), the size parameters without values."""
    return (tuple((b.name, b.dtype, b.ndim, b.host) for b in kir.inputs),
            tuple((b.name, b.dtype, b.ndim, b.host) for b in kir.outputs),
            tuple((s.name, s.what) for s in kir.sizes), *(getattr(kir, f) for f in _UNSIZED))


def _group_shape(g, pos) -> tuple:
    """A group's membership by node position (what the planner decided, without sizes)."""
    return (g.kind, tuple(g.axes), tuple(pos[n] for n in g.nodes), tuple(pos[n] for n in g.inputs),
            tuple(pos[n] for n in g.outputs), pos.get(g.anchor, -1),
            tuple((o, pos[n]) for o, n in g.in_place))


def _plan_shape(plan, pos) -> tuple:
    return (tuple(_group_shape(g, pos) for g in plan.groups), tuple(pos[n] for n in plan.passthrough),
            tuple(pos[n] for n in plan.views))


@dataclasses.dataclass(eq=False)
class Template:
    """A plan and its program at one size, with what a new size is checked against."""
    sig: tuple
    order: list                     # the plan graph's nodes, topological order
    plan: Any
    program: Any
    kirs: tuple
    normal: tuple                   # normal_form of each kernel IR
    shape: tuple                    # _plan_shape
    domains: tuple                  # per group, _domain_sources
    regimes: list = dataclasses.field(default_factory=list)   # regime() of the sizes checked
    sized: tuple = ()               # positions of the integer constants read from size parameters

    def near(self, r: int) -> bool:
        return any(abs(r - c) < REPLAN_BITS for c in self.regimes)


@record
class Reused:
    """A new size's plan and program, and what was reused (for logs and ``explain``)."""
    plan: Any
    program: Any
    replanned: bool


def program_kirs(program) -> tuple:
    """The kernel IR of each group of a compiled program (every runtime's program)."""
    kirs = getattr(program, "kirs", None)
    if kirs is not None:
        return tuple(kirs)
    return tuple(k.kir for k in program.kernels)


class ShapeClass:
    """The templates of one shape class of one function (see the module docstring)."""

    def __init__(self):
        self.templates: list[Template] = []
        self.store = None                   # the kernel store the first build opened (tuning)

    def add(self, plan, program) -> Template | None:
        """Keep ``program`` (compiled for ``plan``) as a template; None when it cannot serve one
        (a program without ``rebind``, a group whose domain no node gives)."""
        if not hasattr(program, "rebind") or len(self.templates) >= MAX_TEMPLATES:
            return None
        domains = tuple(_domain_sources(g) for g in plan.groups)
        if not all(domains):
            return None
        sig, order = signature(plan.graph)
        pos = {n: k for k, n in enumerate(order)}
        try:
            shape = _plan_shape(plan, pos)
        except KeyError:                    # a group node outside the graph's nodes
            return None
        kirs = program_kirs(program)
        t = Template(sig, order, plan, program, kirs, tuple(map(normal_form, kirs)), shape, domains,
                     [regime(plan.graph)])
        self.templates.append(t)
        return t

    def reuse(self, graph: Graph, replan: Callable[[], Any]) -> Reused | None:
        """The program for the optimized ``graph`` (a new size of this class) from a template, or
        None (a full build: the structure or the plan differs). ``replan()`` is the planner's
        plan of ``graph``, asked for only far from the sizes the templates were checked at."""
        sig, order = signature(graph)
        same = [t for t in self.templates if t.sig == sig]
        if not same:
            return None
        r = regime(graph)
        near = [t for t in same if t.near(r)]
        for t in near:
            plan = _remap(t, order, graph)
            hit = None if plan is None else self._fit(t, order, plan, False)
            if hit is not None:
                return hit
        if near:
            return None
        plan = replan()
        pos = {n: k for k, n in enumerate(order)}
        try:
            shape = _plan_shape(plan, pos)
        except KeyError:
            return None
        for t in same:
            if t.shape == shape:
                hit = self._fit(t, order, plan, True)
                if hit is not None:
                    t.regimes.append(r)
                    return hit
        return None

    def _fit(self, t: Template, order: list[Node], plan, replanned: bool) -> Reused | None:
        try:
            return self._fit_kernels(t, order, plan, replanned)
        except CompileError:            # the template's grouping does not lower here: a full build
            return None

    def _fit_kernels(self, t: Template, order: list[Node], plan, replanned: bool) -> Reused | None:
        """``plan`` (template ``t``'s at a new size) run by ``t``'s kernels when its kernel IR is
        theirs but for sizes; else, when the difference is integer constants that changed with
        the sizes (an index check's bound), a new template reading them from size parameters
        (compiled once, reused by every later size)."""
        sized = frozenset(order[k] for k in t.sized)
        kirs = tuple(lower_group(g, sized=sized) for g in plan.groups)
        if tuple(map(normal_form, kirs)) == t.normal:
            return Reused(plan, t.program.rebind(plan, kirs), replanned)
        moved = tuple(k for k, (a, b) in enumerate(zip(t.order, order)) if _sized_constant(a, b))
        if not moved or set(moved) <= set(t.sized) or len(self.templates) >= MAX_TEMPLATES:
            return None
        ks = tuple(sorted(set(t.sized) | set(moved)))
        kirs = tuple(lower_group(g, sized=frozenset(order[k] for k in ks)) for g in plan.groups)
        then = tuple(lower_group(g, sized=frozenset(t.order[k] for k in ks)) for g in t.plan.groups)
        normal = tuple(map(normal_form, kirs))
        if normal != tuple(map(normal_form, then)):
            return None
        program = t.program.rebind(plan, kirs, share=False)
        self.templates.insert(0, dataclasses.replace(
            t, order=order, plan=plan, program=program, kirs=kirs, normal=normal,
            regimes=[regime(plan.graph)], sized=ks))
        return Reused(plan, program, replanned)


def _sized_constant(a: Node, b: Node) -> bool:
    """Whether ``a`` and ``b`` (one position of two sizes' graphs) are integer scalar constants
    of different values that a size parameter can hold."""
    if a.op is not Op.CONST or a.dtype.kind not in "iu" or a.shape != () or b.shape != ():
        return False
    va, vb = a.attr("value"), b.attr("value")
    return va != vb and all(isinstance(v, int) and abs(v) < 2 ** 31 for v in (va, vb))


def _remap(t: Template, order: list[Node], graph: Graph):
    """Template ``t``'s plan with its nodes replaced by ``graph``'s (same positions), each
    group's domain the new shape of the node that gave it; None if those nodes disagree."""
    old = t.plan
    m = dict(zip(t.order, order))
    groups = []
    for g, paths in zip(old.groups, t.domains):
        shapes = {_follow(g, p) for p in paths}
        new_shapes = {m[n].shape for n in shapes}
        if len(new_shapes) != 1:
            return None
        domain = new_shapes.pop()
        groups.append(dataclasses.replace(
            g, nodes=tuple(m[n] for n in g.nodes), inputs=tuple(m[n] for n in g.inputs),
            outputs=tuple(m[n] for n in g.outputs), domain=domain,
            anchor=None if g.anchor is None else m[g.anchor],
            in_place=tuple((o, m[n]) for o, n in g.in_place)))
    return dataclasses.replace(old, graph=graph, groups=tuple(groups),
                               passthrough=tuple(m[n] for n in old.passthrough),
                               views=tuple(m[n] for n in old.views))

