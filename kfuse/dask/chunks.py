"""The per-chunk kfuse calls that Dask tasks run, and the chunk-shaped graphs they compile.

A task holds a :class:`Signature` (the jitted function, pickled as its Python function and
options by ``JitFunction.__reduce__``, plus its arguments' specs) and a :class:`~.mapping.Segment`
(node indices): never a compiled kernel. Where it runs, the first task of a signature traces and
optimizes the function again (the same graph, node for node), and each distinct chunk shape
builds the segment's chunk graph and compiles it through the function's own pipeline
(``JitFunction._chunk_program``), which loads kernels from the disk cache or compiles them once
per process; later tasks with that shape reuse the program.
"""
from __future__ import annotations

import dataclasses
import math
import threading
from typing import Any

from ..ir.graph import Graph, Node
from ..ir.ops import Op
from .axes import Axes, label_axes
from .detect import chunk_backend, on_device
from .mapping import Segment
from .moments import moment_nodes, stack_partials, variance_values

_LOCK = threading.RLock()
_GRAPHS: dict[str, tuple[tuple[Node, ...], Axes, str]] = {}     # token -> (nodes, axes, name)
_PROGRAMS: dict[tuple, Any] = {}


def register(token: str, graph: Graph, axes: Axes) -> None:
    """The client's own graph for ``token`` (tasks run in this process then skip the trace)."""
    with _LOCK:
        _GRAPHS.setdefault(token, (tuple(graph.nodes()), axes, graph.name))


@dataclasses.dataclass(frozen=True)
class Signature:
    """The function and its arguments' specs (``ArgSpec`` by parameter name); ``token`` names
    this pair in every process."""
    jit: Any
    specs: tuple[tuple[str, Any], ...]
    token: str

    def graph(self) -> tuple[tuple[Node, ...], Axes, str]:
        with _LOCK:
            found = _GRAPHS.get(self.token)
            if found is None:
                from ..fusion.pipeline import optimize
                from ..trace import trace_function
                graph = optimize(trace_function(self.jit.fn, dict(self.specs), self.jit.fn.__name__))
                found = _GRAPHS[self.token] = (tuple(graph.nodes()), label_axes(graph), graph.name)
            return found

    def program(self, key: tuple, build, backend):
        """The compiled program of the chunk graph ``build()`` for ``key``, memoised."""
        with _LOCK:
            prog = _PROGRAMS.get(key)
            if prog is None:
                prog = _PROGRAMS[key] = self.jit._chunk_program(build(), backend)
            return prog


def chunk_shape(axes: Axes, node: Node, ext: dict) -> tuple[int, ...]:
    return tuple(1 if full == 1 else ext.get(lb, full) for lb, full in zip(axes.of(node), node.shape))


def extents(nodes: tuple[Node, ...], axes: Axes, seg: Segment, shapes: list) -> dict:
    """Each label's extent in this chunk, from the segment inputs' chunk ``shapes``."""
    ext = {}
    for i, shape in zip(seg.inputs, shapes):
        for lb, full, c in zip(axes.of(nodes[i]), nodes[i].shape, shape):
            if full != 1:
                ext[lb] = c
    return ext


def chunk_graph(nodes: tuple[Node, ...], axes: Axes, seg: Segment, shapes: list, name: str) -> Graph:
    """The segment's nodes rebuilt at the shapes of one chunk: the inputs at ``shapes``, every
    other dim at the extent of its label in the inputs (a label no input has: its full extent;
    size-1 dims stay 1). Reductions inside a segment run over whole labels, so constants such
    as a mean's count stay right."""
    ins = [nodes[i] for i in seg.inputs]
    ext = extents(nodes, axes, seg, shapes)
    new = {n: Node(Op.INPUT, n.dtype, tuple(shapes[k]), (), {"index": k, "name": f"in{k}"})
           for k, n in enumerate(ins)}
    out = nodes[seg.outs[0]]
    for n in nodes[:max(seg.outs) + 1]:
        if n not in new and n.op is not Op.INPUT and all(i in new for i in n.inputs):
            new[n] = n.replace(shape=chunk_shape(axes, n, ext), inputs=tuple(new[i] for i in n.inputs))
    if seg.step == "moments":
        results = moment_nodes(new[variance_values(out)], out)
    elif seg.step == "partial":
        values = new[out.inputs[0]]
        reduced = set(out.attr("axes"))
        shape = tuple(1 if d in reduced else s for d, s in enumerate(values.shape))
        results = (Node(out.op, out.dtype, shape, (values,), dict(out.attrs) | {"keepdims": True}, loc=out.loc),)
    else:
        results = tuple(new[nodes[i]] for i in seg.outs)
    return Graph(f"{name}_chunk{seg.outs[0]}", tuple(new[n] for n in ins), results)


@dataclasses.dataclass(frozen=True)
class ChunkCall:
    """A blockwise task's function: the segment's kfuse program on one chunk of each input."""
    sig: Signature
    seg: Segment

    def __call__(self, *chunks):
        backend = chunk_backend(chunks, self.sig.jit.options.backend)
        arrays = on_device(list(chunks), backend)
        shapes = [tuple(a.shape) for a in arrays]
        key = (self.sig.token, self.seg, tuple(shapes), backend.name)

        def build():
            nodes, axes, name = self.sig.graph()
            return chunk_graph(nodes, axes, self.seg, shapes, name)
        outs = self.sig.program(key, build, backend)(arrays)
        if self.seg.step == "moments":
            nodes, axes, _ = self.sig.graph()
            r = nodes[self.seg.outs[0]]
            e = chunk_shape(axes, variance_values(r), extents(nodes, axes, self.seg, shapes))
            return stack_partials(min(r.attr("axes")), math.prod(e[a] for a in r.attr("axes")), *outs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __dask_tokenize__(self):
        return ("kfuse-chunk", self.sig.token, self.seg)
