"""Searches of sorted tables with NumPy's semantics: ``np.searchsorted`` (and
``ndarray.searchsorted``), built on the IR's ``SEARCHSORTED``, and the NumPy functions NumPy writes
over it: ``np.digitize`` (constant bins, whose monotonicity NumPy checks by value) and
``np.interp`` (NumPy's C loop: the interval ``xp[j] <= x < xp[j+1]`` found by a search, its
slope, and the same special cases: NaN, the ends, ``x == xp[j]``, a NaN slope retried from the
right end).

The table is read whole by every search, so it is a buffer (``kfuse/fusion``: never computed in
the searching kernel). As in NumPy, it must be sorted (NaN last); a table that is not gives
NumPy's "undefined" too, though not necessarily the same one.
"""
from __future__ import annotations

import numpy as np

from ..errors import at
from ..ir.dtypes import is_float
from ..ir.ops import Op
from . import indexing
from .core import Tracer, as_node, cast, loc, mk, operand, unsupported


def searchsorted(a, v, side="left", sorter=None):
    """``np.searchsorted(a, v, side, sorter)``: int64 indices of ``v``'s shape."""
    if side not in ("left", "right"):
        raise ValueError(f"search side must be 'left' or 'right' (got {side!r}){at(loc())}")
    table = as_node(a, "array of np.searchsorted")
    if table.ndim != 1:
        raise ValueError(f"object too deep for desired array{at(loc())}")
    if sorter is not None:
        table = indexing.take(Tracer(table), sorter).node
    key = operand(np.asarray(v) if isinstance(v, (list, tuple)) else v, "values of np.searchsorted")
    common = np.result_type(table.dtype, key.dtype)
    if is_float(common) and common.itemsize == 2:   # float32 orders float16/bfloat16 values exactly
        common = np.dtype(np.float32)
    keys = as_node(v if isinstance(v, Tracer) else np.asarray(v, common), "values of np.searchsorted")
    return Tracer(mk(Op.SEARCHSORTED, np.int64, keys.shape, [cast(table, common), cast(keys, common)],
                     {"side": side}))


def digitize(x, bins, right=False):
    """``np.digitize(x, bins, right)`` for constant ``bins`` (NumPy checks their order by value)."""
    if isinstance(bins, Tracer):
        raise unsupported("np.digitize with traced bins", "use np.searchsorted(bins, x, side=...) "
                          "(for increasing bins: side='left' if right else 'right')")
    bins = np.asarray(bins)
    try:
        np.digitize(np.zeros(0, bins.dtype if bins.dtype.kind in "biuf" else np.float64), bins)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{e}{at(loc())}") from None
    side = "left" if right else "right"
    increasing = bins.size < 2 or bool(np.all(bins[1:] >= bins[:-1]))
    if increasing:
        return searchsorted(bins, x, side=side)
    return len(bins) - searchsorted(bins[::-1].copy(), x, side=side)


def interp(x, xp, fp, left=None, right=None, period=None):
    """``np.interp`` in float64, as NumPy's ``compiled_interp``."""
    if period is not None:
        raise unsupported("np.interp with period=")
    X = Tracer(cast(as_node(x, "x of np.interp"), np.float64))
    XP = Tracer(cast(as_node(np.asarray(xp) if isinstance(xp, (list, tuple)) else xp, "xp of np.interp"), np.float64))
    FP = Tracer(cast(as_node(np.asarray(fp) if isinstance(fp, (list, tuple)) else fp, "fp of np.interp"), np.float64))
    if XP.ndim != 1 or FP.ndim != 1:
        raise ValueError(f"object too deep for desired array{at(loc())}")
    n = XP.shape[0]
    if FP.shape[0] != n:
        raise ValueError(f"fp and xp are not of the same length.{at(loc())}")
    if n == 0:
        raise ValueError(f"array of sample points is empty{at(loc())}")
    lval = FP[0] if left is None else left
    rval = FP[n - 1] if right is None else right
    if n == 1:                      # NumPy's own branch: a NaN x gives fp[0] there
        return np.where(X < XP[0], lval, np.where(X > XP[0], rval, FP[0])).astype(np.float64)
    j = searchsorted(XP, X, side="right") - 1                       # xp[j] <= x < xp[j+1]
    jc = np.clip(j, 0, n - 2)
    xj, xj1 = np.take(XP, jc, mode="clip"), np.take(XP, jc + 1, mode="clip")
    fj, fj1 = np.take(FP, jc, mode="clip"), np.take(FP, jc + 1, mode="clip")
    slope = (fj1 - fj) / (xj1 - xj)
    res = slope * (X - xj) + fj
    res = np.where(np.isnan(res), slope * (X - xj1) + fj1, res)     # NaN one way: the other way
    res = np.where(np.isnan(res) & (fj == fj1), fj, res)
    res = np.where(xj == X, fj, res)                                # no interpolation at a point
    res = np.where(j == n - 1, FP[n - 1], res)
    res = np.where(X > XP[n - 1], rval, np.where(X < XP[0], lval, res))
    return np.where(np.isnan(X), X, res).astype(np.float64)
