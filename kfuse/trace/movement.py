"""Builders for movement ops (index math only): reshape/ravel, transpose/.T/swapaxes/moveaxis,
expand_dims/squeeze, broadcast_to, and basic indexing (ints, slices with steps, None, Ellipsis).

Errors match NumPy's types (ValueError, IndexError, AxisError); fancy and boolean indexing
raise UnsupportedError (their result shapes depend on data).
"""
from __future__ import annotations

import operator

import numpy as np
from numpy.exceptions import AxisError
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ..errors import at
from ..ir.graph import Node
from ..ir.ops import Op
from .core import Tracer, as_node, broadcast, broadcast_shapes, loc, mk, segments, specialise, unsupported


def _axis_tuple(axis, ndim) -> tuple[int, ...]:
    try:
        return tuple(normalize_axis_tuple(axis, ndim))
    except AxisError as e:
        raise AxisError(f"{e}{at(loc())}") from None


def axis_index(axis, ndim) -> int:
    try:
        return normalize_axis_index(axis, ndim)
    except AxisError as e:
        raise AxisError(f"{e}{at(loc())}") from None


def reshape_node(node: Node, shape) -> Node:
    shape = tuple(int(s) for s in shape)
    if shape == node.shape:
        return node
    return mk(Op.RESHAPE, node.dtype, shape, [node])


def _new_shape(size: int, shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(int(operator_index(s)) for s in shape)
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if any(s < -1 for s in shape):
        raise ValueError("negative dimensions not allowed")
    known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape "
                             f"{_fmt(shape)}{at(loc())}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    elif known != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {_fmt(shape)}{at(loc())}")
    return shape


def operator_index(v):
    import operator
    if isinstance(v, Tracer):
        v.__index__()
    return operator.index(v)


def _fmt(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def reshape(a, /, shape=None, order="C", *, newshape=None, copy=None):
    if shape is None:
        shape = newshape
    if order not in ("C", "A", "K"):
        raise unsupported(f"reshape with order={order!r}")
    node = as_node(a, "argument of reshape")
    return Tracer(reshape_node(node, _new_shape(node.size, shape)))


def ravel(a, order="C"):
    return reshape(a, (-1,), order)


def permute_node(node: Node, perm) -> Node:
    perm = tuple(int(p) for p in perm)
    if perm == tuple(range(node.ndim)):
        return node
    shape = tuple(node.shape[p] for p in perm)
    return mk(Op.PERMUTE, node.dtype, shape, [node], {"perm": perm})


def transpose(a, axes=None):
    node = as_node(a, "argument of transpose")
    if axes is None:
        perm = tuple(reversed(range(node.ndim)))
    else:
        perm = _axis_tuple(axes, node.ndim) if len(axes) == node.ndim else None
        if perm is None or len(set(perm)) != node.ndim:
            raise ValueError(f"axes don't match array{at(loc())}")
    return Tracer(permute_node(node, perm))


def permute_dims(a, axes=None):
    return transpose(a, axes)


def swapaxes(a, axis1, axis2):
    node = as_node(a, "argument of swapaxes")
    i, j = axis_index(axis1, node.ndim), axis_index(axis2, node.ndim)
    perm = list(range(node.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return Tracer(permute_node(node, perm))


def matrix_transpose(a):
    node = as_node(a, "argument of matrix_transpose")
    if node.ndim < 2:
        raise ValueError(f"matrix transpose with ndim < 2 is undefined{at(loc())}")
    return swapaxes(Tracer(node), -1, -2)


def moveaxis(a, source, destination):
    node = as_node(a, "argument of moveaxis")
    src = _axis_tuple(source, node.ndim)
    dst = _axis_tuple(destination, node.ndim)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    order = [n for n in range(node.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return Tracer(permute_node(node, order))


def expand_dims(a, axis):
    node = as_node(a, "argument of expand_dims")
    if not isinstance(axis, (tuple, list)):
        axis = (axis,)
    out_ndim = node.ndim + len(axis)
    axes = _axis_tuple(axis, out_ndim)
    it = iter(node.shape)
    shape = tuple(1 if d in axes else next(it) for d in range(out_ndim))
    return Tracer(reshape_node(node, shape))


def squeeze(a, axis=None):
    node = as_node(a, "argument of squeeze")
    if axis is None:
        axes = tuple(d for d, s in enumerate(node.shape) if s == 1)
    else:
        axes = _axis_tuple(axis, node.ndim)
        if any(node.shape[d] != 1 for d in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to "
                             f"one{at(loc())}")
    return Tracer(reshape_node(node, tuple(s for d, s in enumerate(node.shape) if d not in axes)))


def broadcast_to(array, shape, subok=False):
    node = as_node(array, "argument of broadcast_to")
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    # NumPy's own check, on a zero-strided dummy (no memory).
    dummy = np.broadcast_to(np.empty((), bool), node.shape)
    try:
        np.broadcast_to(dummy, shape)
    except ValueError as e:
        raise ValueError(f"{e}{at(loc())}") from None
    return Tracer(broadcast(node, shape))


def broadcast_arrays(*args, subok=False):
    nodes = [as_node(a, "argument of broadcast_arrays") for a in args]
    shape = broadcast_shapes(*[n.shape for n in nodes])
    return tuple(Tracer(broadcast(n, shape)) for n in nodes)


def atleast_nd(a, n: int):
    node = as_node(a)
    if node.ndim >= n:
        return Tracer(node)
    if n == 3 and node.ndim == 1:
        return Tracer(reshape_node(node, (1, node.shape[0], 1)))
    if n == 3 and node.ndim == 2:
        return Tracer(reshape_node(node, node.shape + (1,)))
    return Tracer(reshape_node(node, (1,) * (n - node.ndim) + node.shape))


def getitem(a, key):
    """Basic indexing: ints (negative ok), slices (any step), None/np.newaxis, Ellipsis."""
    node = as_node(a, "indexed array")
    starts, steps, lengths, out_shape = basic_index(node.shape, key)
    result = node
    if tuple(lengths) != node.shape or any(s != 0 for s in starts):
        result = mk(Op.SLICE, node.dtype, tuple(lengths), [node],
                    {"starts": tuple(starts), "steps": tuple(steps)})
    return Tracer(reshape_node(result, tuple(out_shape)))


def basic_index(shape: tuple, key) -> tuple[list, list, list, list]:
    """A basic index into ``shape`` as the SLICE it reads: (starts, steps, lengths) per dim of
    ``shape`` (an int index is a length-1 slice), and the result's shape (ints dropped, None
    added). Raises NumPy's IndexError, or UnsupportedError for advanced indexing."""
    if not isinstance(key, tuple):
        key = (key,)
    if segments() is not None:      # a segmented run reads a traced slice bound's value (a break)
        key = tuple(slice(*(operator.index(p) if isinstance(p, Tracer) else p for p in (k.start, k.stop, k.step)))
                    if isinstance(k, slice) else k for k in key)
    for k in key:
        if isinstance(k, (bool, np.bool_)) or not (
                k is None or k is Ellipsis or isinstance(k, slice)
                or isinstance(k, (int, np.integer))):
            if isinstance(k, (bool, np.bool_)) or getattr(k, "dtype", None) == np.bool_:
                what = ("boolean indexing" if len(key) == 1 else
                        "boolean indexing combined with other indices (x[mask, i])")
            else:
                what = ("indexing with a traced array" if isinstance(k, Tracer)
                        else "fancy (integer array) indexing")
            raise unsupported(what, "only basic indexing (ints, slices, None, ...) is supported")
        if isinstance(k, slice):
            for part in (k.start, k.stop, k.step):
                if part is not None and not isinstance(part, (int, np.integer)):
                    if isinstance(part, Tracer) and part.ndim == 0 and part.dtype.kind in "iu":
                        specialise(part, "as a slice bound")
                    raise unsupported("slice bounds that are not Python ints",
                                      "use static_argnames for a bound known when compiling")
    ndim = len(shape)
    n_ell = sum(k is Ellipsis for k in key)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(k is not None and k is not Ellipsis for k in key)
    if n_real > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but "
                         f"{n_real} were indexed{at(loc())}")
    if n_ell:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (ndim - n_real) + key[i + 1:]
    else:
        key = key + (slice(None),) * (ndim - n_real)
    starts, steps, lengths, out_shape = [], [], [], []
    dim = 0
    for k in key:
        if k is None:
            out_shape.append(1)
            continue
        size = shape[dim]
        if isinstance(k, slice):
            start, stop, step = k.indices(size)
            length = len(range(start, stop, step))
            starts.append(start if length else 0)
            steps.append(step)
            lengths.append(length)
            out_shape.append(length)
        else:
            i = int(k)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size "
                                 f"{size}{at(loc())}")
            starts.append(i % size)
            steps.append(1)
            lengths.append(1)
        dim += 1
    return starts, steps, lengths, out_shape
