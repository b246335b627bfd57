"""NumPy's NaN-ignoring statistics written as NumPy writes them (``numpy/lib/_nanfunctions_impl``)
over traced values: ``np.nanprod`` (NaN as 1), ``np.nanvar``/``np.nanstd`` (the count of non-NaN
values, the mean over them, the squared deviations with NaN as 0, divided by ``count - ddof``; NaN
where that is not positive). Arrays without NaN (ints, bools) take ``np.prod``/``var``/``std``.
"""
from __future__ import annotations

import numpy as np

from . import reductions as rd
from .composite import _replace_nan
from .core import Tracer, cast


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=rd._NV, where=rd._NV):
    arr, _ = _replace_nan(a, 1)
    return rd.prod(arr, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)


def _divide_by_count(a: Tracer, b) -> Tracer:
    """NumPy's ``_divide_by_count``: ``a / b`` cast back to ``a``'s dtype (``casting='unsafe'``)."""
    q = np.true_divide(a, b)
    return Tracer(cast(q.node, a.dtype)) if q.dtype != a.dtype else q


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=rd._NV, *, where=rd._NV,
           mean=rd._NV, correction=rd._NV):
    arr, mask = _replace_nan(a, 0)
    kd = False if keepdims is rd._NV else keepdims
    if mask is None:
        return rd.var(arr, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=kd, where=where,
                      mean=mean, correction=correction)
    rd._check("nanvar", out)
    ddof = rd._ddof(ddof, correction)
    wh = {} if where is rd._NV else {"where": where}
    cnt = rd.sum(~mask, axis=axis, dtype=np.intp, keepdims=True, **wh)
    if mean is not rd._NV:
        avg = mean
    else:
        avg = _divide_by_count(rd.sum(arr, axis=axis, dtype=dtype, keepdims=True, **wh), cnt)
    dev = np.subtract(arr, avg)
    dev = Tracer(cast(dev.node, arr.dtype)) if dev.dtype != arr.dtype else dev   # (out=arr, unsafe)
    dev = np.where(mask, arr.dtype.type(0), dev)
    sqr = (dev * np.conjugate(dev)).real if dev.dtype.kind == "c" else dev * dev     # NumPy's
    var = rd.sum(sqr, axis=axis, dtype=dtype, keepdims=kd, **wh)
    if var.ndim < cnt.ndim:
        cnt = np.squeeze(cnt, axis)
    dof = cnt - ddof
    # NumPy divides by dof, then sets NaN where dof <= 0; dividing by NaN there is the same value
    # (the division is in float64 either way) and keeps a full reduction a NumPy scalar
    return _divide_by_count(var, np.where(dof <= 0, np.nan, dof))


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=rd._NV, *, where=rd._NV,
           mean=rd._NV, correction=rd._NV):
    var = nanvar(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, where=where,
                 mean=mean, correction=correction)
    return np.sqrt(var)
