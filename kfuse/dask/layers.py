"""The client side: a call's graph mapped onto Dask layers (lazy Dask arrays), each recorded for
``explain``. :func:`build` traces and optimizes the function for the arrays' full shapes, asks
:mod:`.mapping` which layer computes what, then makes the layers: rechunks of whole labels,
``blockwise`` layers of :class:`.chunks.ChunkCall` (one task per chunk), ``dask.array.reduction``
with the steps of :mod:`.reductions`, and ``dask.array.matmul``."""
from __future__ import annotations

import dataclasses
import hashlib
import math
import uuid
import weakref
from typing import Any

import numpy as np

from .. import config as _config
from ..ir.graph import Graph, Node, unflatten
from ..ir.ops import CONTRACTION, Op
from .chunks import ChunkCall, Signature, register
from .detect import is_dask_array
from .mapping import Mapping, mapping_for
from .moments import MomentAggregate, moment_combine, variance_values
from .reductions import ReduceStep, partials

_IDS: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()


@dataclasses.dataclass(frozen=True)
class Layer:
    kind: str           # rechunk | blockwise | reduction | matmul
    what: str           # the kfuse ops, or the array rechunked
    shape: tuple
    tasks: int
    moved: int          # bytes moved between workers (an estimate: see explain)


def _token(jit, specs: tuple) -> str:
    ident = _IDS.get(jit)
    if ident is None:
        ident = _IDS[jit] = uuid.uuid4().hex
    return ident + ":" + hashlib.sha256(repr(specs).encode()).hexdigest()[:16]


def _labels(m: Mapping, node: Node) -> tuple[str, ...]:
    return tuple(f"k{lb}" for lb in m.axes.of(node))


def _ops(m: Mapping, nodes: tuple[Node, ...], step: str) -> str:
    seg = m.segment(nodes, step)
    reads = {m.nodes[i] for i in seg.inputs}
    seen, stack, ops = set(), [m.nodes[i] for i in seg.outs], []
    if step == "moments":           # the values' ops, then the chunk's sum and squared deviations
        e = variance_values(nodes[0])
        before = _ops(m, (e,), "") if e.op is not Op.INPUT else "copy"
        return ("" if before == "copy" else before + "/") + "sum/divide/subtract/multiply/sum"
    while stack:
        n = stack.pop()
        if n in seen or (n in reads and n not in nodes):
            continue
        seen.add(n)
        if n.op not in (Op.INPUT, Op.CONST, Op.BROADCAST, Op.RESHAPE):
            ops.append(n.op.value)
        stack.extend(n.inputs)
    return "/".join(reversed(ops)) or "copy"


def _tasks_after(out, part) -> int:
    """The combine and aggregate tasks of a reduction (its pass-through chunk step, one task a
    partial, is fused into the partials' layer by Dask's blockwise fusion)."""
    return len(out.__dask_graph__()) - len(part.__dask_graph__()) - part.npartitions


class _Builder:
    def __init__(self, m: Mapping, sig: Signature, values: list):
        self.m, self.sig, self.values = m, sig, values
        self.layers: list[Layer] = []
        self.arrays: dict[Node, Any] = {}
        self.meta = next((v._meta for v in values if is_dask_array(v)), np.empty(()))

    def _meta(self, node: Node):
        from dask.array.utils import meta_from_array
        return meta_from_array(self.meta, ndim=node.ndim, dtype=node.dtype)

    def value(self, node: Node):
        """The Dask array (or a 0-d host array, passed to every task) of ``node``."""
        if node not in self.arrays:
            self.arrays[node] = self._make(node)
        return self.arrays[node]

    def _make(self, node: Node):
        import dask.array as da
        m = self.m
        if node.op is Op.INPUT:
            v = self.values[m.graph.inputs.index(node)]
            if is_dask_array(v):
                return v
            if node.ndim == 0:
                return np.asarray(v, dtype=node.dtype)
            return da.from_array(v, chunks=-1)
        if node.op in CONTRACTION:
            a, b = (self.arg(i) for i in node.inputs)
            out = da.matmul(a, b)
            moved = a.nbytes * b.numblocks[-1] + b.nbytes * a.numblocks[-2] if a.npartitions * b.npartitions > 1 else 0
            self.layers.append(Layer("matmul", "matmul (Dask's blocked product)", node.shape,
                                     out.npartitions, moved))
            return out
        if node in m.boundary:
            return self._reduction(node)
        return self.blockwise((node,))[0]

    def _reduction(self, node: Node):
        """A boundary reduction: its partials' blockwise layer, then ``dask.array.reduction``."""
        import dask.array as da
        moments = node in self.m.moments
        (part,) = self.blockwise((node,), "moments" if moments else "partial")
        if moments:
            agg, comb, what = MomentAggregate(node.dtype.str), moment_combine, \
                "variance moments of chunk partials (Dask's formulas)"
        else:
            agg = comb = ReduceStep(self.sig, node.op.value)
            what = f"{node.op.value} of chunk partials (combine, aggregate)"
        out = da.reduction(part, partials, agg, axis=node.attr("axes"), keepdims=node.attr("keepdims"),
                           dtype=node.dtype, concatenate=True, combine=comb, meta=self._meta(node))
        self.layers.append(Layer("reduction", what, node.shape, _tasks_after(out, part), part.nbytes))
        return out

    def arg(self, node: Node):
        """``value(node)`` rechunked to one chunk along its whole labels."""
        v = self.value(node)
        if not is_dask_array(v):
            return v
        whole = {d: -1 for d, lb in enumerate(self.m.axes.of(node)) if lb in self.m.whole and v.numblocks[d] > 1}
        if not whole:
            return v
        block = math.prod(v.shape[d] if d in whole else v.chunksize[d] for d in range(v.ndim)) * v.dtype.itemsize
        if block <= self.m.row_bytes:
            out = v.rechunk(whole)
        else:       # whole rows, as many a block as fit: the other axes split anew
            out = v.rechunk({d: whole.get(d, "auto") for d in range(v.ndim)}, block_size_limit=self.m.row_bytes)
        self.layers.append(Layer("rechunk", f"{node.attr('name') or node.op.value} axes {sorted(whole)} to one chunk",
                                 node.shape, out.npartitions, v.nbytes))
        self.arrays[node] = out     # one rechunk serves every reader
        return out

    def blockwise(self, nodes: tuple[Node, ...], step: str = "") -> list:
        """The Dask arrays of ``nodes`` from one blockwise layer (several: its tasks return a
        tuple, and a ``getitem`` per value takes each out)."""
        import operator

        import dask.array as da
        m = self.m
        node = nodes[0]
        seg = m.segment(nodes, step)
        args, seen_labels, moved = [], set(), 0
        for i in seg.inputs:
            n = m.nodes[i]
            a = self.arg(n)
            literal = not is_dask_array(a)
            args += [a, None if literal else _labels(m, n)]
            if not literal:
                seen_labels |= set(_labels(m, n))
        shape_node = {"": node, "partial": node.inputs[0], "moments": variance_values(node)}[step]
        out_ind = _labels(m, shape_node)
        new_axes = {lb: s for lb, s in zip(out_ind, shape_node.shape) if lb not in seen_labels}
        adjust = {out_ind[a]: 1 for a in node.attr("axes")} if step else None
        metas = [self._meta(shape_node if step else n) for n in nodes]
        if step == "moments":       # (n, sum, M2), float64, along the first reduced axis
            adjust[out_ind[min(node.attr("axes"))]] = 3
            metas = [self._meta(Node(Op.INPUT, np.float64, shape_node.shape, (), {"name": "moments"}))]
        out = da.blockwise(ChunkCall(self.sig, seg), out_ind, *args, dtype=node.dtype, new_axes=new_axes,
                           adjust_chunks=adjust, concatenate=True,
                           meta=metas[0] if len(nodes) == 1 else tuple(metas))
        for a in args[::2]:                     # an input read by several tasks is copied to each
            if is_dask_array(a) and a.npartitions < out.npartitions:
                moved += a.nbytes * (out.npartitions // a.npartitions - 1)
        what = _ops(m, nodes, step) + (f" ({step})" if step else "") + \
            (f" ({len(nodes)} outputs)" if len(nodes) > 1 else "")
        self.layers.append(Layer("blockwise", what, out.shape, out.npartitions, moved))
        if len(nodes) == 1:
            return [out]
        return [out.map_blocks(operator.getitem, k, dtype=n.dtype, meta=metas[k]) for k, n in enumerate(nodes)]

    def outputs(self) -> list:
        """The graph's outputs (an argument returned as it is: the caller's array)."""
        for layer in self.m.output_layers():
            if len(layer) > 1:
                self.arrays.update(zip(layer, self.blockwise(layer)))
        graph = self.m.graph
        return [self.values[graph.inputs.index(o)] if o.op is Op.INPUT else self.value(o) for o in graph.outputs]


def build(jit, specs: dict, values: dict):
    """The Dask arrays of ``jit(**values)`` (its return structure) and the layers made."""
    from ..fusion.pipeline import optimize
    from ..trace import trace_function
    graph: Graph = optimize(trace_function(jit.fn, specs, jit.fn.__name__))
    n_args = len(graph.inputs) - len(graph.constants)
    inputs = [values[n.attr("name")] for n in graph.inputs[:n_args]] + list(graph.constants)
    chunks = {k: v.chunks for k, v in enumerate(inputs) if is_dask_array(v)}
    m = mapping_for(graph, chunks, _config.get().dask_row_bytes)
    spec_items = tuple(specs.items())
    sig = Signature(jit, spec_items, _token(jit, spec_items))
    register(sig.token, graph, m.axes)
    b = _Builder(m, sig, inputs)
    return unflatten(graph.out_tree, b.outputs()), b.layers, graph
