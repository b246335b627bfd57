"""NumPy functions that NumPy itself writes in Python over ufuncs, reductions and indexing,
written here the same way over traced values, so their results and dtypes are NumPy's:
``np.isclose``/``np.allclose``, ``np.nan_to_num``, ``np.nansum``/``nanmean``/``nanmax``/``nanmin``,
``np.ptp``, ``np.count_nonzero``, ``np.diagonal``/``np.trace`` (a gather of the diagonal),
``np.tile`` and ``np.repeat`` with an int count (a broadcast and a reshape: index math only),
``np.average`` (weights too; weights summing to zero give inf/NaN where NumPy raises
ZeroDivisionError: a kernel cannot raise, see kfuse/testing.py), ``np.select`` (a chain of
``where``), ``np.sinc``, ``np.polyval`` (Horner), ``np.fix``, ``np.isposinf``/``isneginf``,
``np.trapezoid``.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..errors import at
from . import floatparts as fp
from . import movement as mv
from . import reductions as rd
from .core import Tracer, as_node, loc, unsupported
from .indexing import getitem


def _t(a, what: str) -> Tracer:
    return a if isinstance(a, Tracer) else Tracer(as_node(a, what))


def _inexact(t: Tracer) -> bool:
    """Float or complex: the dtypes a NaN lives in."""
    return t.dtype.kind in "fc"


def isclose(a, b, rtol=1.e-5, atol=1.e-8, equal_nan=False):
    """NumPy 2's ``isclose``: ``|a - b| <= atol + rtol * |b|`` where b is finite, or ``a == b``;
    ``b`` taken in ``result_type(b, 1.0)``."""
    y = b
    if isinstance(b, (Tracer, np.ndarray, np.generic)):
        y = _t(b, "b of np.isclose")
        dt = np.result_type(y.dtype, 1.0)
        y = y.astype(dt) if y.dtype != dt else y
    elif isinstance(b, int):
        y = float(b)
    x = a
    result = np.less_equal(np.abs(x - y), atol + rtol * np.abs(y)) & np.isfinite(y) | (x == y)
    if equal_nan:
        result = result | (np.isnan(x) & np.isnan(y))
    return result


def allclose(a, b, rtol=1.e-5, atol=1.e-8, equal_nan=False):
    """``np.allclose``: a traced 0-d bool, returned as NumPy's Python bool (a weak bool)."""
    return Tracer(rd.all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)).node, weak=bool)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN to ``nan``, +inf to ``posinf`` (default the dtype's max), -inf to ``neginf``."""
    t = _t(x, "argument of np.nan_to_num")
    if t.dtype.kind == "c":         # NumPy's: each part on its own
        return fp.make_complex(*(nan_to_num(p, copy, nan, posinf, neginf) for p in (t.real, t.imag)))
    if not _inexact(t):
        return Tracer(t.node)
    info = np.finfo(t.dtype)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    is_nan, is_pos, is_neg = np.isnan(t), t == np.inf, t == -np.inf
    d = np.where(is_nan, t.dtype.type(nan), t)
    d = np.where(is_pos, t.dtype.type(big), d)
    return np.where(is_neg, t.dtype.type(small), d)


def _replace_nan(a, value):
    t = _t(a, "argument of a nan-function")
    if not _inexact(t):
        return t, None
    mask = np.isnan(t)
    return np.where(mask, t.dtype.type(value), t), mask


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=rd._NV, where=rd._NV):
    arr, _ = _replace_nan(a, 0)
    return rd.sum(arr, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=rd._NV):
    """NumPy's ``nanmean``: the sum of the non-NaN values over their count, in the sum's dtype."""
    arr, mask = _replace_nan(a, 0)
    if mask is None:
        return rd.mean(arr, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where)
    rd._check("nanmean", out)
    cnt = rd.sum(~mask, axis=axis, dtype=np.intp, keepdims=keepdims, where=where)
    tot = rd.sum(arr, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    return (tot / cnt).astype(tot.dtype)


def _nan_extreme(name: str, pick, fill: float, keep):
    def f(a, axis=None, out=None, keepdims=False, initial=rd._NV, where=rd._NV):
        t = _t(a, f"argument of np.{name}")
        if not _inexact(t):
            return pick(t, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)
        if where is not rd._NV or initial is not rd._NV:
            raise unsupported(f"np.{name} with where= or initial=")
        mask = np.isnan(t)
        m = pick(np.where(mask, t.dtype.type(fill), t), axis=axis, out=out, keepdims=keepdims)
        # NaN where every element is NaN: keep(m, fill) is m, keep(m, NaN) NaN (a ufunc, not a
        # where, so that a full reduction stays a NumPy scalar as NumPy returns it)
        return keep(m, np.where(rd.all(mask, axis=axis, keepdims=keepdims), t.dtype.type(np.nan),
                                t.dtype.type(fill)))
    f.__name__ = name
    return f


nanmax = _nan_extreme("nanmax", rd.max, -np.inf, np.maximum)
nanmin = _nan_extreme("nanmin", rd.min, np.inf, np.minimum)


def ptp(a, axis=None, out=None, keepdims=False):
    return np.subtract(rd.max(a, axis=axis, out=out, keepdims=keepdims),
                       rd.min(a, axis=axis, keepdims=keepdims))


def count_nonzero(a, axis=None, *, keepdims=False):
    return rd.sum(_t(a, "argument of np.count_nonzero").astype(np.bool_), axis=axis, dtype=np.intp,
                  keepdims=keepdims)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal as the last axis (NumPy's layout), a copy: a gather at ``(i, i + offset)``."""
    t = _t(a, "argument of np.diagonal")
    if t.ndim < 2:
        raise ValueError(f"diag requires an array of at least two dimensions{at(loc())}")
    ax1, ax2 = mv.axis_index(axis1, t.ndim), mv.axis_index(axis2, t.ndim)
    if ax1 == ax2:
        raise ValueError(f"axis1 and axis2 cannot be the same{at(loc())}")
    x = mv.moveaxis(t, (ax1, ax2), (-2, -1))
    n1, n2 = x.shape[-2], x.shape[-1]
    k = max(0, min(n1 - max(0, -offset), n2 - max(0, offset)))
    i = np.arange(k)
    return getitem(x, (Ellipsis, i + max(0, -offset), i + max(0, offset)))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return rd.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


def tile(A, reps):
    """``np.tile``: each dim ``s`` repeated ``r`` times is a broadcast of ``(1, s)`` to ``(r, s)``
    merged into ``r * s``."""
    tup = tuple(reps) if isinstance(reps, (tuple, list)) else (reps,)
    t = _t(A, "argument of np.tile")
    node = as_node(mv.atleast_nd(t, len(tup)) if t.ndim < len(tup) else t)
    tup = (1,) * (node.ndim - len(tup)) + tuple(int(r) for r in tup)
    if any(r < 0 for r in tup):
        raise ValueError(f"negative dimensions are not allowed{at(loc())}")
    inter = tuple(x for s in node.shape for x in (1, s))
    wide = tuple(x for r, s in zip(tup, node.shape) for x in (r, s))
    x = np.broadcast_to(Tracer(mv.reshape_node(node, inter)), wide)
    return Tracer(mv.reshape_node(as_node(x), tuple(r * s for r, s in zip(tup, node.shape))))


def repeat(a, repeats, axis=None):
    """``np.repeat`` with one count for every element: ``(s,)`` to ``(s, r)`` merged into ``s * r``."""
    if not isinstance(repeats, (int, np.integer)) or isinstance(repeats, (bool, np.bool_)):
        raise unsupported("np.repeat with per-element counts", "the result's length depends on them")
    if repeats < 0:
        raise ValueError(f"repeats may not contain negative values.{at(loc())}")
    node = as_node(a, "argument of np.repeat")
    if axis is None:
        node, axis = mv.reshape_node(node, (node.size,)), 0
    axis = mv.axis_index(axis, node.ndim)
    s = node.shape
    inter = s[:axis + 1] + (1,) + s[axis + 1:]
    wide = s[:axis + 1] + (int(repeats),) + s[axis + 1:]
    x = np.broadcast_to(Tracer(mv.reshape_node(node, inter)), wide)
    return Tracer(mv.reshape_node(as_node(x), s[:axis] + (s[axis] * int(repeats),) + s[axis + 1:]))


def average(a, axis=None, weights=None, returned=False, *, keepdims=np._NoValue):
    """``np.average``: the mean, or ``sum(a * w) / sum(w)`` in NumPy's result dtype (float64 for
    integer and boolean ``a``), weights broadcast along ``axis`` as NumPy sets them up."""
    t = _t(a, "argument of np.average")
    if axis is not None:
        axis = normalize_axis_tuple(axis, t.ndim, argname="axis")
    kw = {} if keepdims is np._NoValue else {"keepdims": keepdims}
    if weights is None:
        avg = rd.mean(t, axis, **kw)
        scl = avg.dtype.type(t.size / max(avg.size, 1))
    else:
        w = _t(weights, "weights of np.average")
        if t.shape != w.shape:
            if axis is None:
                raise TypeError(f"Axis must be specified when shapes of a and weights differ.{at(loc())}")
            if w.shape != tuple(t.shape[ax] for ax in axis):
                raise ValueError(f"Shape of weights must be consistent with shape of a along specified axis."
                                 f"{at(loc())}")
            w = mv.transpose(w, tuple(int(i) for i in np.argsort(axis)))
            w = mv.reshape(w, tuple(s if ax in axis else 1 for ax, s in enumerate(t.shape)))
        extra = ("f8",) if t.dtype.kind in "biu" else ()
        dt = np.result_type(t.dtype, w.dtype, *extra)
        scl = rd.sum(w, axis=axis, dtype=dt, **kw)
        avg = rd.sum(t.astype(dt) * w.astype(dt), axis, **kw) / scl
    if not returned:
        return avg
    if np.shape(scl) != avg.shape:
        scl = Tracer(as_node(np.broadcast_to(scl, avg.shape)))
    return avg, scl


def select(condlist, choicelist, default=0):
    """``np.select``: the first choice whose condition holds, else ``default``, in NumPy's common
    dtype of the choices and default (Python scalars weak), a chain of ``where``."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"list of cases must be same length as list of conditions{at(loc())}")
    if len(condlist) == 0:
        raise ValueError(f"select with an empty condition list is not possible{at(loc())}")
    choices = [c if type(c) in (int, float) else c if isinstance(c, Tracer) else np.asarray(c)
               for c in list(choicelist) + [default]]
    dtype = np.result_type(*[c.dtype if isinstance(c, Tracer) else c for c in choices])
    conds = [c if isinstance(c, Tracer) else np.asarray(c) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray{at(loc())}")
    shape = np.broadcast_shapes(*[np.shape(c) for c in conds], *[np.shape(c) for c in choices])
    out = np.broadcast_to(np.asarray(choices[-1], dtype) if not isinstance(choices[-1], Tracer)
                          else choices[-1].astype(dtype), shape)
    for cond, choice in zip(reversed(conds), reversed(choices[:-1])):
        value = choice.astype(dtype) if isinstance(choice, Tracer) else np.asarray(choice, dtype)
        out = np.where(cond, value, out)
    return out if isinstance(out, Tracer) else Tracer(as_node(out))


def sinc(x):
    """``np.sinc``: ``sin(pi x) / (pi x)``, 1 at 0 (through eps, as NumPy)."""
    y = np.pi * _t(x, "argument of np.sinc")
    eps = np.finfo(y.dtype).eps if y.dtype.kind == "f" else 1e-20
    y = np.where(y != 0, y, y.dtype.type(eps))
    return np.sin(y) / y


def polyval(p, x):
    """``np.polyval``: Horner's rule over the coefficients (a constant or a traced 1-D array)."""
    p = p if isinstance(p, Tracer) else np.asarray(p)
    t = _t(x, "x of np.polyval")
    y = np.zeros_like(t)
    for pv in p:
        y = y * t + pv
    return y


def fix(x, out=None):
    """``np.fix``: ``np.trunc``."""
    if out is not None:
        raise unsupported("np.fix with out=", "return the result instead")
    return np.trunc(_t(x, "argument of np.fix"))


def isposinf(x, out=None):
    t = _t(x, "argument of np.isposinf")
    return np.isinf(t) & ~np.signbit(t)


def isneginf(x, out=None):
    t = _t(x, "argument of np.isneginf")
    return np.isinf(t) & np.signbit(t)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """``np.trapezoid``: ``sum(d * (y[1:] + y[:-1]) / 2)`` along ``axis``."""
    t = _t(y, "y of np.trapezoid")
    if x is None:
        d = dx
    else:
        xs = x if isinstance(x, Tracer) else np.asarray(x)
        if xs.ndim == 1:
            d = np.diff(xs)
            shape = [1] * t.ndim
            shape[axis] = d.shape[0]
            d = d.reshape(shape)
        else:
            d = np.diff(xs, axis=axis)
    nd = t.ndim
    hi, lo = [slice(None)] * nd, [slice(None)] * nd
    hi[axis], lo[axis] = slice(1, None), slice(None, -1)
    return rd.sum(d * (t[tuple(hi)] + t[tuple(lo)]) / 2.0, axis)
