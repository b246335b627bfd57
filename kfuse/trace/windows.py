"""``np.diag`` and ``np.lib.stride_tricks.sliding_window_view``, as gathers at constant positions
(NumPy's results; ``sliding_window_view`` gives a copy where NumPy gives a read-only view, which
no write can tell apart)."""
from __future__ import annotations

import numpy as np

from ..errors import at
from . import elementwise as ew
from . import movement as mv
from .composite import _t, diagonal
from .core import loc, unsupported
from .indexing import getitem, take


def diag(v, k=0):
    """The ``k``-th diagonal of a 2-D array; of a 1-D one, the square matrix with ``v`` on its
    ``k``-th diagonal and zeros elsewhere."""
    t = _t(v, "argument of np.diag")
    if t.ndim == 2:
        return diagonal(t, k)
    if t.ndim != 1:
        raise ValueError(f"Input must be 1- or 2-d.{at(loc())}")
    n = t.shape[0] + abs(int(k))
    if t.shape[0] == 0:
        return ew.where(np.zeros((n, n), bool), t.sum(), np.zeros((), t.dtype))
    r, c = np.arange(n)[:, None], np.arange(n)[None, :]
    pos = np.minimum(np.broadcast_to(r if k >= 0 else c, (n, n)), t.shape[0] - 1)
    return ew.where(c - r == k, getitem(t, pos), np.zeros((), t.dtype))


def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """The windows of one length along one axis (NumPy's layout: the window dim last)."""
    t = _t(x, "argument of sliding_window_view")
    if writeable:
        raise unsupported("sliding_window_view(writeable=True)", "windows are read-only copies")
    w = window_shape if np.ndim(window_shape) == 0 else tuple(window_shape)
    ax = axis if axis is None or np.ndim(axis) == 0 else tuple(axis)
    if isinstance(w, tuple) and len(w) == 1:
        w = w[0]
    if isinstance(ax, tuple) and len(ax) == 1:
        ax = ax[0]
    if ax is None and t.ndim == 1:
        ax = 0
    if isinstance(w, tuple) or ax is None or isinstance(ax, tuple):
        raise unsupported("sliding_window_view over several axes", "take windows along one axis")
    w, a = int(w), mv.axis_index(ax, t.ndim)
    if w < 0:
        raise ValueError(f"`window_shape` cannot contain negative values{at(loc())}")
    if t.shape[a] < w:
        raise ValueError(f"window shape cannot be larger than input array shape{at(loc())}")
    idx = np.arange(t.shape[a] - w + 1)[:, None] + np.arange(w)[None, :]
    return mv.moveaxis(take(t, idx, axis=a), a + 1, -1)
