"""Builders for scans (running reductions along one axis) with NumPy's exact dtype rules:
``np.cumsum``/``np.cumprod`` (functions and methods; axis None scans the C-order flattening),
``np.cumulative_sum``/``np.cumulative_prod`` (``include_initial`` too), ``np.nancumsum``/
``np.nancumprod``, and the ``accumulate`` method of ``add``, ``multiply``, ``maximum`` and
``minimum`` (``logical_or``/``logical_and`` on booleans).

Result dtypes are NumPy's own, taken from running the NumPy function on a tiny dummy array of the
same rank and dtype (``np.cumsum`` of int8 gives int64, ``np.add.accumulate`` of int8 gives int8),
and NumPy's errors for a bad axis or dtype are raised while tracing, pointing at the user's line.
The input is cast to that dtype, then one scan node (``ir/ops.py``) accumulates in it, in order.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..errors import at
from ..ir.dtypes import check_supported
from ..ir.ops import Op
from .assemble import concatenate
from .core import Tracer, as_node, cast, loc, mk, unsupported
from .movement import reshape_node

_BY_UFUNC = {"add": Op.CUMSUM, "multiply": Op.CUMPROD, "maximum": Op.CUMMAX, "minimum": Op.CUMMIN}
_BOOL_ONLY = {"logical_or": Op.CUMMAX, "logical_and": Op.CUMMIN}    # on booleans: max / min
_IDENTITY = {Op.CUMSUM: 0, Op.CUMPROD: 1}


def _numpy(what: str, call, shape, dt) -> np.dtype:
    """The result dtype of ``call(dummy)`` on a zero array of ``shape``'s rank, or NumPy's own
    error raised at the user's line."""
    dummy = np.zeros((1,) * len(shape), dt)
    try:
        with np.errstate(all="ignore"):
            res = call(dummy)
    except (ValueError, TypeError) as e:       # AxisError is a ValueError; UFuncTypeError a TypeError
        raise type(e)(f"{e}{at(loc())}") from None
    return check_supported(np.asarray(res).dtype, what, loc())


def scan(op: Op, node, axis: int, dtype) -> Tracer:
    """``op`` along ``axis`` (normalised) of ``node`` cast to ``dtype``. A scan along an axis of
    length 1 is the cast input (no kernel constraint for nothing)."""
    x = cast(node, np.dtype(dtype))
    if x.shape[axis] == 1 or x.size == 0:
        return Tracer(x)
    return Tracer(mk(op, x.dtype, x.shape, [x], {"axis": int(axis)}))


def _flat_or_axis(node, axis):
    """(node, axis): axis None scans the C-order flattening, else the axis; NumPy scans a 0-d
    array as one of shape (1,) (axis 0 or -1)."""
    if axis is None or node.ndim == 0:
        flat = reshape_node(node, (node.size,))
        return flat, 0 if axis is None else normalize_axis_index(int(axis), 1)
    return node, normalize_axis_index(int(axis), node.ndim)


def _prepare(fname: str, a, axis, dtype, out):
    """(the argument's node, NumPy's result dtype) of ``np.<fname>``, or its error."""
    if out is not None:
        raise unsupported(f"np.{fname} with out=", "return the result instead")
    node = as_node(a, f"argument of np.{fname}")
    return node, _numpy(f"np.{fname}", lambda d: getattr(np, fname)(d, axis=axis, dtype=dtype), node.shape,
                        node.dtype)


def _cum(fname: str, op: Op, a, axis, dtype, out):
    node, dt = _prepare(fname, a, axis, dtype, out)
    node, ax = _flat_or_axis(node, axis)
    return scan(op, node, ax, dt)


def cumsum(a, axis=None, dtype=None, out=None):
    return _cum("cumsum", Op.CUMSUM, a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
    return _cum("cumprod", Op.CUMPROD, a, axis, dtype, out)


def _nan_to(a, value, fname):
    """NumPy's ``_replace_nan``: NaN replaced by ``value`` in float arrays, others unchanged."""
    t = a if isinstance(a, Tracer) else Tracer(as_node(a, f"argument of np.{fname}"))
    if t.dtype.kind not in "fc":
        return t
    return np.where(np.isnan(t), t.dtype.type(value), t)


def nancumsum(a, axis=None, dtype=None, out=None):
    return _cum("nancumsum", Op.CUMSUM, _nan_to(a, 0, "nancumsum"), axis, dtype, out)


def nancumprod(a, axis=None, dtype=None, out=None):
    return _cum("nancumprod", Op.CUMPROD, _nan_to(a, 1, "nancumprod"), axis, dtype, out)


def _cumulative(fname: str, op: Op, x, axis, dtype, out, include_initial):
    node, dt = _prepare(fname, x, axis, dtype, out)
    node, ax = _flat_or_axis(node, 0 if axis is None else axis)    # (NumPy checked axis None's rank)
    res = scan(op, node, ax, dt)
    if not include_initial:
        return res
    shape = tuple(1 if d == ax else s for d, s in enumerate(node.shape))
    first = np.full(shape, _IDENTITY[op], dt)
    return concatenate([first, res], axis=ax)


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    return _cumulative("cumulative_sum", Op.CUMSUM, x, axis, dtype, out, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    return _cumulative("cumulative_prod", Op.CUMPROD, x, axis, dtype, out, include_initial)


def ufunc_accumulate(ufunc, a, axis=0, dtype=None, out=None):
    """``np.<ufunc>.accumulate`` for add, multiply, maximum, minimum (and logical_or/logical_and
    of booleans, which are maximum/minimum there)."""
    name = ufunc.__name__
    node = as_node(a, f"argument of np.{name}.accumulate")
    op = _BY_UFUNC.get(name) or (_BOOL_ONLY.get(name) if node.dtype == np.bool_ and dtype in (None, bool, np.bool_)
                                 else None)
    if op is None:
        raise unsupported(f"np.{name}.accumulate", "kfuse scans add, multiply, maximum and minimum")
    if out is not None:
        raise unsupported(f"np.{name}.accumulate with out=", "return the result instead")
    dt = _numpy(f"np.{name}.accumulate", lambda d: ufunc.accumulate(d, axis=axis, dtype=dtype),
                node.shape, node.dtype)
    if axis is None or isinstance(axis, tuple):      # NumPy accepted it for this rank: one axis
        axis = 0 if axis is None else axis[0]
    return scan(op, node, normalize_axis_index(int(axis), node.ndim), dt)
