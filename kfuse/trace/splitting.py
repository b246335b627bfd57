"""NumPy's functions that cut or re-view an array, over traced slices, flips, transposes and
broadcasts (so their results are views where NumPy's are): ``np.split``, ``np.array_split``,
``np.hsplit``/``vsplit``/``dsplit``, ``np.rot90`` and ``np.meshgrid``.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..errors import at
from .core import Tracer, as_node, loc


def _t(a, what: str) -> Tracer:
    return a if isinstance(a, Tracer) else Tracer(as_node(a, what))


def array_split(ary, indices_or_sections, axis=0):
    """``np.array_split``: sections as equal as can be (the first ``n % k`` one longer), or cut at
    the given indices; each a view of ``ary``."""
    t = _t(ary, "argument of np.array_split")
    axis = normalize_axis_index(axis, t.ndim)
    total = t.shape[axis]
    try:
        points = [0] + list(indices_or_sections) + [total]
    except TypeError:
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError(f"number sections must be larger than 0.{at(loc())}") from None
        each, extras = divmod(total, k)
        points = list(np.cumsum([0] + extras * [each + 1] + (k - extras) * [each]))
    lead = (slice(None),) * axis
    return [t[lead + (slice(int(a), int(b)),)] for a, b in zip(points[:-1], points[1:])]


def split(ary, indices_or_sections, axis=0):
    """``np.split``: ``array_split`` that refuses an unequal division, as NumPy."""
    t = _t(ary, "argument of np.split")
    try:
        len(indices_or_sections)
    except TypeError:
        if t.shape[normalize_axis_index(axis, t.ndim)] % indices_or_sections:
            raise ValueError(f"array split does not result in an equal division{at(loc())}") from None
    return array_split(t, indices_or_sections, axis)


def _split_along(name: str, least: int, axis_of):
    def f(ary, indices_or_sections):
        t = _t(ary, f"argument of np.{name}")
        if t.ndim < least:
            raise ValueError(f"{name} only works on arrays of {least} or more dimensions{at(loc())}")
        return split(t, indices_or_sections, axis_of(t.ndim))
    f.__name__ = name
    return f


hsplit = _split_along("hsplit", 1, lambda nd: 1 if nd > 1 else 0)
vsplit = _split_along("vsplit", 2, lambda nd: 0)
dsplit = _split_along("dsplit", 3, lambda nd: 2)


def rot90(m, k=1, axes=(0, 1)):
    """``np.rot90``: flips and a transpose, as NumPy writes it."""
    t = _t(m, "argument of np.rot90")
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError(f"len(axes) must be 2.{at(loc())}")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == t.ndim:
        raise ValueError(f"Axes must be different.{at(loc())}")
    if not all(-t.ndim <= a < t.ndim for a in axes):
        raise ValueError(f"Axes={axes} out of range for array of ndim={t.ndim}.{at(loc())}")
    k %= 4
    if k == 0:
        return t[:]
    if k == 2:
        return np.flip(np.flip(t, axes[0]), axes[1])
    perm = list(range(t.ndim))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return np.transpose(np.flip(t, axes[1]), perm)
    return np.flip(np.transpose(t, perm), axes[1])


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """``np.meshgrid``: each input reshaped along its own axis (the first two swapped for 'xy'),
    then broadcast together unless ``sparse``."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for `indexing` are 'xy' and 'ij'.{at(loc())}")
    nd = len(xi)
    s0 = (1,) * nd
    shapes = [s0[:i] + (-1,) + s0[i + 1:] for i in range(nd)]
    if indexing == "xy" and nd > 1:
        shapes[0], shapes[1] = (1, -1) + s0[2:], (-1, 1) + s0[2:]
    out = [_t(x, "argument of np.meshgrid").reshape(s) for x, s in zip(xi, shapes)]
    if not sparse:
        out = [np.broadcast_to(o, np.broadcast_shapes(*[p.shape for p in out])) for o in out]
        out = [Tracer(o.node) for o in out] if copy else out
    return tuple(out)
