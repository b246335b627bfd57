"""A variance over split axes in one pass, combined as Dask's own ``var`` is (``moment_chunk``,
``moment_combine``, ``moment_agg`` of ``dask/array/reductions.py``).

The traced ``x.var(axis)`` (and ``std``, and a layernorm's variance written out) is
``sum((E - sum(E)/N) ** 2)``: two reductions, the second reading the first. Over split axes that
would be two passes over the data; instead each chunk's kfuse kernel computes its count, sum and
sum of squared deviations from its own mean, and the partials combine by Chan's formula
``M2 = sum(M2_i + n_i * (mean_i - mean) ** 2)`` (float64, the chunk's array module: NumPy or
CuPy). A chunk's three partials lie along the first reduced axis (3 where other partials have 1),
so Dask's shapes stay those of a reduction. The mean itself, where the function also uses it,
stays its own reduction.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..ir.graph import Node
from ..ir.ops import Op
from .detect import array_module

_THROUGH = (Op.BROADCAST, Op.RESHAPE, Op.CAST)


def _strip_casts(n: Node) -> Node:
    while n.op is Op.CAST:
        n = n.inputs[0]
    return n


def variance_values(r: Node) -> Node | None:
    """``E`` when ``r`` is ``sum((E - mean(E)) ** 2)`` over its axes (the mean ``sum(E) / N``
    over the same axes, through casts, reshapes and broadcasts), else None."""
    chain = variance_chain(r)
    return chain[0] if chain else None


def variance_chain(r: Node) -> tuple:
    """``(E, nodes)`` for a variance ``r`` (see :func:`variance_values`): ``nodes`` are those
    between its mean and ``r`` (the mean broadcast back, the deviations, their squares), which
    moments replace; else ``()``."""
    if r.op is not Op.SUM:
        return ()
    q = r.inputs[0]
    if not (q.op is Op.SQUARE or (q.op is Op.MULTIPLY and q.inputs[0] is q.inputs[1])):
        return ()
    d = q.inputs[0]
    if d.op is not Op.SUBTRACT:
        return ()
    e, mean = d.inputs
    nodes = {q, d}
    while mean.op in _THROUGH:
        nodes.add(mean)
        mean = mean.inputs[0]
    if mean.op is not Op.TRUE_DIVIDE:
        return ()
    s, count = _strip_casts(mean.inputs[0]), mean.inputs[1]
    while count.op is Op.BROADCAST:
        count = count.inputs[0]
    axes = r.attr("axes")
    if (s.op is not Op.SUM or tuple(s.attr("axes")) != tuple(axes) or count.op is not Op.CONST
            or s.inputs[0].shape != e.shape or _strip_casts(s.inputs[0]) is not _strip_casts(e)):
        return ()
    if count.attr("value") != math.prod(e.shape[a] for a in axes):
        return ()
    return e, frozenset(nodes)


def moment_nodes(e: Node, r: Node) -> tuple[Node, Node]:
    """The chunk's sum of ``e`` and sum of squared deviations from its own mean over ``r``'s
    axes (keepdims, in ``r``'s dtype): the kfuse kernel of the chunk step."""
    dt, axes = r.dtype, tuple(r.attr("axes"))
    if e.dtype != dt:
        e = Node(Op.CAST, dt, e.shape, (e,))
    kept = tuple(1 if d in axes else s for d, s in enumerate(e.shape))
    attrs = {"axes": axes, "keepdims": True}
    total = Node(Op.SUM, dt, kept, (e,), attrs)
    count = Node(Op.CONST, dt, (), (), {"value": float(math.prod(e.shape[a] for a in axes))})
    mean = Node(Op.TRUE_DIVIDE, dt, kept, (total, Node(Op.BROADCAST, dt, kept, (count,))))
    dev = Node(Op.SUBTRACT, dt, e.shape, (e, Node(Op.BROADCAST, dt, e.shape, (mean,))))
    return total, Node(Op.SUM, dt, kept, (Node(Op.MULTIPLY, dt, e.shape, (dev, dev)),), attrs, loc=r.loc)


def stack_partials(axis: int, count: int, total, m2):
    """The chunk's (n, sum, M2), float64, one after the other along ``axis``."""
    xp = array_module(total)
    f8 = np.float64
    return xp.concatenate([xp.full(total.shape, count, dtype=f8), total.astype(f8), m2.astype(f8)], axis=axis)


def _combine(x, axis):
    xp = array_module(x)
    axis = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    a0 = min(axis)
    y = x.reshape(x.shape[:a0] + (x.shape[a0] // 3, 3) + x.shape[a0 + 1:])
    n, s, m2 = (y[(slice(None),) * (a0 + 1) + (k,)] for k in range(3))
    nt = n.sum(axis=axis, keepdims=True)
    st = s.sum(axis=axis, keepdims=True)
    m2t = (m2 + n * (s / n - st / nt) ** 2).sum(axis=axis, keepdims=True)
    return xp, a0, nt, st, m2t


def moment_combine(x, axis=None, keepdims=True, **kwargs):
    xp, a0, n, s, m2 = _combine(x, axis)
    return xp.concatenate([n, s, m2], axis=a0)


@dataclasses.dataclass(frozen=True)
class MomentAggregate:
    """The sum of squared deviations over all chunks, in the reduction's dtype."""
    dtype: str

    def __call__(self, x, axis=None, keepdims=False, **kwargs):
        xp, _, _, _, m2 = _combine(x, axis)
        if not keepdims:
            m2 = xp.squeeze(m2, axis=axis)
        return m2.astype(self.dtype)
