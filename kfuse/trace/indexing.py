"""Integer-array ("fancy") indexing with NumPy's rules, built on the IR's ``GATHER``:
``x[idx]``, ``x[:, idx]``, ``x[rows, cols]``, ``x[i, ..., idx]``, ``np.take`` and
``np.take_along_axis``. The result is a copy, as in NumPy.

Where the index arrays go (NumPy's rule): ints count as index arrays once any array is in the
key; the arrays broadcast together; when they sit next to each other their broadcast dims replace
theirs in place, otherwise they come first. A constant index array (a list, a NumPy array) is
checked while tracing, with NumPy's message; a traced one adds a run-time check to the graph
(``Graph.checks``): the call raises IndexError naming the user's line, and writes nothing back.
Writing through index arrays (``x[idx] = v``, ``np.add.at``, ``np.put``, ``np.put_along_axis``)
is a ``SCATTER`` of the same placement (:func:`scatter`; the writes themselves: ``mutation``).
"""
from __future__ import annotations

import numpy as np

from ..errors import at
from ..ir.graph import Node
from ..ir.ops import Op
from . import movement as mv
from .core import (Tracer, add_check, as_node, broadcast, cast, const_node, loc, mk, operand,
                   shape_text, unsupported)

_NOT_INT = "arrays used as indices must be of integer (or boolean) type"


class _Array:
    """One index array of a key: its node, and its value when it is a constant."""

    def __init__(self, node: Node, value: np.ndarray | None):
        self.node, self.value = node, value


def _array(k) -> _Array | list | None:
    """``k`` as an index array, a list of them (a constant boolean mask: its nonzero positions),
    or None when ``k`` is a basic index."""
    if isinstance(k, list):
        k = np.asarray(k) if k else np.zeros(0, np.intp)
    if isinstance(k, Tracer):
        if k.dtype == np.bool_:
            raise unsupported("a traced boolean array combined with other indices",
                              "index with the mask alone (x[mask]) or use np.where")
        if k.dtype.kind not in "iu":
            raise IndexError(f"{_NOT_INT}{at(loc())}")
        return _Array(cast(k.node, np.intp), None)      # NumPy casts to intp: 2**64-1 is -1
    if isinstance(k, np.ndarray):
        if k.dtype == np.bool_:
            if k.ndim == 0:
                raise unsupported("a 0-d boolean index (x[True])")
            return [_Array(as_node(p.astype(np.intp)), p.astype(np.intp)) for p in np.nonzero(k)]
        if k.dtype.kind not in "iu":
            raise IndexError(f"{_NOT_INT}{at(loc())}")
        k = k.astype(np.intp)
        if k.ndim == 0:
            return _Array(const_node(k.item(), k.dtype), k)
        return _Array(operand(k, "index array").node, k)
    return None


def is_advanced(key) -> bool:
    """Whether ``key`` holds an index array (a list, an integer NumPy array, an integer tracer)."""
    items = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (list, np.ndarray)) or isinstance(k, Tracer) and k.dtype != np.bool_
               for k in items)


def getitem(a, key, checked: bool = True) -> Tracer:
    """``a[key]`` for a key holding index arrays (:func:`is_advanced`); ``checked=False``: the
    traced indices are known to be in range (``np.take``'s wrap and clip modes), no run-time check."""
    view, pos, arrays, shape, _ = _parse(as_node(a, "indexed array"), key, checked)
    return Tracer(gather(view, pos, [e.node for e in arrays], shape))


def scatter(node: Node, key, values, mode: str = "set", loop=None, checked: bool = True):
    """``node`` after ``node[key] = values`` (``mode`` "set") or NumPy's ``ufunc.at(node, key,
    values)`` (``mode`` the ufunc's name, computed in the dtype ``loop``), for a key holding index
    arrays. ``values`` is a function of the indexed shape giving the values' node (of
    ``node.dtype`` for "set", ``loop`` otherwise) broadcast to it. Returns ``(new, basic)``: the new
    value of the view ``node[basic]`` (``basic`` the key's slices and new axes) that the arrays index."""
    view, pos, arrays, shape, basic = _parse(node, key, checked)
    out, dims, index = _placement(view, pos, [e.node for e in arrays], shape)
    vals = values(out)
    if 0 in out:
        return view, basic
    attrs = {"dims": tuple(dims), "mode": mode, "loop": np.dtype(loop or view.dtype).name}
    return mk(Op.SCATTER, view.dtype, view.shape, [view, vals] + index, attrs), basic


def _parse(node: Node, key, checked: bool):
    """A key holding index arrays, read as NumPy reads it: ``(view, pos, arrays, shape, basic)``,
    ``view`` the node sliced by the key's basic part ``basic`` (slices, new axes), ``arrays`` the
    index arrays (:class:`_Array`) indexing ``view``'s dims ``pos``, broadcast to ``shape``; each
    checked against its dim (a constant one now, a traced one at run time unless ``checked`` is
    False)."""
    items = list(key) if isinstance(key, tuple) else [key]
    entries = []
    for k in items:
        arr = _array(k)
        if isinstance(arr, list):
            entries += arr
        elif arr is not None:
            entries.append(arr)
        elif isinstance(k, (bool, np.bool_)):
            raise unsupported("a boolean scalar combined with index arrays")
        elif isinstance(k, (int, np.integer)):
            entries.append(_Array(const_node(int(k), np.intp), np.asarray(k, np.intp)))
        else:
            entries.append(k)          # slice, None, Ellipsis
    n_real = sum(e is not None and e is not Ellipsis for e in entries)
    if n_real > node.ndim:
        raise IndexError(f"too many indices for array: array is {node.ndim}-dimensional, but "
                         f"{n_real} were indexed{at(loc())}")
    if sum(e is Ellipsis for e in entries) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if Ellipsis in entries:
        i = entries.index(Ellipsis)
        entries[i:i + 1] = [slice(None)] * (node.ndim - n_real)
    else:
        entries += [slice(None)] * (node.ndim - n_real)
    basic = tuple(slice(None) if isinstance(e, _Array) else e for e in entries)
    view = mv.getitem(Tracer(node), basic).node
    pos, axes, arrays, axis, dim = [], [], [], 0, 0
    for e in entries:
        if isinstance(e, _Array):
            pos.append(dim)
            axes.append(axis)
            arrays.append(e)
        dim += 1
        axis += e is not None
    shape = _broadcast([e.node.shape for e in arrays])
    for p, ax, e in zip(pos, axes, arrays):
        if checked or e.value is not None:
            _check(e, view.shape[p], ax, shape)
    return view, pos, arrays, shape, basic


def _broadcast(shapes) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with shapes "
                         + " ".join(shape_text(s) for s in shapes) + at(loc())) from None


def _check(e: _Array, n: int, axis: int, shape: tuple) -> None:
    """NumPy's IndexError for a constant array now; a run-time check for a traced one; none where
    the arrays broadcast to no element (NumPy checks an index as it reads it, and reads none)."""
    if 0 in shape:
        return
    if e.value is not None:
        bad = e.value[(e.value < -n) | (e.value >= n)]
        if bad.size:
            raise IndexError(f"index {bad.flat[0]} is out of bounds for axis {axis} with size {n}{at(loc())}")
        return
    if n == 0:
        raise IndexError(f"index is out of bounds for axis {axis} with size 0{at(loc())}")
    x = e.node                          # intp (_array)
    low = mk(Op.LESS, np.bool_, x.shape, [x, broadcast(const_node(-n, x.dtype), x.shape)])
    high = mk(Op.GREATER_EQUAL, np.bool_, x.shape, [x, broadcast(const_node(n, x.dtype), x.shape)])
    bad = mk(Op.LOGICAL_OR, np.bool_, x.shape, [low, high])
    if bad.ndim:
        bad = mk(Op.ANY, np.bool_, (), [bad], {"axes": tuple(range(bad.ndim)), "keepdims": False})
    add_check(bad, f"index out of bounds for axis {axis} with size {n}{at(loc())}")


def gather(src: Node, pos: list[int], index: list[Node], shape: tuple) -> Node:
    """``src`` indexed along dims ``pos`` by the arrays ``index`` (of broadcast shape ``shape``),
    the other dims sliced whole (see :func:`_placement`)."""
    out, dims, arrays = _placement(src, pos, index, shape)
    return mk(Op.GATHER, src.dtype, out, [src] + arrays, {"dims": tuple(dims)})


def _placement(src: Node, pos: list[int], index: list[Node], shape: tuple):
    """NumPy's placement of index arrays (broadcast shape ``shape``) along ``src``'s dims ``pos``:
    the broadcast dims replace ``pos`` in place when ``pos`` is a run, else they come first.
    Returns the indexed shape, GATHER's ``dims`` and the index arrays broadcast to that shape."""
    k, b = len(pos), len(shape)
    run = pos == list(range(pos[0], pos[0] + k))
    first = pos[0] if run else 0
    rest = [d for d in range(src.ndim) if d not in pos]
    out = list(src.shape[:first]) + list(shape) + [src.shape[d] for d in rest[first:]] if run else \
        list(shape) + [src.shape[d] for d in rest]
    out = tuple(out)
    dims = [0] * src.ndim
    for j, d in enumerate(pos):
        dims[d] = -1 - j
    for t, d in enumerate(rest):
        dims[d] = t if run and t < first else t + b
    lead = (1,) * first
    trail = (1,) * (len(out) - first - b)
    arrays = [broadcast(mv.reshape_node(broadcast(x, shape), lead + shape + trail), out) for x in index]
    return out, dims, arrays


def as_intp(indices, rule: str):
    """Indices as NumPy's take and put convert them: to intp (booleans are 0 and 1, not a mask; a
    list straight to intp, so ``[]`` is no float), a float array refused with NumPy's TypeError."""
    idx = indices if isinstance(indices, Tracer) else np.asarray(indices)
    if isinstance(indices, (list, tuple)) and not idx.size:
        idx = idx.astype(np.intp)
    if idx.dtype.kind not in "biu":
        raise TypeError(f"Cannot cast array data from dtype('{idx.dtype}') to dtype('int64') "
                        f"according to the rule '{rule}'{at(loc())}")
    return idx.astype(np.intp)


def take(a, indices, axis=None, out=None, mode="raise"):
    """``np.take``: ``mode`` ``raise`` (an out-of-range index raises), ``wrap`` or ``clip``."""
    if out is not None:
        raise unsupported("np.take with out=")
    node = as_node(a, "argument of np.take")
    if axis is None:
        node, axis = mv.reshape_node(node, (node.size,)), 0
    axis = mv.axis_index(axis, node.ndim)
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r}){at(loc())}")
    # NumPy's take casts the indices to intp: booleans are 0 and 1, not a mask
    idx = as_intp(indices, "same_kind")
    if mode != "raise":
        n = node.shape[axis]
        if n == 0 and idx.size:
            raise IndexError(f"cannot do a non-empty take from an empty axes.{at(loc())}")
        idx = np.remainder(idx, max(n, 1)) if mode == "wrap" else np.clip(idx, 0, max(n - 1, 0))
    return getitem(Tracer(node), (slice(None),) * axis + (idx,), checked=mode == "raise")


def take_along_axis(arr, indices, axis=-1):
    """``np.take_along_axis``: ``out[..., j, ...] = arr[..., indices[..., j, ...], ...]``."""
    node, axis, shape, idx = along_axis(arr, indices, axis, "np.take_along_axis")
    src = broadcast(node, shape[:axis] + (node.shape[axis],) + shape[axis + 1:])
    dims = list(range(node.ndim))
    dims[axis] = -1
    return Tracer(mk(Op.GATHER, node.dtype, shape, [src, idx], {"dims": tuple(dims)}))


def along_axis(arr, indices, axis, what: str):
    """The arguments of ``np.take_along_axis``/``np.put_along_axis`` checked as NumPy checks them:
    ``(node, axis, shape, index)``, ``node`` the array (flattened for ``axis=None``), ``shape`` the
    indexed shape (the two broadcast off ``axis``, the indices' extent along it) and ``index`` the
    indices (intp, broadcast to ``shape``, range-checked)."""
    node = as_node(arr, f"argument of {what}")
    idx = as_node(indices, f"indices of {what}")
    if idx.dtype.kind not in "iu":
        raise IndexError(f"`indices` must be an integer array{at(loc())}")
    if axis is None:
        if idx.ndim != 1:
            raise ValueError(f"when axis=None, `indices` must have a single dimension.{at(loc())}")
        node, axis = mv.reshape_node(node, (node.size,)), 0
    if idx.ndim != node.ndim:
        raise ValueError(f"`indices` and `arr` must have the same number of dimensions{at(loc())}")
    axis = mv.axis_index(axis, node.ndim)
    keep = lambda s: tuple(1 if d == axis else n for d, n in enumerate(s))  # noqa: E731
    outer = _broadcast_dims(keep(node.shape), keep(idx.shape))
    shape = outer[:axis] + (idx.shape[axis],) + outer[axis + 1:]
    e = _Array(broadcast(cast(idx, np.intp), shape),
               np.asarray(indices).astype(np.intp) if isinstance(indices, np.ndarray) else None)
    _check(e, node.shape[axis], axis, shape)
    return node, axis, shape, e.node


def _broadcast_dims(a: tuple, b: tuple) -> tuple:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise ValueError(f"shape mismatch: objects cannot be broadcast to a single shape.  Mismatch "
                         f"is between arg 0 with shape {shape_text(a)} and arg 1 with shape "
                         f"{shape_text(b)}.{at(loc())}") from None
