"""Aliasing policy: which kernels of a plan may write into a buffer they also read, instead of a
fresh one, and which index checks must run before them.

* an elementwise kernel computing an argument's final value writes it into the caller's array
  (:func:`with_argument_writes`, ``KernelGroup.in_place``);
* a scatter writes into its base's buffer when the base is dead after it
  (:func:`scatters_in_place`), or into the argument it updates (:func:`scatters_into_argument`);
* every index check is computed before such a kernel (:func:`order_checks_first`), so that a call
  that raises writes nothing into its arguments.

The plan's data (``plan.Plan``, ``plan.KernelGroup``) is read by attribute; this module imports
nothing from ``plan`` (which calls it).
"""
from __future__ import annotations

import dataclasses

from ..ir.graph import Graph
from ..ir.ops import ELEMENTWISE, LEAF, Op
from .dag import Dag, has_path
from .kinds import GroupKind


def _reads_base(g) -> bool:
    """Whether scatter group ``g`` reads its base other than as the array it starts from: as its
    values or indices (``v[[1, 0]] = v``), or in a fused producer of them."""
    base = g.anchor.inputs[0]
    return base in g.anchor.inputs[1:] or any(base in n.inputs for n in g.nodes if n is not g.anchor)


def _checks_before(graph: Graph, groups, g) -> bool:
    """Whether every index check of ``graph`` is computed by a group before ``g`` (so the runtime
    can raise before ``g`` writes into an argument)."""
    earlier = {o for h in groups[:g.id] for o in h.outputs}
    return all(graph.outputs[o] in earlier for o, *_ in graph.checks)


def _read_later(base, groups, g) -> bool:
    """Whether a kernel after ``g`` reads ``base``."""
    return any(base in h.inputs for h in groups[g.id + 1:])


def _writes_in_place(graph: Graph, groups, g, node, base) -> bool:
    """Whether elementwise group ``g`` may compute ``node``, argument ``base``'s final value, into
    the argument itself: the only graph output it is, of the argument's dtype and shape, read by
    no later kernel in its old value, which the kernel reads (if at all) only at the element it
    writes, through elementwise ops of its domain (``x[...] = x[::-1]`` keeps its copy)."""
    if (base in graph.outputs or sum(o is node for o in graph.outputs) != 1
            or node.dtype != base.dtype or tuple(node.shape) != tuple(base.shape)
            or _read_later(base, groups, g)):
        return False
    readers = {base}
    for n in g.nodes:               # (topological order) the nodes reading the old value
        if n.op not in LEAF and any(i in readers for i in n.inputs):
            readers.add(n)
            if n.op not in ELEMENTWISE or tuple(n.shape) != tuple(g.domain):
                return False
    return True


def with_argument_writes(graph: Graph, groups: list) -> list:
    """``groups`` with ``in_place`` set on each elementwise group that may compute an argument's
    final value (``Graph.writebacks``: ``x += y``, ``x[1:] = v``, ``np.add(a, b, out=x)``) straight
    into the caller's array (:func:`_writes_in_place`), so the call copies nothing back; only
    where every index check is computed by an earlier kernel."""
    final = {graph.outputs[o]: graph.inputs[i] for i, o in graph.writebacks}
    out = []
    for g in groups:
        if g.kind != GroupKind.ELEMENTWISE or not _checks_before(graph, groups, g):
            out.append(g)
            continue
        pairs = tuple((k, final[node]) for k, node in enumerate(g.outputs)
                      if node in final and _writes_in_place(graph, groups, g, node, final[node]))
        out.append(dataclasses.replace(g, in_place=pairs) if pairs else g)
    return out


def scatters_in_place(plan, g) -> bool:
    """Whether scatter group ``g`` may write into its base's buffer instead of a copy of it: the
    base is an earlier kernel's output that no graph output is, no later kernel reads and the
    scatter's own values and indices do not read (they are computed from the array before the
    write, as NumPy evaluates the right-hand side first)."""
    if g.kind != GroupKind.SCATTER:
        return False
    base = g.anchor.inputs[0]
    if base in plan.graph.outputs or not any(base in h.outputs for h in plan.groups[:g.id]):
        return False
    return not _reads_base(g) and not _read_later(base, plan.groups, g)


def scatters_into_argument(plan, g) -> bool:
    """Whether scatter group ``g`` may write straight into the argument it updates (instead of a
    copy, copied back after the call): the base is an argument whose final value
    (``Graph.writebacks``) is this scatter's result, which no later kernel reads in its old value,
    the scatter's own values and indices do not read, nor the function returns; and every index
    check is computed by an earlier kernel, so that the runtime raises before the write (a call
    that raises writes nothing into its arguments)."""
    if g.kind != GroupKind.SCATTER:
        return False
    base, gr = g.anchor.inputs[0], plan.graph
    if base not in gr.inputs or base in gr.outputs:
        return False
    k = gr.inputs.index(base)
    if not any(i == k and gr.outputs[o] is g.anchor for i, o in gr.writebacks):
        return False
    if _reads_base(g) or _read_later(base, plan.groups, g):
        return False
    return _checks_before(gr, plan.groups, g)


def order_checks_first(graph: Graph, built: dict, home_of: dict, dag: Dag) -> None:
    """Add edges to the kernel DAG ``dag`` (``built``: cluster -> (shape, nodes, inputs, outputs,
    ...); ``home_of``: node -> the cluster writing it) ordering the index checks before each kernel
    that may write into an argument in place (a scatter into one, :func:`scatters_into_argument`;
    an elementwise kernel computing one's final value, :func:`with_argument_writes`) where no path
    forbids it, so that the runtime can raise before writing into the argument."""
    checks = [home_of[graph.outputs[k]] for k, *_ in graph.checks if graph.outputs[k] in home_of]
    finals = {graph.outputs[o] for _, o in graph.writebacks}
    for cid, (shape, _nodes, _inputs, outputs, *_rest) in built.items():
        if ((shape.kind == GroupKind.SCATTER and shape.anchor.inputs[0].op is Op.INPUT)
                or (shape.kind == GroupKind.ELEMENTWISE and finals.intersection(outputs))):
            for c in checks:
                if c != cid and not has_path(dag, cid, c):
                    dag.add_edge(c, cid)
