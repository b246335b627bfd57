"""Which Dask layer computes each value of a function's optimized graph (pure, no Dask import).

Given the labels of :mod:`.axes` and which labels the arguments split into several chunks:

* a reduction over labels in one chunk runs inside the layer of its consumers;
* a row-wise reduction (its value broadcast back along the reduced labels: softmax, layernorm)
  over a split label whose row fits ``row_bytes`` (``KFUSE_DASK_ROW_BYTES``) makes that label
  *whole*: the arguments are rechunked to one chunk along it, and the reduction runs in the layer
  (not a reduction of everything, ``x - x.mean()``: that would be one task);
* any other reduction over a split label is a *boundary*: a ``dask.array.reduction`` whose chunk
  step is a kfuse kernel of its producers plus the partial reduction, its combine and aggregate
  kfuse kernels of the same reduction (so a row too large is statistics-then-apply: two passes);
  a variance's sum of squared deviations is one pass of moments (:mod:`.moments`);
* a matmul is a boundary computed by Dask's blocked product.

Every other value that must exist as a Dask array (an output, a matmul operand) is computed by a
blockwise layer: a :class:`Segment`, the nodes between its values and the boundaries they read,
run as one kfuse call per chunk. Outputs of one labelling share a layer (an optimizer step's
parameter and moments: each chunk's inputs read once). Nodes are named by their index in
``graph.nodes()`` (the same on every worker).
"""
from __future__ import annotations

import dataclasses
import math

from ..errors import UnsupportedError
from ..ir.graph import Graph, Node
from ..ir.ops import CONTRACTION, REDUCE, Op
from .axes import Axes, label_axes, unsupported_op
from .moments import variance_chain, variance_values

# reductions whose partial results combine with the same reduction (argmax/argmin do not)
COMBINABLE = frozenset({Op.SUM, Op.PROD, Op.MAX, Op.MIN, Op.ANY, Op.ALL})


@dataclasses.dataclass(frozen=True)
class Segment:
    """One blockwise layer: ``outs`` computed per chunk from the boundary values ``inputs``. With
    a ``step``, ``outs`` is one boundary reduction and the layer gives its per-chunk partial
    (keepdims): ``"partial"`` the same reduction, ``"moments"`` a variance's sum and M2."""
    outs: tuple[int, ...]
    inputs: tuple[int, ...]
    step: str = ""


@dataclasses.dataclass(frozen=True, eq=False)
class Mapping:
    graph: Graph
    nodes: tuple[Node, ...]
    axes: Axes
    whole: frozenset            # labels rechunked to one chunk
    boundary: frozenset         # reduction nodes computed by dask.array.reduction
    moments: frozenset          # those of them that are a variance's M2 (one pass of moments)
    row_bytes: int              # the largest row (and block, after a rechunk) of a whole label

    def index(self, node: Node) -> int:
        return self._index[node]

    def __post_init__(self):
        object.__setattr__(self, "_index", {n: k for k, n in enumerate(self.nodes)})

    def is_boundary(self, node: Node) -> bool:
        return node.op is Op.INPUT or node.op in CONTRACTION or node in self.boundary

    def reduced_labels(self, node: Node) -> tuple[int, ...]:
        src = self.axes.of(node.inputs[0])
        return tuple(src[a] for a in node.attr("axes"))

    def segment(self, nodes: tuple[Node, ...], step: str = "") -> Segment:
        """The layer computing ``nodes`` (the partial of one boundary reduction with a ``step``)."""
        seen, reads = set(), set()
        stack = {"": list(nodes), "partial": list(nodes[0].inputs),
                 "moments": [variance_values(nodes[0])]}[step]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            if self.is_boundary(n):
                reads.add(n)
            else:
                stack.extend(n.inputs)
        return Segment(tuple(self.index(n) for n in nodes), tuple(sorted(self.index(n) for n in reads)),
                       step)

    def output_layers(self) -> list[tuple[Node, ...]]:
        """The graph's outputs that blockwise layers compute, those of one labelling together."""
        groups: dict[tuple, list[Node]] = {}
        for o in dict.fromkeys(self.graph.outputs):
            if not self.is_boundary(o):
                groups.setdefault(self.axes.of(o), []).append(o)
        return [tuple(g) for g in groups.values()]


def _check_graph(graph: Graph) -> None:
    if graph.writebacks:
        raise UnsupportedError(f"kfuse.dask: {graph.name}() writes into an argument; Dask arrays are "
                               "immutable: return the new value instead")
    if graph.checks or graph.host_checks:
        raise UnsupportedError(f"kfuse.dask: {graph.name}() indexes with run-time bounds checks, "
                               "which have no mapping onto Dask chunks")


def _row_wise(graph: Graph, axes: Axes, r: Node, labels: set, moments: frozenset) -> bool:
    """Whether ``r``'s value reaches a node having one of the reduced ``labels`` (broadcast back),
    other than a variance's deviations from it (``moments``: one pass of moments needs no row)."""
    users = graph.users()
    stack, seen = list(users[r]), set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n not in moments and labels & set(axes.of(n)):
            return True
        stack.extend(users[n])
    return False


def plan_mapping(graph: Graph, axes: Axes, split: set[int], row_bytes: int) -> Mapping:
    """The mapping of ``graph`` when the labels ``split`` are in several chunks."""
    _check_graph(graph)
    nodes = tuple(graph.nodes())
    reductions = [n for n in nodes if n.op in REDUCE]
    chains = [c[1] for r in reductions if (c := variance_chain(r))]
    in_moments = frozenset().union(*chains)
    whole = set()
    for r in reductions:
        labels = {axes.of(r.inputs[0])[a] for a in r.attr("axes")}
        row = math.prod(axes.size[lb] for lb in labels) * r.inputs[0].dtype.itemsize
        rows = any(axes.size[lb] > 1 for lb in set(axes.of(r.inputs[0])) - labels)
        if labels & split and rows and row <= row_bytes and _row_wise(graph, axes, r, labels, in_moments):
            whole |= labels & split
    boundary = set()
    for r in reductions:
        labels = {axes.of(r.inputs[0])[a] for a in r.attr("axes")}
        if labels & (split - whole):
            if r.op not in COMBINABLE:
                raise unsupported_op(r, "its partial results over chunks do not combine")
            boundary.add(r)
    moments = frozenset(r for r in boundary if variance_values(r) is not None)
    return Mapping(graph, nodes, axes, frozenset(whole), frozenset(boundary), moments, row_bytes)


def mapping_for(graph: Graph, chunks_of_inputs: dict[int, tuple], row_bytes: int) -> Mapping:
    """``plan_mapping`` for the Dask ``chunks`` of some inputs (by input position)."""
    axes = label_axes(graph)
    split = set()
    for k, chunks in chunks_of_inputs.items():
        for label, c in zip(axes.of(graph.inputs[k]), chunks):
            if len(c) > 1:
                split.add(label)
    return plan_mapping(graph, axes, split, row_bytes)
