"""A boundary reduction's combine and aggregate steps (``dask.array.reduction``): the same
reduction as the function's (sum, prod, max, min, any, all) over the partial results of the
chunks, compiled by kfuse like any chunk graph. Its chunk step is the segment layer before it
(producers plus the partial reduction, :class:`.chunks.ChunkCall`), so the step here passes
those partials through."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ir.graph import Graph, Node
from ..ir.ops import Op
from .chunks import Signature
from .detect import chunk_backend, on_device


def partials(x, axis=None, keepdims=True, **kwargs):
    """The chunk step: the blockwise layer before has computed each chunk's partial result."""
    return x


def reduce_graph(op: Op, dtype: np.dtype, shape: tuple, axes: tuple, keepdims: bool) -> Graph:
    inp = Node(Op.INPUT, dtype, shape, (), {"index": 0, "name": "partials"})
    out = tuple(1 if d in axes else s for d, s in enumerate(shape)) if keepdims else \
        tuple(s for d, s in enumerate(shape) if d not in axes)
    return Graph(f"combine_{op.value}", (inp,), (Node(op, dtype, out, (inp,), {"axes": axes, "keepdims": keepdims}),))


@dataclasses.dataclass(frozen=True)
class ReduceStep:
    """``op`` over the concatenated partials (Dask's combine and aggregate signature)."""
    sig: Signature
    op: str

    def __call__(self, x, axis=None, keepdims=False, **kwargs):
        axes = tuple(sorted(range(x.ndim) if axis is None else
                            (a % x.ndim for a in (axis if isinstance(axis, tuple) else (axis,)))))
        backend = chunk_backend([x], self.sig.jit.options.backend)
        (x,) = on_device([x], backend)
        key = ("reduce", self.op, x.dtype.str, tuple(x.shape), axes, bool(keepdims), backend.name)
        prog = self.sig.program(key, lambda: reduce_graph(Op(self.op), x.dtype, tuple(x.shape), axes,
                                                          bool(keepdims)), backend)
        return prog([x])[0]

    def __dask_tokenize__(self):
        return ("kfuse-reduce", self.op)
