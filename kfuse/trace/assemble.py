"""Arrays built from pieces: ``np.concatenate`` and its stacking forms, ``np.pad``, ``np.roll``,
``np.flip``, ``np.diff``, ``np.append``, ``np.tril``/``np.triu``, and the region write under item
assignment.

Everything here rests on ``PAD`` (the inverse of a slice: a piece placed in a larger shape, a fill
value elsewhere) and ``WHERE``: the concatenation of pieces p0..pn is
``where(region 0, pad(p0), where(region 1, pad(p1), ... pad(pn)))``, each region the PAD of a
``True`` piece over ``False``. No piece is copied: the generated kernel reads each where it lands.
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir import dtypes
from ..ir.graph import Node
from . import elementwise as ew
from . import movement as mv
from ..errors import at
from .core import Tracer, as_node, broadcast, cast, const_node, loc, operand, unsupported
from .regions import overlay, pad_node, zero_fill


def _array_node(x, what: str) -> Node:
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
    o = operand(x, what)
    if o.node is None:
        raise ValueError(f"zero-dimensional arrays cannot be concatenated{at(loc())}")
    return o.node


# --- concatenation ---------------------------------------------------------------------------
def _join(nodes: list[Node], axis: int, dtype) -> Node:
    """Concatenation of ``nodes`` (equal rank and dtype ``dtype``, shapes equal off ``axis``)."""
    shape = list(nodes[0].shape)
    shape[axis] = sum(n.shape[axis] for n in nodes)
    shape = tuple(shape)
    pieces, offset = [], 0
    for n in nodes:
        if n.shape[axis]:
            pieces.append((cast(n, dtype), offset))
        offset += n.shape[axis]
    if not pieces:
        return broadcast(const_node(0, dtype), shape)
    ones = (1,) * len(shape)

    def at_offset(o):
        return tuple(o if d == axis else 0 for d in range(len(shape)))
    last, o = pieces[-1]
    result = pad_node(last, at_offset(o), ones, shape, zero_fill(dtype))
    for n, o in reversed(pieces[:-1]):
        result = overlay(result, n, at_offset(o), ones)
    return result


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    if out is not None:
        raise unsupported("np.concatenate with out=", "return the result instead")
    nodes = [_array_node(a, "array to concatenate") for a in arrays]
    if not nodes:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        nodes = [mv.ravel(Tracer(n)).node for n in nodes]
        axis = 0
    nd = nodes[0].ndim
    axis = mv.axis_index(axis, nd)
    for k, n in enumerate(nodes[1:], 1):
        if n.ndim != nd:
            raise ValueError(
                f"all the input arrays must have same number of dimensions, but the array at index "
                f"0 has {nd} dimension(s) and the array at index {k} has {n.ndim} dimension(s)"
                f"{at(loc())}")
        for d in range(nd):
            if d != axis and n.shape[d] != nodes[0].shape[d]:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must match "
                    f"exactly, but along dimension {d}, the array at index 0 has size "
                    f"{nodes[0].shape[d]} and the array at index {k} has size {n.shape[d]}"
                    f"{at(loc())}")
    dt = dtypes.result_type(*[n.dtype for n in nodes]) if dtype is None else np.dtype(dtype)
    for n in nodes:
        if not np.can_cast(n.dtype, dt, casting):
            raise TypeError(f"Cannot cast array data from dtype('{n.dtype}') to dtype('{dt}') "
                            f"according to the rule '{casting}'{at(loc())}")
    return Tracer(_join(nodes, axis, dt))


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    nodes = [_array_node(a, "array to stack") for a in arrays]
    if not nodes:
        raise ValueError("need at least one array to stack")
    if len({n.shape for n in nodes}) != 1:
        raise ValueError(f"all input arrays must have the same shape{at(loc())}")
    axis = mv.axis_index(axis, nodes[0].ndim + 1)
    return concatenate([mv.expand_dims(Tracer(n), axis) for n in nodes], axis, out,
                       dtype=dtype, casting=casting)


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [mv.atleast_nd(_tracer(a), 1) for a in tup]
    return concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, dtype=dtype, casting=casting)


def vstack(tup, *, dtype=None, casting="same_kind"):
    return concatenate([mv.atleast_nd(_tracer(a), 2) for a in tup], 0, dtype=dtype, casting=casting)


def dstack(tup):
    return concatenate([mv.atleast_nd(_tracer(a), 3) for a in tup], 2)


def column_stack(tup):
    arrs = []
    for a in tup:
        t = _tracer(a)
        arrs.append(mv.reshape(t, (t.size, 1)) if t.ndim < 2 else t)
    return concatenate(arrs, 1)


def append(arr, values, axis=None):
    return concatenate([_tracer(arr), _tracer(values)], axis)


def _tracer(a) -> Tracer:
    if isinstance(a, Tracer):
        return a
    return Tracer(as_node(np.asarray(a) if isinstance(a, (list, tuple)) else a, "array"))


# --- padding, rolling, flipping, differences -------------------------------------------------
_PAD_MODES = ("constant", "edge", "wrap", "reflect", "symmetric")


def _pad_widths(pad_width, nd: int) -> list[tuple[int, int]]:
    w = np.asarray(pad_width)
    if w.dtype.kind not in "iu":
        raise TypeError(f"`pad_width` must be of integral type.{at(loc())}")
    w = np.broadcast_to(w, (nd, 2)).tolist()
    if any(v < 0 for row in w for v in row):
        raise ValueError(f"index can't contain negative values{at(loc())}")
    return [(int(a), int(b)) for a, b in w]


def pad(array, pad_width, mode="constant", **kwargs):
    t = _tracer(array)
    widths = _pad_widths(pad_width, t.ndim)
    if not isinstance(mode, str) or mode not in _PAD_MODES:
        raise unsupported(f"np.pad with mode={mode!r}", f"supported modes: {', '.join(_PAD_MODES)}")
    allowed = {"constant": {"constant_values"}, "reflect": {"reflect_type"},
               "symmetric": {"reflect_type"}}.get(mode, set())
    extra = set(kwargs) - allowed
    if extra:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {extra}")
    if kwargs.get("reflect_type", "even") != "even":
        raise unsupported("np.pad with reflect_type='odd'")
    node = t.node
    if mode == "constant":
        cv = np.asarray(kwargs.get("constant_values", 0))
        if cv.size != 1:
            raise unsupported("np.pad with per-axis constant_values", "pass one scalar")
        with np.errstate(all="ignore"):
            fill = cv.reshape(()).astype(node.dtype).item()
        shape = tuple(n + a + b for n, (a, b) in zip(node.shape, widths))
        return Tracer(pad_node(node, [a for a, _ in widths], (1,) * node.ndim, shape, fill))
    for d, (before, after) in enumerate(widths):
        if before or after:
            node = _pad_axis(node, d, before, after, mode)
    return Tracer(node)


def _pad_axis(node: Node, d: int, before: int, after: int, mode: str) -> Node:
    n = node.shape[d]
    if n == 0:
        raise ValueError(f"can't extend empty axis {d} using modes other than 'constant' or 'empty'"
                         f"{at(loc())}")
    limit = {"wrap": n, "symmetric": n, "reflect": n - 1, "edge": max(before, after)}[mode]
    if max(before, after) > limit:
        raise unsupported(f"np.pad mode {mode!r} wider than the axis ({max(before, after)} > "
                          f"{limit})", "pad in several calls")

    def take(lo, hi, step=1):
        key = [slice(None)] * node.ndim
        key[d] = slice(lo, None if hi is not None and hi < 0 else hi, step)
        return mv.getitem(Tracer(node), tuple(key)).node

    def edge(k, first):
        piece = take(0, 1) if first else take(n - 1, n)
        return broadcast(piece, tuple(k if e == d else s for e, s in enumerate(node.shape)))
    if mode == "edge":
        parts = [edge(before, True), node, edge(after, False)]
    elif mode == "wrap":
        parts = [take(n - before, n), node, take(0, after)]
    elif mode == "symmetric":
        parts = [take(before - 1, None, -1) if before else take(0, 0), node,
                 take(n - 1, n - 1 - after, -1) if after else take(0, 0)]
    else:   # reflect: the edge element is not repeated
        parts = [take(before, 0, -1) if before else take(0, 0), node,
                 take(n - 2, n - 2 - after, -1) if after else take(0, 0)]
    return _join(parts, d, node.dtype)


def roll(a, shift, axis=None):
    t = _tracer(a)
    if axis is None:
        return mv.reshape(roll(mv.ravel(t), shift, 0), t.shape)
    shifts = np.broadcast_to(np.asarray(shift), np.broadcast_shapes(np.shape(shift), np.shape(axis)))
    axes = np.broadcast_to(np.asarray(axis), shifts.shape)
    total = [0] * t.ndim
    for s, ax in zip(shifts.ravel().tolist(), axes.ravel().tolist()):
        total[mv.axis_index(ax, t.ndim)] += operator.index(s)
    node = t.node
    for d, s in enumerate(total):
        n = node.shape[d]
        k = s % n if n else 0
        if k:
            key = [slice(None)] * node.ndim
            head, tail = list(key), list(key)
            head[d], tail[d] = slice(n - k, None), slice(None, n - k)
            node = _join([mv.getitem(Tracer(node), tuple(head)).node,
                          mv.getitem(Tracer(node), tuple(tail)).node], d, node.dtype)
    return Tracer(node)


def flip(m, axis=None):
    t = _tracer(m)
    axes = range(t.ndim) if axis is None else [
        mv.axis_index(ax, t.ndim) for ax in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    key = [slice(None)] * t.ndim
    for d in axes:
        key[d] = slice(None, None, -1)
    return mv.getitem(t, tuple(key))


def fliplr(m):
    t = _tracer(m)
    if t.ndim < 2:
        raise ValueError(f"Input must be >= 2-d.{at(loc())}")
    return flip(t, 1)


def flipud(m):
    t = _tracer(m)
    if t.ndim < 1:
        raise ValueError(f"Input must be >= 1-d.{at(loc())}")
    return flip(t, 0)


def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    t = _tracer(a)
    if n == 0:
        return t
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if t.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = mv.axis_index(axis, t.ndim)
    parts = []
    for extra in (prepend, None, append):
        if extra is None:
            parts.append(t)
        elif extra is not np._NoValue:
            e = _tracer(extra)
            if e.ndim == 0:
                shape = list(t.shape)
                shape[axis] = 1
                e = mv.broadcast_to(e, tuple(shape))
            parts.append(e)
    if len(parts) > 1:
        t = concatenate(parts, axis)
    lo = [slice(None)] * t.ndim
    hi = list(lo)
    lo[axis], hi[axis] = slice(1, None), slice(None, -1)
    name = "not_equal" if t.dtype == np.bool_ else "subtract"
    for _ in range(n):
        t = ew.apply_ufunc(name, mv.getitem(t, tuple(lo)), mv.getitem(t, tuple(hi)))
    return t


# --- triangles -------------------------------------------------------------------------------
def tril(m, k=0):
    """As NumPy: ``where(tri(M, N, k), m, 0)`` over the last two dims (the mask an array constant)."""
    t = _tracer(m)
    mask = np.tri(*t.shape[-2:], k=operator.index(k), dtype=bool)
    return ew.where(mask, t, np.zeros(1, t.dtype))


def triu(m, k=0):
    t = _tracer(m)
    mask = np.tri(*t.shape[-2:], k=operator.index(k) - 1, dtype=bool)
    return ew.where(mask, np.zeros(1, t.dtype), t)
