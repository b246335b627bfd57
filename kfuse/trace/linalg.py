"""Builders for contractions: ``@``/np.matmul (1-D, 2-D and batched with broadcast batch dims),
np.dot (0-D, 1-D, 2-D), np.inner (1-D), np.vdot (real), np.outer.

MATMUL nodes take two operands of one dtype (``np.matmul.resolve_dtypes``) shaped (..., M, K) and
(..., K, N) with equal batch dims (explicit BROADCAST); 1-D operands are reshaped to 2-D and the
result reshaped back, as NumPy defines them.
"""
from __future__ import annotations

import numpy as np

from ..errors import at
from ..ir import dtypes
from ..ir.ops import Op
from .core import Tracer, as_node, broadcast, broadcast_shapes, cast, loc, mk, unsupported
from .elementwise import apply_ufunc
from .movement import reshape_node


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


def dot(a, b, out=None) -> Tracer:
    if out is not None:
        raise unsupported("np.dot with out=")
    x, y = as_node(a, "operand of dot"), as_node(b, "operand of dot")
    if x.ndim == 0 or y.ndim == 0:
        return apply_ufunc("multiply", Tracer(x), Tracer(y))
    if x.ndim > 2 or y.ndim > 2:
        raise unsupported("np.dot of arrays with more than 2 dimensions",
                          "use np.matmul / @ for batched products")
    if x.shape[-1] != y.shape[0]:
        raise ValueError(f"shapes {_fmt(x.shape)} and {_fmt(y.shape)} not aligned: "
                         f"{x.shape[-1]} (dim {x.ndim - 1}) != {y.shape[0]} (dim 0){at(loc())}")
    return matmul(Tracer(x), Tracer(y))


def inner(a, b) -> Tracer:
    x, y = as_node(a, "operand of inner"), as_node(b, "operand of inner")
    if x.ndim == 0 or y.ndim == 0:
        return apply_ufunc("multiply", Tracer(x), Tracer(y))
    if x.ndim == 1 and y.ndim == 1:
        return dot(Tracer(x), Tracer(y))
    raise unsupported("np.inner of arrays with more than 1 dimension")


def vdot(a, b) -> Tracer:
    x, y = as_node(a, "operand of vdot"), as_node(b, "operand of vdot")
    if x.size != y.size:
        raise ValueError(f"cannot reshape array: vdot needs equal sizes{at(loc())}")
    return dot(Tracer(reshape_node(x, (x.size,))), Tracer(reshape_node(y, (y.size,))))


def outer(a, b, out=None) -> Tracer:
    if out is not None:
        raise unsupported("np.outer with out=")
    x, y = as_node(a, "operand of outer"), as_node(b, "operand of outer")
    return apply_ufunc("multiply", Tracer(reshape_node(x, (x.size, 1))),
                       Tracer(reshape_node(y, (1, y.size))))


def _fmt(shape) -> str:
    return "(" + ",".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
