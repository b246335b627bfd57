"""Builders for reductions: sum prod max min any all mean var std argmax argmin (functions,
methods and the ``reduce`` method of the matching ufuncs), with NumPy's exact dtype rules.

Result dtypes are NumPy's own, taken from running the NumPy function on a tiny dummy array of the
same rank and dtype. mean/var/std are built from SUM and elementwise ops exactly as NumPy's
``_methods._mean/_var/_std`` compute them (sum in the accumulate dtype, divide by an intp count,
cast back). Reductions over zero elements that NumPy rejects (max/min/argmax/argmin) raise the
same ValueError while tracing (shapes are static).
"""
from __future__ import annotations

import functools

import numpy as np
from numpy.exceptions import AxisError
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ..errors import at
from ..ir import dtypes
from ..ir.dtypes import check_supported
from ..ir.graph import Node
from ..ir.ops import Op
from .core import (Tracer, as_node, broadcast, broadcast_shapes, cast, const_node, loc, materialize, mk,
                   operand, unsupported)
from .elementwise import apply_ufunc
from .movement import reshape_node

_NV = np._NoValue


def _axes(axis, ndim: int, ufunc_like: bool = True) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if ufunc_like and ndim == 0 and isinstance(axis, (int, np.integer)) and axis in (0, -1):
        return ()   # ufunc.reduce accepts axis 0/-1 on a 0-d array (NumPy quirk)
    try:
        return tuple(sorted(normalize_axis_tuple(axis, ndim)))
    except AxisError as e:
        raise AxisError(f"{e}{at(loc())}") from None


def _check(fname: str, out=None, **extra) -> None:
    if out is not None:
        raise unsupported(f"np.{fname} with out=", "return the result instead")
    for key, val in extra.items():
        if val is not _NV and val is not None:
            raise unsupported(f"np.{fname} with {key}=")


def _masked(node: Node, where, fill) -> Node:
    """``where=``: the elements it leaves out replaced by ``fill`` (the reduction's identity or
    initial value), so the reduction skips them; ``where`` broadcasts to the array."""
    if not _is_mask(where):
        return node
    mask = cast(as_node(where, "where= of a reduction"), np.bool_)
    shape = broadcast_shapes(node.shape, mask.shape)
    if shape != node.shape:
        raise ValueError(f"where= of shape {mask.shape} does not broadcast to the array's "
                         f"{node.shape}{at(loc())}")
    return mk(Op.WHERE, node.dtype, shape, [broadcast(mask, shape), node, broadcast(cast(fill, node.dtype), shape)])


def _is_mask(where) -> bool:
    return where is not _NV and where is not True


def _sum_where(node: Node, axes, keepdims, acc, where) -> Node:
    """SUM in ``acc`` of the elements ``where`` keeps; NumPy's masked sum starts from its identity,
    so a float result of only -0.0 terms is +0.0."""
    r = reduce_node(Op.SUM, _masked(cast(node, acc), where, const_node(0, acc)), axes, keepdims, acc)
    if _is_mask(where) and dtypes.is_float(acc):
        r = apply_ufunc("add", Tracer(r), Tracer(const_node(0.0, acc))).node
    return r


def _initial(initial, dtype) -> Node:
    """``initial=`` as a constant of ``dtype`` (a Python int out of its range: NumPy's OverflowError)."""
    o = operand(initial, "initial= of a reduction")
    if o.node is not None:
        raise unsupported("a traced initial= of a reduction", "use a Python or NumPy scalar")
    return materialize(o, dtype, ())


def _where_count(where, shape, axes, keepdims) -> Node:
    """How many elements ``where`` keeps along ``axes`` (intp), as NumPy's _mean counts them."""
    mask = broadcast(cast(as_node(where, "where= of a reduction"), np.bool_), shape)
    return reduce_node(Op.SUM, cast(mask, np.intp), axes, keepdims, np.dtype(np.intp))


def _out_shape(shape, axes, keepdims) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if d in axes else s for d, s in enumerate(shape))
    return tuple(s for d, s in enumerate(shape) if d not in axes)


def _numpy_dtype(fname: str, dt: np.dtype, ndim: int, axes, **kw) -> np.dtype:
    try:
        key = (fname, dt, ndim, axes, tuple(sorted(kw.items())))
        hash(key)
    except TypeError:           # (an unhashable dtype= argument: NumPy says what it makes of it)
        res = _numpy_result(fname, dt, ndim, axes, tuple(kw.items()))
    else:
        res = _numpy_result_memo(*key)
    return res if res in dtypes.SUPPORTED else check_supported(res, f"np.{fname}", loc())


def _numpy_result(fname: str, dt: np.dtype, ndim: int, axes, kw: tuple) -> np.dtype:
    """The dtype of NumPy's ``fname`` over ``axes`` of an ``ndim``-d ``dt`` array."""
    dummy = np.zeros((1,) * ndim, dt)
    with np.errstate(all="ignore"):
        res = getattr(np, fname)(dummy, axis=axes, **dict(kw))
    return np.asarray(res).dtype


# (a trace asks the same few questions again at every size: NumPy's answer depends on none)
_numpy_result_memo = functools.lru_cache(maxsize=4096)(_numpy_result)


def _check_empty(fname: str, node: Node, axis, **kw) -> None:
    """NumPy refuses some reductions over zero elements: raise its error at trace time."""
    if node.size == 0:
        try:
            getattr(np, fname)(np.zeros(node.shape, node.dtype), axis=axis, **kw)
        except ValueError as e:
            raise type(e)(f"{e}{at(loc())}") from None


def reduce_node(op: Op, node: Node, axes, keepdims: bool, dtype, skips: bool = False) -> Node:
    """``op`` over ``axes`` of ``node`` (cast to the accumulate ``dtype`` first); ``skips``: ``node``
    is ``where(mask, x, identity)`` of a ``where=`` and the reduction skips the left-out elements,
    as NumPy's does (attr ``where_skips``: a complex product, where multiplying by ``1 + 0j`` is not
    an identity past an infinite part)."""
    node = cast(node, dtype)
    shape = _out_shape(node.shape, axes, keepdims)
    if not axes:    # NumPy starts from the identity: a float sum of -0.0 is +0.0, a complex
        # product 1 * (inf - 0j) is inf + nan j (a product of reals keeps its value)
        inexact = dtypes.is_float(node.dtype) or dtypes.is_complex(node.dtype)
        if op is Op.SUM and inexact:
            return mk(Op.ADD, node.dtype, node.shape, [node, broadcast(const_node(0.0, node.dtype), node.shape)])
        if op is Op.PROD and dtypes.is_complex(node.dtype):
            return mk(Op.MULTIPLY, node.dtype, node.shape, [broadcast(const_node(1.0, node.dtype), node.shape), node])
        return node
    attrs = {"axes": tuple(axes), "keepdims": bool(keepdims)}
    if skips and node.op is Op.WHERE:
        attrs["where_skips"] = True
    return mk(op, node.dtype, shape, [node], attrs)


def _count(shape, axes) -> int:
    n = 1
    for d in axes:
        n *= shape[d]
    return n


def _div_count(node: Node, count) -> Node:
    """``true_divide(node, intp(count))`` cast back to node's dtype, as NumPy's _mean/_var do."""
    if isinstance(count, Node):             # a where= mask's count (intp)
        c = Tracer(count)
    else:
        c = np.intp(count) if isinstance(count, (int, np.integer)) else np.float64(count)
    q = apply_ufunc("divide", Tracer(node), c)
    return cast(q.node, node.dtype)


def _simple(fname: str, op: Op, a, axis, dtype, keepdims, initial=_NV, where=_NV) -> Tracer:
    node = as_node(a, f"argument of np.{fname}")
    axes = _axes(axis, node.ndim)
    kw = {"dtype": dtype} if dtype is not None else {}
    acc = _numpy_dtype(fname, node.dtype, node.ndim, axes, **kw)
    if op is Op.SUM:
        r = _sum_where(node, axes, keepdims, acc, where)
    else:
        if op in (Op.ANY, Op.ALL):
            node = cast(node, np.bool_)
        identity = {Op.PROD: 1, Op.ANY: False, Op.ALL: True}[op]
        r = reduce_node(op, _masked(cast(node, acc), where, const_node(identity, acc)), axes, keepdims, acc,
                        skips=op is Op.PROD and dtypes.is_complex(acc) and _is_mask(where))
    if initial is not _NV:      # NumPy starts from initial: initial (+ or *) the reduction
        r = apply_ufunc("add" if op is Op.SUM else "multiply", Tracer(_initial(initial, acc)), Tracer(r)).node
    return Tracer(r)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NV, where=_NV):
    _check("sum", out)
    return _simple("sum", Op.SUM, a, axis, dtype, keepdims, initial, where)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NV, where=_NV):
    _check("prod", out)
    return _simple("prod", Op.PROD, a, axis, dtype, keepdims, initial, where)


def _extremum(fname, op, a, axis, keepdims, initial=_NV, where=_NV):
    node = as_node(a, f"argument of np.{fname}")
    axes = _axes(axis, node.ndim)
    ufunc = "maximum" if op is Op.MAX else "minimum"
    if initial is _NV:
        if _is_mask(where):
            raise ValueError(f"reduction operation {ufunc!r} does not have an identity, so to use a "
                             f"where mask one has to specify 'initial'{at(loc())}")
        _check_empty(fname, node, axis)
        return Tracer(reduce_node(op, node, axes, keepdims, node.dtype))
    init = _initial(initial, node.dtype)
    shape = _out_shape(node.shape, axes, keepdims)
    if _count(node.shape, axes) == 0:          # nothing to reduce: initial everywhere
        if not shape:       # NumPy's 0-d result is a NumPy scalar, as a reduction's (not a constant)
            return apply_ufunc(ufunc, Tracer(init), Tracer(init))
        return Tracer(broadcast(init, shape))
    r = reduce_node(op, _masked(node, where, init), axes, keepdims, node.dtype)
    # NumPy's loop starts from initial: ufunc(initial, x0), ... (ties keep its second operand)
    return apply_ufunc(ufunc, Tracer(broadcast(init, shape)), Tracer(r))


def max(a, axis=None, out=None, keepdims=False, initial=_NV, where=_NV):
    _check("max", out)
    return _extremum("max", Op.MAX, a, axis, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=_NV, where=_NV):
    _check("min", out)
    return _extremum("min", Op.MIN, a, axis, keepdims, initial, where)


def any(a, axis=None, out=None, keepdims=False, *, where=_NV):
    _check("any", out)
    return _simple("any", Op.ANY, a, axis, None, keepdims, where=where)


def all(a, axis=None, out=None, keepdims=False, *, where=_NV):
    _check("all", out)
    return _simple("all", Op.ALL, a, axis, None, keepdims, where=where)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=_NV):
    _check("mean", out)
    node = as_node(a, "argument of np.mean")
    axes = _axes(axis, node.ndim, False)
    if dtype is not None:
        acc = check_supported(dtype, "np.mean", loc())
    elif node.dtype.kind in "biu":
        acc = np.dtype(np.float64)
    elif node.dtype in (dtypes.F16, dtypes.BF16):
        acc = np.dtype(np.float32)
    else:
        acc = node.dtype
    kw = {"dtype": dtype} if dtype is not None else {}
    res_dt = _numpy_dtype("mean", node.dtype, node.ndim, axes, **kw)
    s = _sum_where(node, axes, keepdims, acc, where)
    n = _where_count(where, node.shape, axes, keepdims) if _is_mask(where) else _count(node.shape, axes)
    return Tracer(cast(_div_count(s, n), res_dt))


def _var_node(fname, a, axis, dtype, ddof, keepdims, where=_NV) -> tuple[Node, np.dtype]:
    node = as_node(a, f"argument of np.{fname}")
    axes = _axes(axis, node.ndim, False)
    if dtype is None and node.dtype.kind in "biu":
        dtype = np.dtype(np.float64)
    kw = {"dtype": dtype} if dtype is not None else {}
    acc = _numpy_dtype("sum", node.dtype, node.ndim, axes, **kw)
    masked = _is_mask(where)
    n = _where_count(where, node.shape, axes, True) if masked else _count(node.shape, axes)
    mean_k = _div_count(_sum_where(node, axes, True, acc, where), n)
    x = apply_ufunc("subtract", Tracer(node), Tracer(mean_k))
    if x.dtype.kind == "c":     # NumPy: |x|**2 as the parts' squares added (float)
        re, im = (Tracer(mk(op, dtypes.real_dtype(x.dtype), x.shape, [x.node])) for op in (Op.REAL, Op.IMAG))
        x = apply_ufunc("add", apply_ufunc("multiply", re, re), apply_ufunc("multiply", im, im))
    else:
        x = apply_ufunc("square", x)
    sum_dt = _numpy_dtype("sum", x.dtype, node.ndim, axes, **kw)
    ret = _sum_where(x.node, axes, keepdims, sum_dt, where)
    if masked:              # NumPy: maximum(count - ddof, 0), an intp array
        n = reshape_node(n, _out_shape(node.shape, axes, keepdims))      # the mean's count
        rcount = apply_ufunc("maximum", apply_ufunc("subtract", Tracer(n), np.intp(ddof)), np.intp(0)).node
    else:
        rcount = n - ddof
        rcount = rcount if rcount > 0 else type(rcount)(0)
    return _div_count(ret, rcount), node.dtype


def _ddof(ddof, correction):
    if correction is not _NV:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        return correction
    return ddof


def _variance(name, a, axis, dtype, out, ddof, keepdims, where, mean, correction):
    """The variance node of np.var/np.std ``name`` (before its final cast) and the dtype NumPy's
    ``name`` returns."""
    _check(name, out, mean=mean)
    v, dt = _var_node(name, a, axis, dtype, _ddof(ddof, correction), keepdims, where)
    ndim = as_node(a).ndim
    kw = {"dtype": dtype} if dtype is not None else {}
    return v, _numpy_dtype(name, dt, ndim, _axes(axis, ndim, False), **kw)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NV, mean=_NV,
        correction=_NV):
    v, res_dt = _variance("var", a, axis, dtype, out, ddof, keepdims, where, mean, correction)
    return Tracer(cast(v, res_dt))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NV, mean=_NV,
        correction=_NV):
    v, res_dt = _variance("std", a, axis, dtype, out, ddof, keepdims, where, mean, correction)
    return Tracer(cast(apply_ufunc("sqrt", Tracer(v)).node, res_dt))


def _arg(fname, op, a, axis, out, keepdims):
    _check(fname, out)
    node = as_node(a, f"argument of np.{fname}")
    kw = {"keepdims": keepdims} if keepdims else {}
    _check_empty(fname, node, axis, **kw)
    if axis is None:
        flat = reshape_node(node, (node.size,))
        r = mk(op, np.int64, (), [flat], {"axes": (0,), "keepdims": False})
        return Tracer(reshape_node(r, (1,) * node.ndim) if keepdims else r)
    if node.ndim == 0:   # NumPy treats a 0-d array as 1-D here
        r = _arg(fname, op, Tracer(reshape_node(node, (1,))), axis, None, False)
        return Tracer(reshape_node(r.node, ()))
    try:
        ax = normalize_axis_index(axis, node.ndim)
    except AxisError as e:
        raise AxisError(f"{e}{at(loc())}") from None
    shape = _out_shape(node.shape, (ax,), keepdims)
    return Tracer(mk(op, np.int64, shape, [node], {"axes": (ax,), "keepdims": bool(keepdims)}))


def argmax(a, axis=None, out=None, *, keepdims=False):
    return _arg("argmax", Op.ARGMAX, a, axis, out, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    return _arg("argmin", Op.ARGMIN, a, axis, out, keepdims)


_UFUNC_REDUCE = {"add": sum, "multiply": prod, "maximum": max, "minimum": min,
                 "logical_and": all, "logical_or": any}


def ufunc_reduce(ufunc, a, axis=0, dtype=None, out=None, keepdims=False, initial=_NV, where=_NV):
    """``np.<ufunc>.reduce`` for the ufuncs that are a plain reduction."""
    name = ufunc.__name__
    fn = _UFUNC_REDUCE.get(name)
    node = as_node(a, f"argument of np.{name}.reduce")
    if fn is None or (fn in (all, any) and node.dtype != np.bool_):
        raise unsupported(f"np.{name}.reduce")
    _check(f"{name}.reduce", out)
    if fn in (sum, prod):
        return fn(Tracer(node), axis, dtype, keepdims=keepdims, initial=initial, where=where)
    if dtype is not None:
        raise unsupported(f"np.{name}.reduce with dtype=")
    if fn in (any, all):
        if initial is not _NV:
            raise unsupported(f"np.{name}.reduce with initial=")
        return fn(Tracer(node), axis, keepdims=keepdims, where=where)
    return fn(Tracer(node), axis, keepdims=keepdims, initial=initial, where=where)
