"""The fusion plan: which IR nodes run in which kernel, and why.

This is the contract between ``fusion`` (which builds plans) and ``codegen`` (which lowers each
:class:`KernelGroup` to a kernel). A group is one of these kinds:

``"elementwise"``
    ``nodes`` are elementwise, ``CONST`` and movement nodes. All ``outputs`` have one shape, the
    group's ``domain``. The kernel loops over the domain; each output element is computed by
    evaluating its expression tree at that index, movement nodes mapping indices (a transposed,
    sliced or broadcast operand is read through index math, never copied).

``"reduce"`` (reductions, with their producers and consumers; softmax/layernorm "row-wise" too)
    One ``domain`` shape D and one tuple of reduced ``axes`` A, shared by every reduce node in the
    group (each has input shape D). Nodes are
      * full-level: elementwise/movement nodes evaluated at an index of D;
      * reduce nodes (``SUM``, ``MAX``, ... over A);
      * outer-level: elementwise/movement nodes of the reduced shape (keepdims or not) that depend
        on a reduce node (e.g. ``mean = sum / n``, ``rstd = 1/sqrt(var + eps)``).
    A reduce or outer-level value reaches full-level code only through ``BROADCAST`` (optionally
    after a ``RESHAPE`` that only inserts or removes size-1 dims) back to D. Reductions may depend
    on earlier ones (variance on mean). Outputs: full-level nodes of shape D and outer-level or
    reduce nodes. The kernel, per outer index, runs the reductions in order over the reduced
    dims, then writes the outputs (softmax: max, sum, normalise - one kernel, the row read from
    cache).
    A scan kernel is a "reduce" group too: scans (``CUMSUM``...) along one axis A of one shape D
    (``axes == (A,)``, ``anchor`` the first scan), with their producers and elementwise consumers,
    every node of shape D; no reduction or matmul shares it, and no movement reads a scanned
    value. The kernel runs each row along A in order, in one thread (``kernel_ir.Scan``).

``"matmul"``
    One ``MATMUL`` node (``anchor``), optional ``CAST`` nodes on its operands, and an elementwise
    epilogue of the matmul's output shape (bias, activation, residual, scaling, cast).

``"scatter"``
    One ``SCATTER`` node (``anchor``) and the elementwise/movement nodes computing its values and
    index arrays, all of the scatter's domain (its values' shape, the group's ``domain``). Its one
    output is the ``SCATTER`` node (the base's shape): the runtime copies the base (an input of the
    group, never computed in it) into the output buffer, then the kernel writes (or, for a
    ``ufunc.at``, combines) each domain element's value at its position. Nothing reads the scattered
    array inside the kernel that writes it.

Groups are listed in topological order; each group's ``inputs`` are graph ``INPUT`` nodes or
``outputs`` of earlier groups (the buffers that cross kernels). ``CONST`` nodes are never inputs.
A graph output that is an ``INPUT`` node needs no kernel; ``Plan.passthrough`` lists those. A graph
output that is a reshape of a computed value read by nothing else (``legality.output_views``) is
returned as a reshape (a view) of the kernel output holding the value; ``Plan.views`` lists those.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from ..ir.dtypes import short_name
from ..ir.graph import Graph, Node
from ..ir.ops import ELEMENTWISE, LEAF, MOVEMENT, SCAN
from .explain import format_plan

KINDS = ("elementwise", "reduce", "matmul", "scatter")


@dataclasses.dataclass(frozen=True, eq=False)
class KernelGroup:
    id: int
    kind: str                       # one of KINDS
    nodes: tuple[Node, ...]         # every node computed inside the kernel, topological order
    inputs: tuple[Node, ...]        # nodes read from memory (graph inputs or earlier outputs)
    outputs: tuple[Node, ...]       # nodes written to memory
    domain: tuple[int, ...]         # iteration shape (elementwise: output shape; reduce: D)
    axes: tuple[int, ...] = ()      # reduce: the reduced axes of the domain
    anchor: Node | None = None      # matmul/scatter: its MATMUL/SCATTER node; reduce: the first reduce node
    cost: Any = None                # fusion.cost.Cost: bytes, flops, predicted time
    reason: str = ""                # why these nodes are together (for explain)
    # elementwise: (output position, argument INPUT node) pairs, the output being the argument's
    # final value, written into the caller's array itself (see :func:`with_argument_writes`)
    in_place: tuple[tuple[int, Node], ...] = ()

    @property
    def ops(self) -> list[str]:
        return [n.op.value for n in self.nodes if n.op not in LEAF | MOVEMENT]

    @property
    def is_scan(self) -> bool:
        """A "reduce" group of scans (its rows run in order, see above)."""
        return self.kind == "reduce" and self.anchor is not None and self.anchor.op in SCAN

    def describe(self) -> str:
        outs = ", ".join(f"{short_name(o.dtype)}{list(o.shape)}" for o in self.outputs)
        into = "".join(f" (writes {b.attr('name')!r} in place)" for _, b in self.in_place)
        return f"kernel {self.id} [{self.kind}] ops={'/'.join(self.ops) or 'copy'} -> {outs}{into}"


@dataclasses.dataclass(frozen=True)
class Refusal:
    """A fusion the planner considered and refused, with the reason (cycle, budget, cost).
    ``between``: a node of each side, while planning (the plan restates the refusal in terms of
    its final kernels, see ``pipeline.final_refusals``); empty when not a pair of clusters."""
    what: str
    reason: str
    between: tuple = dataclasses.field(default=(), compare=False, repr=False)


def _reads_base(g: KernelGroup) -> bool:
    """Whether scatter group ``g`` reads its base other than as the array it starts from: as its
    values or indices (``v[[1, 0]] = v``), or in a fused producer of them."""
    base = g.anchor.inputs[0]
    return base in g.anchor.inputs[1:] or any(base in n.inputs for n in g.nodes if n is not g.anchor)


def _checks_before(graph: Graph, groups, g: KernelGroup) -> bool:
    """Whether every index check of ``graph`` is computed by a group before ``g`` (so the runtime
    can raise before ``g`` writes into an argument)."""
    earlier = {o for h in groups[:g.id] for o in h.outputs}
    return all(graph.outputs[o] in earlier for o, *_ in graph.checks)


def with_argument_writes(graph: Graph, groups: list[KernelGroup]) -> list[KernelGroup]:
    """``groups`` with ``in_place`` set on each elementwise group that may compute an argument's
    final value (``Graph.writebacks``: ``x += y``, ``x[1:] = v``, ``np.add(a, b, out=x)``) straight
    into the caller's array, so the call copies nothing back: the kernel reads the argument's old
    value (if at all) only at the element it writes, through elementwise ops of its domain (no
    movement: ``x[...] = x[::-1]`` keeps its copy), no later kernel reads the old value, the
    value is no other output of the function, and every index check is computed by an earlier
    kernel (a call that raises writes nothing into its arguments)."""
    final = {graph.outputs[o]: graph.inputs[i] for i, o in graph.writebacks}
    out = []
    for g in groups:
        if g.kind != "elementwise" or not _checks_before(graph, groups, g):
            out.append(g)
            continue
        pairs = []
        for k, node in enumerate(g.outputs):
            base = final.get(node)
            if (base is None or base in graph.outputs
                    or sum(o is node for o in graph.outputs) != 1
                    or node.dtype != base.dtype or tuple(node.shape) != tuple(base.shape)
                    or any(base in h.inputs for h in groups[g.id + 1:])):
                continue
            readers, moved = {base}, False
            for n in g.nodes:               # (topological order) the nodes reading the old value
                if n.op not in LEAF and any(i in readers for i in n.inputs):
                    readers.add(n)
                    moved |= n.op not in ELEMENTWISE or tuple(n.shape) != tuple(g.domain)
            if not moved:
                pairs.append((k, base))
        out.append(dataclasses.replace(g, in_place=tuple(pairs)) if pairs else g)
    return out


@dataclasses.dataclass(frozen=True, eq=False)
class Plan:
    graph: Graph
    groups: tuple[KernelGroup, ...]
    refused: tuple[Refusal, ...] = ()
    device: Any = None              # fusion.cost.DeviceSpec used for the decisions
    passthrough: tuple[Node, ...] = ()
    views: tuple[Node, ...] = ()    # outputs returned as a reshape of their input's kernel output

    @property
    def kernels(self) -> list[KernelGroup]:
        return list(self.groups)

    def scatters_in_place(self, g: KernelGroup) -> bool:
        """Whether scatter group ``g`` may write into its base's buffer instead of a copy of it:
        the base is an earlier kernel's output that no graph output is, no later kernel reads and
        the scatter's own values and indices do not read (they are computed from the array before
        the write, as NumPy evaluates the right-hand side first)."""
        if g.kind != "scatter":
            return False
        base = g.anchor.inputs[0]
        if base in self.graph.outputs or not any(base in h.outputs for h in self.groups[:g.id]):
            return False
        if _reads_base(g):
            return False
        return not any(base in h.inputs for h in self.groups[g.id + 1:])

    def scatters_into_argument(self, g: KernelGroup) -> bool:
        """Whether scatter group ``g`` may write straight into the argument it updates (instead of
        a copy, copied back after the call): the base is an argument whose final value
        (``Graph.writebacks``) is this scatter's result, which no later kernel reads in its old
        value, the scatter's own values and indices do not read, nor the function returns; and
        every index check is computed by an earlier kernel, so that the runtime raises before the
        write (a call that raises writes nothing into its arguments)."""
        if g.kind != "scatter":
            return False
        base, gr = g.anchor.inputs[0], self.graph
        if base not in gr.inputs or base in gr.outputs:
            return False
        k = gr.inputs.index(base)
        if not any(i == k and gr.outputs[o] is g.anchor for i, o in gr.writebacks):
            return False
        if _reads_base(g):
            return False
        if any(base in h.inputs for h in self.groups[g.id + 1:]):
            return False
        return _checks_before(gr, self.groups, g)

    def as_text(self) -> str:
        lines = [f"plan for {self.graph.name}: {len(self.groups)} kernel(s)"]
        lines += ["  " + g.describe() for g in self.groups]
        for r in self.refused:
            lines.append(f"  refused: {r.what}: {r.reason}")
        return "\n".join(lines)

    def __str__(self) -> str:
        """The explain table: per kernel ops, bytes, FLOPs, intensity, predicted time, refusals."""
        return format_plan(self)
