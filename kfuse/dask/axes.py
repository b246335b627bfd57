"""Logical axes of a graph for the Dask mapping: every dim of every node gets a label, and dims
that must be split into the same chunks share one (an elementwise op's operands and result, a
broadcast's kept dims, a reduction's kept dims, a matmul's row, column and contracted dims).

A label is an int; ``Axes.size[label]`` is its extent. Size-1 dims get labels of their own (a
broadcast reads them at every index, so they never need the chunks of the dim they meet). An op
whose dims cannot be followed one to one through chunks (a reshape merging dims, a slice, a
gather, a scan...) raises ``UnsupportedError`` naming the op and the user's line.
"""
from __future__ import annotations

import dataclasses

from ..errors import UnsupportedError
from ..ir.graph import Graph, Node
from ..ir.ops import CONTRACTION, ELEMENTWISE, LEAF, REDUCE, Op

SUPPORTED = ("elementwise ops, casts, broadcasts, reshapes that add or drop size-1 dims, "
             "transposes, reductions and matmul")


@dataclasses.dataclass(frozen=True)
class Axes:
    labels: dict            # Node -> tuple of labels, one per dim
    size: dict              # label -> extent

    def of(self, node: Node) -> tuple[int, ...]:
        return self.labels[node]


def unsupported_op(node: Node, why: str = "") -> UnsupportedError:
    where = f" (at {node.loc})" if node.loc else ""
    return UnsupportedError(f"kfuse.dask: {node.op.value}{where} has no mapping onto Dask chunks"
                            f"{': ' + why if why else ''}; supported on Dask arrays: {SUPPORTED}")


class _Union:
    def __init__(self):
        self.parent: dict[tuple, tuple] = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def join(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _pairs(n: Node) -> list[tuple[int, int, int]]:
    """(input position, input dim, output dim) of the dims of ``n`` that are one axis."""
    if n.op in LEAF:
        return []
    if n.op in ELEMENTWISE:
        return [(i, d, d) for i in range(len(n.inputs)) for d in range(n.ndim)]
    src = n.inputs[0]
    if n.op is Op.BROADCAST:
        off = n.ndim - src.ndim
        return [(0, d, d + off) for d in range(src.ndim) if src.shape[d] == n.shape[d + off]]
    if n.op is Op.RESHAPE:
        ins = [d for d, s in enumerate(src.shape) if s != 1]
        outs = [d for d, s in enumerate(n.shape) if s != 1]
        if [src.shape[d] for d in ins] != [n.shape[d] for d in outs]:
            raise unsupported_op(n, f"a reshape {list(src.shape)} -> {list(n.shape)} merges or splits dims")
        return [(0, a, b) for a, b in zip(ins, outs)]
    if n.op is Op.PERMUTE:
        return [(0, p, d) for d, p in enumerate(n.attr("perm"))]
    if n.op in REDUCE:
        axes = set(n.attr("axes"))
        kept = [d for d in range(src.ndim) if d not in axes]
        if n.attr("keepdims"):
            return [(0, d, d) for d in kept]
        return [(0, d, k) for k, d in enumerate(kept)]
    if n.op in CONTRACTION:
        a, b = n.inputs
        batch = n.ndim - 2
        pairs = [(i, d, d) for i in (0, 1) for d in range(batch)]
        return pairs + [(0, batch, batch), (1, batch + 1, batch + 1), (-1, batch + 1, batch)]
    raise unsupported_op(n)


def label_axes(graph: Graph) -> Axes:
    """The labels of every node of ``graph`` (see the module docstring)."""
    nodes = graph.nodes()
    uf = _Union()
    for n in nodes:
        for i, d_in, d_out in _pairs(n):
            if i == -1:     # matmul: the contracted dim of a (last) is the one of b (first but one)
                a, b = n.inputs
                uf.join((id(a), a.ndim - 1), (id(b), b.ndim - 2))
            elif n.inputs[i].shape[d_in] == n.shape[d_out]:
                uf.join((id(n.inputs[i]), d_in), (id(n), d_out))
    ids: dict[tuple, int] = {}
    labels, size = {}, {}
    for n in nodes:
        row = []
        for d, s in enumerate(n.shape):
            root = uf.find((id(n), d))
            label = ids.setdefault(root, len(ids))
            size[label] = s
            row.append(label)
        labels[n] = tuple(row)
    return Axes(labels, size)
