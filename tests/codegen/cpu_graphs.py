"""Hand-built IR graphs and one-kernel plans for the CPU backend tests (no tracer, no planner)."""
from __future__ import annotations

import numpy as np

from kfuse.fusion.plan import KernelGroup, Plan
from kfuse.ir.graph import Graph, Node, toposort
from kfuse.ir.ops import LEAF, Op
from kfuse.runtime.cpu import compile_plan


def inp(i: int, dtype, shape, name=None) -> Node:
    return Node(Op.INPUT, dtype, shape, (), {"index": i, "name": name or f"x{i}"})


def const(value, dtype) -> Node:
    dt = np.dtype(dtype)
    v = bool(value) if dt.kind == "b" else (int(value) if dt.kind in "iu" else float(value))
    return Node(Op.CONST, dt, (), (), {"value": v})


def bcast(n: Node, shape) -> Node:
    return n if tuple(n.shape) == tuple(shape) else Node(Op.BROADCAST, n.dtype, shape, (n,))


def ew(op: Op, *args: Node, dtype=None) -> Node:
    """An elementwise node with NumPy's loop output dtype (inputs already of the loop dtypes)."""
    if dtype is None:
        uf = getattr(np, op.value)
        dtype = uf.resolve_dtypes(tuple(a.dtype for a in args) + (None,) * uf.nout)[-1]
    shape = np.broadcast_shapes(*(a.shape for a in args))
    return Node(op, dtype, shape, tuple(bcast(a, shape) for a in args))


def cast(n: Node, dtype) -> Node:
    return Node(Op.CAST, dtype, n.shape, (n,))


def reduce(op: Op, n: Node, axes, keepdims=False) -> Node:
    axes = tuple(sorted(a % n.ndim for a in axes))
    shape = tuple((1 if d in axes else s) for d, s in enumerate(n.shape) if keepdims or d not in axes)
    dtype = np.int64 if op in (Op.ARGMAX, Op.ARGMIN) else n.dtype
    return Node(op, dtype, shape, (n,), {"axes": axes, "keepdims": keepdims})


def move(op: Op, n: Node, shape, **attrs) -> Node:
    return Node(op, n.dtype, shape, (n,), attrs)


def one_group_plan(inputs, outputs, kind="elementwise", domain=None, axes=(), anchor=None) -> Plan:
    """A plan with one kernel computing every non-input node reachable from ``outputs``."""
    inputs, outputs = tuple(inputs), tuple(outputs)
    nodes = tuple(n for n in toposort(outputs) if n.op is not Op.INPUT)
    if kind == "reduce" and anchor is None:
        anchor = next(n for n in nodes if n.op.value in ("sum", "prod", "max", "min", "any", "all",
                                                          "argmax", "argmin"))
    if kind == "reduce" and not axes:
        axes = anchor.attr("axes")
    if domain is None:
        domain = outputs[0].shape if kind != "reduce" else anchor.inputs[0].shape
    g = KernelGroup(0, kind, nodes, tuple(i for i in inputs if i in set(toposort(outputs))),
                    outputs, tuple(domain), tuple(axes), anchor)
    graph = Graph("test", inputs, outputs)
    return Plan(graph, (g,))


def run(inputs, outputs, arrays, **kw):
    """Compile a one-kernel plan and run it; returns (outputs, program)."""
    prog = compile_plan(one_group_plan(inputs, outputs, **kw))
    return prog(list(arrays)), prog


__all__ = ["inp", "const", "bcast", "ew", "cast", "reduce", "move", "one_group_plan", "run", "LEAF"]
