"""Placing a piece in a region of a larger array, as nodes: :func:`pad_node` (``PAD``, the inverse of
a slice), :func:`region_mask` (where the piece lands) and :func:`overlay` (a ``WHERE`` of the two
over a base). Array assembly (``assemble``) and writes into traced arrays (``writes``) rest on them.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node
from ..ir.ops import Op
from .core import broadcast, const_node, mk


def pad_node(node: Node, starts, steps, shape, fill) -> Node:
    """``node`` placed at ``starts`` (every ``steps``-th element) of ``shape``, ``fill`` elsewhere."""
    shape, starts = tuple(shape), tuple(int(s) for s in starts)
    steps = tuple(1 if n == 1 else int(t) for n, t in zip(node.shape, steps))
    if node.size == 0:
        return broadcast(const_node(fill, node.dtype), shape)
    if shape == node.shape:
        return node
    return mk(Op.PAD, node.dtype, shape, [node], {"starts": starts, "steps": steps, "fill": fill})


def region_mask(piece_shape, starts, steps, shape) -> Node:
    """A bool array of ``shape``: True where a piece placed by :func:`pad_node` lands."""
    return pad_node(broadcast(const_node(True, np.bool_), piece_shape), starts, steps, shape, False)


def overlay(base: Node, piece: Node, starts, steps) -> Node:
    """``base`` with ``piece`` written over the region at ``starts``/``steps`` (same dtypes)."""
    if piece.shape == base.shape:
        return piece
    mask = region_mask(piece.shape, starts, steps, base.shape)
    placed = pad_node(piece, starts, steps, base.shape, zero_fill(base.dtype))
    return mk(Op.WHERE, base.dtype, base.shape, [mask, placed, base])


def zero_fill(dtype) -> bool | int | float:
    """The zero of ``dtype`` as a Python scalar (the fill under a placed piece)."""
    return np.zeros((), dtype=dtype).item()
