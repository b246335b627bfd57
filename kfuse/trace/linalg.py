"""Builders for contractions: ``@``/np.matmul (1-D, 2-D and batched with broadcast batch dims),
np.tensordot, np.dot and np.inner (any rank), np.vdot (the first operand conjugated), np.outer, and the NumPy 2 gufuncs
np.vecdot, np.matvec, np.vecmat.

np.tensordot (and with it N-D dot and inner) moves the contracted axes last in the first operand
and first in the second, flattens both to 2-D and takes one matrix product, as NumPy's own
tensordot does; the gufuncs are matmuls of a vector made a one-row or one-column matrix.

MATMUL nodes take two operands of one dtype (``np.matmul.resolve_dtypes``) shaped (..., M, K) and
(..., K, N) with equal batch dims (explicit BROADCAST); 1-D operands are reshaped to 2-D and the
result reshaped back, as NumPy defines them.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..errors import at
from ..ir.graph import Node
from ..ir import dtypes
from ..ir.ops import Op
from .core import Tracer, as_node, broadcast, broadcast_shapes, cast, loc, mk, shape_text, unsupported
from .elementwise import apply_ufunc
from .movement import axis_index, permute_node, reshape_node


def matmul(a, b, /, out=None, **kwargs) -> Tracer:
    if out is not None or kwargs:
        raise unsupported("np.matmul with " + ("out=" if out is not None else ", ".join(kwargs)))
    x, y = as_node(a, "operand of matmul"), as_node(b, "operand of matmul")
    for i, n in enumerate((x, y)):
        if n.ndim == 0:
            raise ValueError(f"matmul: Input operand {i} does not have enough dimensions (has 0, "
                             f"gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1)"
                             f"{at(loc())}")
    if dtypes.BF16 in (x.dtype, y.dtype):
        raise unsupported("matmul/dot of bfloat16 arrays", "cast to float16 or float32 first")
    dt_x, dt_y, dt_out = np.matmul.resolve_dtypes((x.dtype, y.dtype, None))
    if dt_out == np.bool_:
        raise unsupported("matmul/dot of bool arrays", "cast to an integer or float dtype first")
    xv, yv = x.ndim == 1, y.ndim == 1
    x2 = reshape_node(x, (1, x.shape[0])) if xv else x
    y2 = reshape_node(y, (y.shape[0], 1)) if yv else y
    m, k = x2.shape[-2:]
    k2, n = y2.shape[-2:]
    if k != k2:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with "
                         f"gufunc signature (n?,k),(k,m?)->(n?,m?) (size {k2} is different from "
                         f"{k}){at(loc())}")
    batch = broadcast_shapes(x2.shape[:-2], y2.shape[:-2])
    x2 = broadcast(cast(x2, dt_x), batch + (m, k))
    y2 = broadcast(cast(y2, dt_y), batch + (k, n))
    if dt_x != dt_out or dt_y != dt_out:  # all NumPy matmul loops have one dtype
        x2, y2 = cast(x2, dt_out), cast(y2, dt_out)
    node = mk(Op.MATMUL, dt_out, batch + (m, n), [x2, y2])
    shape = batch + ((m,) if not xv else ()) + ((n,) if not yv else ())
    return Tracer(reshape_node(node, shape))


def _contract(x: Node, y: Node, axes_x: tuple, axes_y: tuple) -> Tracer:
    """Sum of products over ``axes_x`` of ``x`` paired with ``axes_y`` of ``y`` (equal sizes): the
    free axes of ``x`` then those of ``y``, as np.tensordot."""
    free_x = [d for d in range(x.ndim) if d not in axes_x]
    free_y = [d for d in range(y.ndim) if d not in axes_y]
    k = math.prod(x.shape[d] for d in axes_x)
    shape_x = tuple(x.shape[d] for d in free_x)
    shape_y = tuple(y.shape[d] for d in free_y)
    x2 = reshape_node(permute_node(x, free_x + list(axes_x)), (math.prod(shape_x), k))
    y2 = reshape_node(permute_node(y, list(axes_y) + free_y), (k, math.prod(shape_y)))
    return Tracer(reshape_node(as_node(matmul(Tracer(x2), Tracer(y2))), shape_x + shape_y))


def tensordot(a, b, axes=2) -> Tracer:
    x, y = as_node(a, "operand of tensordot"), as_node(b, "operand of tensordot")
    try:
        axes_x, axes_y = axes
    except TypeError:
        n = operator.index(axes)        # NumPy: n < 0 contracts nothing, n > ndim is an IndexError
        axes_x, axes_y = tuple(range(-n, 0)), tuple(range(0, n))
    axes_x, axes_y = _tensordot_axes(axes_x, x), _tensordot_axes(axes_y, y)
    if len(axes_x) != len(axes_y) or any(x.shape[i] != y.shape[j] for i, j in zip(axes_x, axes_y)):
        raise ValueError(f"shape-mismatch for sum{at(loc())}")
    return _contract(x, y, axes_x, axes_y)


def _tensordot_axes(axes, node: Node) -> tuple[int, ...]:
    """One operand's contracted axes as NumPy's tensordot reads them (errors of the same types)."""
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    out = []
    for ax in axes:
        ax = operator.index(ax)
        if not -node.ndim <= ax < node.ndim:
            raise IndexError(f"tensordot: axis {ax} is out of range for an operand of shape "
                             f"{shape_text(node.shape)}{at(loc())}")
        out.append(ax % node.ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate axes are not allowed in tensordot{at(loc())}")
    return tuple(out)


def dot(a, b, out=None) -> Tracer:
    if out is not None:
        raise unsupported("np.dot with out=")
    x, y = as_node(a, "operand of dot"), as_node(b, "operand of dot")
    if x.ndim == 0 or y.ndim == 0:
        return apply_ufunc("multiply", Tracer(x), Tracer(y))
    ky = max(y.ndim - 2, 0)         # dot contracts x's last axis with y's second-to-last
    if x.shape[-1] != y.shape[ky]:
        raise ValueError(f"shapes {shape_text(x.shape)} and {shape_text(y.shape)} not aligned: "
                         f"{x.shape[-1]} (dim {x.ndim - 1}) != {y.shape[ky]} (dim {ky}){at(loc())}")
    if x.ndim <= 2 and y.ndim <= 2:
        return matmul(Tracer(x), Tracer(y))
    return _contract(x, y, (x.ndim - 1,), (ky,))


def inner(a, b) -> Tracer:
    x, y = as_node(a, "operand of inner"), as_node(b, "operand of inner")
    if x.ndim == 0 or y.ndim == 0:
        return apply_ufunc("multiply", Tracer(x), Tracer(y))
    if x.shape[-1] != y.shape[-1]:    # NumPy names y with its last two axes swapped
        ky = max(y.ndim - 2, 0)
        yt = y.shape[:-2] + y.shape[-1:] + y.shape[-2:-1] if y.ndim > 1 else y.shape
        raise ValueError(f"shapes {shape_text(x.shape)} and {shape_text(yt)} not aligned: "
                         f"{x.shape[-1]} (dim {x.ndim - 1}) != {y.shape[-1]} (dim {ky}){at(loc())}")
    if x.ndim == 1 and y.ndim == 1:
        return matmul(Tracer(x), Tracer(y))
    return _contract(x, y, (x.ndim - 1,), (y.ndim - 1,))


# gufunc -> (signature, core dimensions of each operand: 1 a vector, 2 a matrix)
_VECTOR_CORES = {"vecdot": ("(n),(n)->()", (1, 1)), "matvec": ("(m,n),(n)->(m)", (2, 1)),
                 "vecmat": ("(n),(n,m)->(m)", (1, 2))}


def vector_gufunc(name: str, a, b, axes=None, axis=None) -> Tracer:
    """np.vecdot (x1 · x2 over ``axis``), np.matvec (matrix @ vector), np.vecmat (vector @ matrix)
    with broadcast loop dimensions, as one matmul (a vector made a one-row or one-column matrix);
    a complex first vector (vecdot's, vecmat's) is conjugated, as NumPy's."""
    if axes is not None:
        raise unsupported(f"np.{name} with axes=")
    if axis is not None and name != "vecdot":
        raise TypeError(f"np.{name} takes no axis={at(loc())}")
    sig, cores = _VECTOR_CORES[name]
    x, y = as_node(a, f"operand of {name}"), as_node(b, f"operand of {name}")
    for i, (n, core) in enumerate(zip((x, y), cores)):
        if n.ndim < core:
            raise ValueError(f"{name}: Input operand {i} does not have enough dimensions (has "
                             f"{n.ndim}, gufunc core with signature {sig} requires {core}){at(loc())}")
    if axis is not None:        # vecdot's core axis, in both operands, moved last
        x, y = (permute_node(n, [d for d in range(n.ndim) if d != k] + [k])
                for n, k in ((x, axis_index(axis, x.ndim)), (y, axis_index(axis, y.ndim))))
    if cores[0] == 1 and x.dtype.kind == "c":
        x = apply_ufunc("conjugate", Tracer(x)).node
    k, k2 = x.shape[-1], y.shape[-cores[1]]
    if k != k2:
        raise ValueError(f"{name}: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
                         f"signature {sig} (size {k2} is different from {k}){at(loc())}")
    xm = x if cores[0] == 2 else reshape_node(x, x.shape[:-1] + (1, k))
    ym = y if cores[1] == 2 else reshape_node(y, y.shape + (1,))
    out = as_node(matmul(Tracer(xm), Tracer(ym)))
    m, n = out.shape[-2:]
    return Tracer(reshape_node(out, out.shape[:-2] + (m,) * (cores[0] == 2) + (n,) * (cores[1] == 2)))


def vdot(a, b) -> Tracer:
    x, y = as_node(a, "operand of vdot"), as_node(b, "operand of vdot")
    if x.size != y.size:
        raise ValueError(f"cannot reshape array: vdot needs equal sizes{at(loc())}")
    first = Tracer(reshape_node(x, (x.size,)))
    if x.dtype.kind == "c":         # np.vdot conjugates its first operand
        first = apply_ufunc("conjugate", first)
    return dot(first, Tracer(reshape_node(y, (y.size,))))


def outer(a, b, out=None) -> Tracer:
    if out is not None:
        raise unsupported("np.outer with out=")
    x, y = as_node(a, "operand of outer"), as_node(b, "operand of outer")
    return apply_ufunc("multiply", Tracer(reshape_node(x, (x.size, 1))),
                       Tracer(reshape_node(y, (1, y.size))))
