"""``np.linalg.norm``, ``np.linalg.vector_norm`` and ``np.linalg.matrix_norm``, written over traced
ufuncs and reductions the way NumPy's ``numpy/linalg/_linalg.py`` writes them, so results and
dtypes are NumPy's: integer and boolean input in float64, vector norms of any order (``inf``,
``-inf``, 0, 1, 2, any p), matrix norms ``'fro'``, 1, -1, ``inf``, ``-inf``, ``keepdims``. The
whole-array 2-norm is ``sqrt(sum(x * x))`` where NumPy calls ``dot`` (another summation order,
within the tolerance table). Matrix norms of singular values (``ord=2``, ``-2``, ``'nuc'``) need an
SVD and raise UnsupportedError naming the line.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ..errors import at
from . import reductions as rd
from .core import Tracer, as_node, loc, unsupported


def _float(x, what: str) -> Tracer:
    t = x if isinstance(x, Tracer) else Tracer(as_node(x, what))
    return t if t.dtype.kind in "fc" else t.astype(np.float64)      # NumPy: not inexact -> float


def _squares(x: Tracer) -> Tracer:
    """``x * x``, of a complex ``x`` ``(x.conj() * x).real`` (NumPy's)."""
    return (np.conjugate(x) * x).real if x.dtype.kind == "c" else x * x


def _error(kind, text):
    return kind(f"{text}{at(loc())}")


def _vector(x: Tracer, ord, axis: tuple, keepdims: bool):
    if ord == math.inf:
        return rd.max(abs(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -math.inf:
        return rd.min(abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise _error(ValueError, f"Invalid norm order '{ord}' for vectors")
    if ord == 0:
        return rd.sum((x != 0).astype(x.real.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return rd.sum(abs(x), axis=axis, keepdims=keepdims)
    if ord is None or ord == 2:
        return np.sqrt(rd.sum(_squares(x), axis=axis, keepdims=keepdims))
    ret = rd.sum(abs(x) ** ord, axis=axis, keepdims=keepdims)
    return ret ** np.reciprocal(np.asarray(ord, dtype=ret.dtype))[()]


def _matrix(x: Tracer, ord, axis: tuple, keepdims: bool):
    nd = x.ndim
    row, col = (normalize_axis_index(a, nd) for a in axis)
    if row == col:
        raise _error(ValueError, "Duplicate axes given.")
    if ord in (2, -2, "nuc"):
        raise unsupported(f"np.linalg.norm with ord={ord!r} of a matrix", "it needs singular values (an SVD)")
    if ord in (1, -1):
        red = rd.max if ord == 1 else rd.min
        ret = red(rd.sum(abs(x), axis=row), axis=col - (col > row), **({"initial": 0} if ord == 1 else {}))
    elif ord in (math.inf, -math.inf):
        red = rd.max if ord > 0 else rd.min
        ret = red(rd.sum(abs(x), axis=col), axis=row - (row > col), **({"initial": 0} if ord > 0 else {}))
    elif ord in (None, "fro", "f"):
        ret = np.sqrt(rd.sum(_squares(x), axis=(row, col)))
    else:
        raise _error(ValueError, "Invalid norm order for matrices.")
    if keepdims:
        shape = [1 if d in (row, col) else s for d, s in enumerate(x.shape)]
        ret = ret.reshape(shape)
    return ret


def norm(x, ord=None, axis=None, keepdims=False):
    """``np.linalg.norm``."""
    t = _float(x, "argument of np.linalg.norm")
    nd = t.ndim
    if axis is None and (ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1)):
        flat = t.ravel()
        if flat.dtype.kind == "c":      # NumPy: re . re + im . im
            re, im = flat.real, flat.imag
            ret = np.sqrt(rd.sum(re * re) + rd.sum(im * im))
        else:
            ret = np.sqrt(rd.sum(flat * flat))
        return ret.reshape([1] * nd) if keepdims else ret
    if axis is None:
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = (int(axis),)
        except Exception:
            raise _error(TypeError, "'axis' must be None, an integer or a tuple of integers") from None
    if len(axis) == 1:
        return _vector(t, ord, axis, keepdims)
    if len(axis) == 2:
        return _matrix(t, ord, axis, keepdims)
    raise _error(ValueError, "Improper number of dimensions to norm.")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """``np.linalg.vector_norm``: any number of axes (moved to the front and flattened, as NumPy)."""
    t = _float(x, "argument of np.linalg.vector_norm")
    shape = list(t.shape)
    if axis is None:
        v, ax = t.ravel(), 0
    elif isinstance(axis, tuple):
        axes = normalize_axis_tuple(axis, t.ndim)
        rest = tuple(i for i in range(t.ndim) if i not in axes)
        v = np.transpose(t, axes + rest).reshape((math.prod(shape[i] for i in axes), *[shape[i] for i in rest]))
        ax = 0
    else:
        v, ax = t, axis
    res = norm(v, axis=ax, ord=ord)
    if keepdims:
        for i in normalize_axis_tuple(range(len(shape)) if axis is None else axis, len(shape)):
            shape[i] = 1
        res = res.reshape(tuple(shape))
    return res


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """``np.linalg.matrix_norm``: the last two axes."""
    return norm(x, axis=(-2, -1), keepdims=keepdims, ord=ord)
