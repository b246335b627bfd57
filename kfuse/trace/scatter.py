"""NumPy's writes at index positions other than item assignment: ``ufunc.at`` (``np.add.at`` and
every binary ufunc's ``at``), ``np.put`` (and ``ndarray.put``) and ``np.put_along_axis``. Each is
a ``SCATTER`` (``kfuse/ir/ops.py``) written into the traced array the way
``mutation.setitem`` writes (through its views, back into an argument).

``ufunc.at(a, indices, b)`` is NumPy's unbuffered in-place operation: every index, repeated ones
included, applies ``op`` once, in the loop dtype NumPy resolves for ``a``'s dtype and ``b``'s
(``b`` converted as ``np.asarray`` does), the result cast back to ``a``'s dtype unsafely. A key
without index arrays (a slice, an int) cannot repeat a position: it is an ordinary elementwise
update. Unary ``at`` (``np.negative.at``) and a traced boolean mask are refused.
"""
from __future__ import annotations

import numpy as np

from ..errors import at
from ..ir.ops import BINARY, BY_UFUNC, Op
from . import elementwise as ew
from . import indexing
from . import movement as mv
from .core import Tracer, as_node, broadcast, cast, const_node, loc, mk, unsupported
from .mutation import _assigned, _value_node, getitem
from .writes import broadcasts_to, check_writable, store

# the IR op of each binary NumPy ufunc (np.divide is np.true_divide)
_TRACED = ("the array written must be traced (make it with np.zeros_like / np.empty_like of a traced "
           "one; a NumPy array made inside the function is a constant)")
_BINARY_UFUNCS = {getattr(np, k): op for k, op in BY_UFUNC.items() if op in BINARY and hasattr(np, k)}


def ufunc_at(ufunc, a, indices, b=None):
    """``ufunc.at(a, indices, b)`` on a traced ``a``; returns None, as NumPy does."""
    name = ufunc.__name__
    if not isinstance(a, Tracer):
        raise unsupported(f"np.{name}.at into a NumPy array", _TRACED)
    op = _BINARY_UFUNCS.get(ufunc)
    if op is None:
        raise unsupported(f"np.{name}.at", "kfuse traces the at method of binary ufuncs")
    if b is None:
        raise ValueError(f"second operand needed for ufunc{at(loc())}")
    check_writable(a, f"np.{name}.at")
    if isinstance(b, (list, tuple)):
        b = np.asarray(b)
    bd = b.dtype if isinstance(b, (Tracer, np.ndarray, np.generic)) else np.asarray(b).dtype
    loop = _narrowed(op, a.dtype, _loop_dtype(ufunc, a.dtype, bd), b)
    b_node = as_node(np.asarray(b, bd) if not isinstance(b, Tracer) else b, f"operand of np.{name}.at")

    def values(shape):
        if not broadcasts_to(b_node.shape, shape):
            raise ValueError(f"array is not broadcastable to correct shape{at(loc())}")
        return broadcast(cast(b_node, loop), shape)

    key = indices if isinstance(indices, tuple) else (indices,)
    if indexing.is_advanced(key):
        new, basic = indexing.scatter(a.node, key, values, mode=op.value, loop=loop)
        store(a, _assigned(a.node, basic, Tracer(_summed_wide(new))))
        return None
    if any(isinstance(k, Tracer) for k in key):
        raise unsupported(f"np.{name}.at with a traced boolean mask", f"use a[mask] = np.{name}(a, b)[mask]")
    piece = getitem(a, key)                 # no index arrays: no position repeats
    res = ew.apply_ufunc(op.value, Tracer(cast(as_node(piece), loop)), Tracer(values(piece.shape)))
    store(a, _assigned(a.node, key, Tracer(cast(res.node, a.dtype))))
    return None


# ops whose float result computed in a wider float and rounded once equals the op in the narrower
# one when both operands are of the narrower (p' >= 2p + 2: float64 for float32, float32 for
# float16). Not the extremes: their values agree in any width, but NumPy's float16 loops keep the
# first of two equal zeros and its wider ones the second (np.minimum.at(f16, i, -0.0) computes in
# float64: -0.0 lands; docs/FUZZING.md bug 41), and narrowing them gains no hardware atomic
_NARROWABLE = frozenset({"add", "subtract", "multiply", "true_divide"})


def _narrowed(op: Op, a: np.dtype, loop: np.dtype, b) -> np.dtype:
    """``a``'s own float dtype instead of NumPy's wider float ``loop`` where that gives the same
    values (``np.add.at(h32, i, 1)`` computes in float64 and rounds back each time: the same as
    float32 adds, which a hardware atomic does), that is when every value of ``b`` is one of
    ``a``'s dtype: a constant equal to itself cast, or a traced array of a dtype ``a``'s holds."""
    if a.kind != "f" or loop.kind != "f" or loop.itemsize <= a.itemsize or op.value not in _NARROWABLE \
            or 2 * np.finfo(a).nmant + 4 > np.finfo(loop).nmant + 1:
        return loop
    if isinstance(b, Tracer):
        fits = np.can_cast(b.dtype, a, "safe")
    else:
        with np.errstate(all="ignore"):
            v = np.asarray(b)
            fits = v.dtype.kind in "biuf" and bool(np.all((v.astype(a) == v) | (v != v)))
    return np.dtype(a) if fits else loop


def _summed_wide(new):
    """A sub-word integer ``np.add.at``/``np.subtract.at`` with at least as many values as the
    array has elements (a histogram): the values summed into an int32 array of zeros first (a
    hardware atomic add on the GPU, where the 8/16-bit combine takes a compare-and-swap a value),
    then added to the array once, wrapping. Exact: wrapping adds are sums modulo 2**8 (2**16),
    which 2**32 is a multiple of."""
    if new.op is not Op.SCATTER:            # no values (an empty index): the array unchanged
        return new
    base, vals = new.inputs[:2]
    mode = new.attr("mode")
    if base.dtype.kind not in "iu" or base.dtype.itemsize > 2 or mode not in ("add", "subtract") \
            or vals.size < base.size or np.dtype(new.attr("loop")).kind not in "iu":
        return new      # (a float loop rounds each add and casts back: no sum first, seed 1901 #668)
    zeros = broadcast(const_node(0, np.int32), base.shape)
    summed = mk(Op.SCATTER, np.int32, base.shape, [zeros, cast(vals, np.int32)] + list(new.inputs[2:]),
                dict(new.attrs, mode="add", loop="int32"))
    res = ew.apply_ufunc(mode, Tracer(cast(base, np.int32)), Tracer(summed))
    return cast(res.node, base.dtype)


def _loop_dtype(ufunc, a: np.dtype, b: np.dtype) -> np.dtype:
    """The dtype NumPy's ``ufunc.at`` computes in (its own TypeError, noted with the user's line)."""
    try:
        with np.errstate(all="ignore"):
            return ufunc(np.zeros((), a), np.zeros((), b)).dtype
    except TypeError as e:
        e.add_note(f"kfuse: np.{ufunc.__name__}.at{at(loc())}")
        raise


def put(a, ind, v, mode="raise"):
    """``np.put(a, ind, v, mode)``: ``a.flat[ind] = v``, ``v`` repeated as ``ind`` needs."""
    if not isinstance(a, Tracer):
        raise unsupported("np.put into a NumPy array", _TRACED)
    check_writable(a, "np.put")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r}){at(loc())}")
    flat = mv.reshape_node(a.node, (a.size,))
    idx = indexing.as_intp(ind, "safe").reshape(-1)
    n = idx.shape[0]
    if n == 0:
        return None
    if a.size == 0:
        raise IndexError(f"cannot replace elements of an empty array{at(loc())}")
    if mode != "raise":
        idx = np.remainder(idx, a.size) if mode == "wrap" else np.clip(idx, 0, a.size - 1)
    vals = v if isinstance(v, Tracer) else np.asarray(v)
    if vals.size == 0:
        return None
    vals = vals.reshape(-1)
    if vals.shape[0] != n:                  # NumPy repeats v (or ignores its tail)
        vals = vals[np.arange(n) % vals.shape[0]]
    vnode = _value_node(vals, a.dtype, (n,))
    new, _ = indexing.scatter(flat, (idx,), lambda shape: vnode, checked=mode == "raise")
    store(a, mv.reshape_node(new, a.shape))
    return None


def put_along_axis(arr, indices, values, axis):
    """``np.put_along_axis``: ``arr[..., indices[..., j, ...], ...] = values[..., j, ...]``."""
    if not isinstance(arr, Tracer):
        raise unsupported("np.put_along_axis into a NumPy array", _TRACED)
    check_writable(arr, "np.put_along_axis")
    node, axis, shape, idx = indexing.along_axis(arr, indices, axis, "np.put_along_axis")
    if 0 in shape:
        return None
    dims = list(range(node.ndim))
    dims[axis] = -1
    vals = _value_node(values, node.dtype, shape)
    new = mk(Op.SCATTER, node.dtype, node.shape, [node, vals, idx],
             {"dims": tuple(dims), "mode": "set", "loop": node.dtype.name})
    store(arr, mv.reshape_node(new, arr.shape))
    return None


__all__ = ["ufunc_at", "put", "put_along_axis"]
