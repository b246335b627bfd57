"""Writing a new value into a traced array, as NumPy does: :func:`store` gives a tracer a new node
and passes it back to its base through the inverse of each view between them (the inverse reshape
or permutation, a slice's region via :func:`overlay_slice`, a scalar-index ``SCATTER``);
:func:`write_out` is ``np.<ufunc>(..., out=o)`` (checked cast, broadcast, ``where=``);
:func:`check_same_kind` raises NumPy's own casting error; :func:`check_writable` refuses what NumPy
refuses. Item assignment and in-place operators (``mutation``), ``ufunc.at``/``np.put``
(``scatter``) and ufuncs with ``out=`` (``elementwise``, ``numpy_api``) write through here.
"""
from __future__ import annotations

import numpy as np

from ..errors import at
from ..ir.graph import Node
from ..ir.ops import Op
from . import movement as mv
from .core import Tracer, as_node, broadcast, cast, loc, materialize, mk, operand, shape_text, unsupported
from .regions import overlay


def check_writable(t: Tracer, what: str) -> None:
    """Refuse a write into ``t`` where NumPy refuses it (a Python scalar, a broadcast view), or where
    whether it reaches the base depends on memory layout (a reshape)."""
    if t.weak is not None:
        raise TypeError(f"'{t.weak.__name__}' object does not support {what}{at(loc())}")
    if t.argument is not None and t.node.op is Op.INPUT and t.node.attr("numpy_scalar"):
        raise TypeError(f"'{t.dtype.type.__name__}' object does not support {what} (a NumPy scalar "
                        f"argument is immutable){at(loc())}")
    if any(m.op is Op.BROADCAST for m in t.chain):
        raise ValueError(f"assignment destination is read-only{at(loc())}")
    if not t.exact:
        raise unsupported(f"{what} through a reshape", "NumPy writes the original array or a "
                          "copy depending on memory layout; write before reshaping, or copy")


def write_out(o, result: Tracer, ufunc: str, casting: str = "same_kind", where=True,
              what: str = "") -> Tracer:
    """``np.<ufunc>(..., out=o, where=where)`` given the result computed without ``out``: NumPy
    casts it to ``o``'s dtype (``casting``) and broadcasts it to ``o``'s shape; ``where`` False
    keeps ``o``'s values. Returns ``o``."""
    what = what or f"np.{ufunc}(..., out=)"
    if not isinstance(o, Tracer):
        raise unsupported(f"{what} into a NumPy array", "out= must be a traced array (make it "
                          "with np.zeros_like / np.empty_like of a traced one)")
    check_writable(o, what)
    check_same_kind(ufunc, result.dtype, o.dtype, casting)     # (NumPy checks the cast first)
    try:
        shape = np.broadcast_shapes(result.shape, o.shape)
    except ValueError:
        shape = result.shape
    if shape != o.shape:
        raise ValueError(f"non-broadcastable output operand with shape {shape_text(o.shape)} "
                         f"doesn't match the broadcast shape {shape_text(shape)}{at(loc())}")
    new = broadcast(cast(result.node, o.dtype), o.shape)
    if where is not True:
        m = as_node(np.asarray(where) if isinstance(where, (list, tuple, bool)) else where, "where=")
        new = mk(Op.WHERE, o.dtype, o.shape, [broadcast(cast(m, np.bool_), o.shape), new, o.node])
    store(o, new)
    return o


def check_same_kind(ufunc: str, result: np.dtype, out: np.dtype, casting: str = "same_kind") -> None:
    """Raise NumPy's own error (a UFuncTypeError) when ``ufunc``'s ``result`` dtype cannot be cast
    to the written array's dtype ``out`` under ``casting``, with the user's line noted."""
    if np.can_cast(result, out, casting):
        return
    fn = getattr(np, ufunc)
    shape = (1, 1) if ufunc == "matmul" else ()
    try:
        with np.errstate(all="ignore"):
            fn(*[np.zeros(shape, result)] * fn.nin, out=np.empty(shape, out), casting=casting)
    except TypeError as e:
        e.add_note(f"kfuse: np.{ufunc} writing its result{at(loc())}")
        raise e from None
    raise TypeError(f"Cannot cast ufunc '{ufunc}' output from dtype('{result}') to dtype('{out}') "
                    f"with casting rule '{casting}'{at(loc())}")


def store(t: Tracer, new: Node) -> None:
    """Make ``new`` the value of ``t``: of its base, through the inverse of its view chain."""
    if t.base is None:
        t._node = new
        return
    root = t.base
    nodes = [root.node]
    for m in t.chain:
        nodes.append(m.replace(inputs=(nodes[-1],) + m.inputs[1:]))
    child = new
    for m, parent in zip(reversed(t.chain), reversed(nodes[:-1])):
        child = _unview(m, parent, child)
    root._node = child


def _unview(m: Node, parent: Node, child: Node) -> Node:
    """``parent`` after its view ``m`` (a movement of it) was given the value ``child``."""
    if m.op is Op.RESHAPE:
        return mv.reshape_node(child, parent.shape)
    if m.op is Op.PERMUTE:
        return mv.permute_node(child, np.argsort(m.attr("perm")))
    if m.op is Op.SLICE:
        return overlay_slice(parent, child, list(m.attr("starts")), list(m.attr("steps")))
    if m.op is Op.REAL or m.op is Op.IMAG:      # a complex array's part: the other part kept
        other = mk(Op.IMAG if m.op is Op.REAL else Op.REAL, child.dtype, parent.shape, [parent])
        parts = [child, other] if m.op is Op.REAL else [other, child]
        return mk(Op.COMPLEX, parent.dtype, parent.shape, parts)
    if m.op is Op.GATHER:                       # a view at traced integer scalars: set them
        attrs = {"dims": m.attr("dims"), "mode": "set", "loop": parent.dtype.name}
        return mk(Op.SCATTER, parent.dtype, parent.shape, [parent, child] + list(m.inputs[1:]), attrs)
    raise ValueError(f"assignment destination is read-only{at(loc())}")


def overlay_slice(base: Node, piece: Node, starts: list, steps: list) -> Node:
    """``base`` with ``piece`` written at a slice's region (negative steps: the piece reversed)."""
    if piece.size == 0:
        return base
    flip = [slice(None)] * piece.ndim
    for d, (s, t, n) in enumerate(zip(starts, steps, piece.shape)):
        if t < 0:
            starts[d], steps[d], flip[d] = s + (n - 1) * t, -t, slice(None, None, -1)
    if any(f.step for f in flip):
        piece = mv.getitem(Tracer(piece), tuple(flip)).node
    return overlay(base, piece, starts, steps)


def copyto(dst, src, casting="same_kind", where=True) -> None:
    """``np.copyto(dst, src, casting=, where=)``: ``src`` cast (NumPy's casting check and errors,
    by NumPy itself on stand-ins of the operands) and broadcast to ``dst``, stored where ``where``."""
    if not isinstance(dst, Tracer):
        if isinstance(dst, np.ndarray):
            raise unsupported("np.copyto into a NumPy array", "copy into a traced array (an argument, "
                              "or one made with np.zeros_like of a traced one)")
        raise TypeError(f"copyto() argument 1 must be a numpy.ndarray, not {type(dst).__name__}{at(loc())}")
    check_writable(dst, "np.copyto")
    o = operand(np.asarray(src) if isinstance(src, (list, tuple)) else src, "src of np.copyto")
    mask = where if where is True else operand(np.asarray(where) if isinstance(where, (list, tuple, bool))
                                               else where, "where= of np.copyto")
    _numpy_copyto_check(dst, o, mask, casting)
    if not broadcasts_to(o.shape, dst.shape):
        raise ValueError(f"could not broadcast input array from shape {shape_text(o.shape)} into shape "
                         f"{shape_text(dst.shape)}{at(loc())}")
    new = materialize(o, dst.dtype, dst.shape, "unsafe")
    if mask is not True:
        if not broadcasts_to(mask.shape, dst.shape):
            raise ValueError(f"could not broadcast where mask from shape {shape_text(mask.shape)} into "
                             f"shape {shape_text(dst.shape)}{at(loc())}")
        m = materialize(mask, np.bool_, dst.shape)
        new = mk(Op.WHERE, dst.dtype, dst.shape, [m, new, dst.node])
    store(dst, new)


def _numpy_copyto_check(dst: Tracer, src, mask, casting: str) -> None:
    """NumPy's own casting errors of ``np.copyto``, raised by calling it on one-element stand-ins
    (a Python scalar constant as itself: its value decides NumPy's OverflowError)."""
    def stand_in(o):
        if o.weak is not None:
            return o.value if o.is_const else o.weak(0)
        return np.zeros((1,) * len(o.shape), o.dtype)
    args = {} if mask is True else {"where": stand_in(mask)}
    try:
        with np.errstate(all="ignore"):
            np.copyto(np.empty((1,) * max(dst.ndim, len(src.shape), 0 if mask is True else len(mask.shape)),
                               dst.dtype), stand_in(src), casting=casting, **args)
    except (TypeError, ValueError, OverflowError) as e:
        e.add_note(f"kfuse: np.copyto{at(loc())}")
        raise


def broadcasts_to(shape, target) -> bool:
    """Whether an array of ``shape`` broadcasts to ``target`` exactly (NumPy's rules)."""
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False
