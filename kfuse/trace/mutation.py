"""Writes into traced arrays with NumPy's semantics: item assignment (``x[key] = v``), in-place
operators (``x += y``) and the views they show through.

A write gives the written tracer a new node (a ``WHERE`` over the region, :func:`regions.overlay`)
instead of changing memory (:func:`kfuse.trace.writes.store`). A view (``v = x[1:]``, ``x.T``; see
:class:`~kfuse.trace.core.Tracer`) written into passes the write back to its base through the
inverse of each movement between them (a slice's region, the inverse permutation, the reshape
back); a view read after its base was
written is re-derived from the base's new node. So ``x[0] = 1; y = x[:, ::-1]; y[1] = 2`` gives
NumPy's ``x`` and ``y``.

A write into an argument (or a view of one) changes the caller's array, as in NumPy: the traced
function's graph returns the argument's final value too (``Graph.writebacks``) and the call copies
it into the argument once every kernel has run (``kfuse.api``).

Writing through index arrays (``x[idx] = v``, ``x[rows, 1:] = v``) is a ``SCATTER`` into the view
the arrays index (``indexing.scatter``), written back as a basic-key write; ``np.add.at`` and the
other ``ufunc.at``, ``np.put`` and ``np.put_along_axis`` are in :mod:`kfuse.trace.scatter`.

Refused, with a clear error: writing into a broadcast (read-only in NumPy too, ValueError),
through a reshape whose view-or-copy NumPy decides by memory layout, and assigning an array of
values through a boolean mask (its length is the mask's count, not known while tracing).
"""
from __future__ import annotations

import numpy as np

from ..errors import at
from ..ir.graph import Node
from ..ir.ops import Op
from . import indexing
from . import movement as mv
from .core import (Tracer, broadcast, cast, const_node, loc, mk, numpy_scalar, operand, shape_text,
                   unsupported)
from .selection import Selection, spread_mask
from .writes import broadcasts_to, check_writable, overlay_slice, store, write_out

_VIEW_OPS = frozenset({Op.SLICE, Op.RESHAPE, Op.PERMUTE, Op.BROADCAST, Op.REAL, Op.IMAG})   # (parts: of a complex array)


# --- views -----------------------------------------------------------------------------------
def link_view(result, source, exact: bool = True, scalar_index: bool = False):
    """Mark ``result`` (just made from ``source`` by a NumPy function that returns a view) as a
    view of ``source``'s data; ``exact=False`` for a view-or-copy (reshape); ``scalar_index``: a
    GATHER at traced integer scalars is in the chain too (``x[i]``). Returns ``result``."""
    if (not isinstance(result, Tracer) or not isinstance(source, Tracer) or source.weak is not None
            or numpy_scalar(source)):      # (NumPy's "view" of a NumPy scalar is a new array)
        return result
    src, n, chain = source.node, result.node, []
    view_ops = _VIEW_OPS | {Op.GATHER} if scalar_index else _VIEW_OPS
    while n is not src:
        if n.op not in view_ops:
            return result                       # not a movement of source: a new array
        chain.append(n)
        n = n.inputs[0]
    root = source.base if source.base is not None else source
    result.base, result.chain = root, source.chain + tuple(reversed(chain))
    result._from, result.exact = root.node, source.exact and exact
    return result


def viewing(fn, exact=True):
    """``fn`` (a movement function whose NumPy counterpart returns a view of its first argument),
    its results linked to that argument. ``exact``: a bool, or a predicate on (source, result)."""
    def wrapped(a, *args, **kwargs):
        res = fn(a, *args, **kwargs)
        if isinstance(res, tuple):          # np.broadcast_arrays / np.atleast_*d of several
            srcs = (a,) + args
            return tuple(link_view(r, s) for r, s in zip(res, srcs))
        ok = exact(a, res) if callable(exact) else exact
        return link_view(res, a, ok)
    wrapped.__name__ = getattr(fn, "__name__", "view")
    return wrapped


def unit_dims_only(source, result) -> bool:
    """A reshape that only adds or drops length-1 dims, a view whatever the memory layout."""
    def core(shape):
        return tuple(s for s in shape if s != 1)
    return isinstance(source, Tracer) and core(source.shape) == core(result.shape)


def getitem(a, key):
    """``a[key]``: a view, except a 0-d result without ``...`` (NumPy gives a scalar copy); a
    boolean mask gives a :class:`Selection` (a constant one, NumPy's nonzero positions: a gather)."""
    ellipsis = any(k is Ellipsis for k in (key if isinstance(key, tuple) else (key,)))
    if indexing.is_advanced(key):             # lists, constant arrays, integer tracers
        res = indexing.getitem(a, key)        # a copy, as NumPy's fancy indexing gives, but a view
        if (res.ndim or ellipsis) and _scalar_key(key):   # at integer scalars (x[i], x[v.argmax(), ...])
            return link_view(res, a, scalar_index=True)
        return res
    mask = _mask(key)                         # (left: a traced boolean mask)
    if mask is not None:
        node = a.node
        _check_mask(node, mask)
        return Selection(node, mask)
    res = mv.getitem(a, key)
    if res.ndim == 0 and not ellipsis:
        return res
    return link_view(res, a)


def _scalar_key(key) -> bool:
    """Whether ``key``'s only non-basic items are traced integer scalars that NumPy holds as
    Python or NumPy scalars (a basic index there: ``x[i]`` is a view), not 0-d arrays (an index
    array there: a copy)."""
    items = key if isinstance(key, tuple) else (key,)
    arrays = [k for k in items if isinstance(k, (list, np.ndarray, Tracer))]
    return all(isinstance(k, Tracer) and k.ndim == 0 and k.dtype.kind in "iu"
               and (k.weak is not None or numpy_scalar(k)) for k in arrays)


# --- writes ----------------------------------------------------------------------------------
def setitem(t: Tracer, key, value) -> None:
    """``t[key] = value``."""
    check_writable(t, "item assignment")
    store(t, _assigned(t.node, key, value))


def update(t: Tracer, result: Tracer, ufunc: str) -> Tracer:
    """``t op= y`` given ``result = t op y``: NumPy's ``op(t, y, out=t)`` (same_kind casting, no
    broadcasting of ``t``). Python scalars, NumPy scalar arguments and 0-d values that are not
    views rebind the name to ``result`` instead, as NumPy scalars are immutable (``s += a`` of an
    ``np.int64`` ``s`` gives ``s + a``: its dtype and shape, nothing written back)."""
    if t.weak is not None or (t.ndim == 0 and t.base is None and (t.argument is None or numpy_scalar(t))):
        return result
    return write_out(t, result, ufunc, what=f"in-place {ufunc}")


def _mask(key) -> Node | None:
    """The node of a boolean-array index (a traced or constant mask), else None."""
    if isinstance(key, (Tracer, np.ndarray)) and key.dtype == np.bool_ and key.ndim:
        return operand(key, "boolean index").node
    return None


def _one_element(cur: Node, key) -> bool:
    """Whether ``key`` names one element of ``cur`` by an integer for every dim (``x[1, -2]``,
    ``x[i]`` of a 1-D ``x``, ``s[()]`` of a 0-d ``s``): NumPy then stores one scalar, and refuses an
    array value (even of one element) unless the element is a bool (it takes the value's truth)."""
    items = key if isinstance(key, tuple) else (key,)
    return len(items) == cur.ndim and all(
        (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)))
        or (isinstance(k, Tracer) and k.ndim == 0 and k.dtype.kind in "iu") for k in items)


def _assigned(cur: Node, key, value) -> Node:
    """The node of ``cur`` after ``cur[key] = value``."""
    if _one_element(cur, key) and (value.ndim if hasattr(value, "ndim") else np.ndim(value)):
        if cur.dtype == np.bool_ and isinstance(value, (list, tuple)):
            value = bool(value)         # (NumPy stores a bool element as the value's truth)
        elif cur.dtype.kind == "c":     # NumPy converts to a Python complex first
            raise TypeError(f"only 0-dimensional arrays can be converted to Python scalars{at(loc())}")
        elif cur.dtype != np.bool_ or np.prod(value.shape, dtype=np.int64) != 1:
            raise ValueError(f"setting an array element with a sequence.{at(loc())}")
    mask = _mask(key)
    if mask is not None:
        return _masked(cur, mask, value)
    if indexing.is_advanced(key):               # a SCATTER into the view the arrays index
        new, basic = indexing.scatter(cur, key, lambda shape: _value_node(value, cur.dtype, shape))
        return _assigned(cur, basic, Tracer(new))
    starts, steps, lengths, out_shape = mv.basic_index(cur.shape, key)
    piece = _value_node(value, cur.dtype, tuple(out_shape))
    return overlay_slice(cur, mv.reshape_node(piece, tuple(lengths)), starts, steps)


def _value_node(value, dtype, shape: tuple) -> Node:
    """The assigned value cast (unsafe, as NumPy's setitem; a Python int out of range raises) and
    broadcast to the indexed ``shape`` (extra leading length-1 dims dropped, as NumPy does)."""
    if isinstance(value, (list, tuple)):
        value = np.asarray(value)
    o = operand(value, "assigned value")
    if o.node is None:      # converted as NumPy's setitem does (NaN into ints, ints out of range raise)
        slot = np.empty((), dtype)
        try:
            slot[()] = value            # (NumPy's own rules: np.int64(-1) wraps into uint16)
        except (ValueError, OverflowError) as e:
            raise type(e)(f"{e}{at(loc())}") from None
        node = const_node(slot.item(), dtype)
    else:
        node = cast(o.node, dtype)
    while node.ndim > len(shape) and node.shape[0] == 1:
        node = mv.reshape_node(node, node.shape[1:])
    if not broadcasts_to(node.shape, shape):
        raise ValueError(f"could not broadcast input array from shape {shape_text(node.shape)} "
                         f"into shape {shape_text(shape)}{at(loc())}")
    return broadcast(node, shape)


def _check_mask(cur: Node, mask: Node) -> None:
    """NumPy's IndexError for a boolean index that does not match the leading dims."""
    k = mask.ndim
    if k > cur.ndim:
        raise IndexError(f"too many indices for array: array is {cur.ndim}-dimensional, but "
                         f"{k} were indexed{at(loc())}")
    if mask.shape != cur.shape[:k]:
        bad = next(d for d in range(k) if mask.shape[d] != cur.shape[d])
        raise IndexError(f"boolean index did not match indexed array along axis {bad}; size of "
                         f"axis is {cur.shape[bad]} but size of corresponding boolean axis is "
                         f"{mask.shape[bad]}{at(loc())}")


def _masked(cur: Node, mask: Node, value) -> Node:
    """``cur[mask] = value`` with a boolean ``mask`` over ``cur``'s leading dims: a ``where``. The
    value must be the same for every selected position (a scalar, or one row of the trailing dims)."""
    _check_mask(cur, mask)
    k = mask.ndim
    trailing = cur.shape[k:]
    if isinstance(value, Selection):
        if value.mask is not mask:
            raise unsupported("assigning x[mask1] under a different mask (y[mask2] = x[mask1])",
                              "use the same mask on both sides")
        if not broadcasts_to(value.values.shape, cur.shape):
            raise ValueError(f"shape mismatch: value array of shape {shape_text(value.values.shape)} "
                             f"could not be broadcast to indexing result of shape "
                             f"{shape_text(cur.shape)} (at full shape){at(loc())}")
        src = broadcast(value.values, cur.shape)
        return mk(Op.WHERE, cur.dtype, cur.shape, [spread_mask(mask, cur.shape), cast(src, cur.dtype), cur])
    o = operand(np.asarray(value) if isinstance(value, (list, tuple)) else value, "assigned value")
    vshape = o.shape
    while len(vshape) > len(trailing) + 1 and vshape[0] == 1:
        vshape = vshape[1:]
    if len(vshape) == len(trailing) + 1 and vshape[0] == 1:
        vshape = vshape[1:]
    if len(vshape) > len(trailing):
        raise unsupported("assigning an array of values through a boolean mask (x[mask] = v)",
                          "its length is the mask's count, unknown while tracing; "
                          "use x = np.where(mask, v, x) with v shaped like x")
    node = _value_node(value, cur.dtype, trailing)
    return mk(Op.WHERE, cur.dtype, cur.shape, [spread_mask(mask, cur.shape), broadcast(node, cur.shape), cur])
