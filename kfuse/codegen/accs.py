"""The rules of reduction accumulators, written once for every emitter: one element's (or one
partial state's) combine into the running value, as core ops that each emitter renders with its
own op renderer (:func:`combine_ops`, :func:`combine_expr`). The initial values are the KernelIR's
(``Acc.init``, set by ``codegen.lower``: 0/1 for sum/prod, the dtype's bottom/top for max/min).

* sum, prod: ``add``/``multiply`` in the accumulator dtype (float64, int64/uint64 wrapping), the
  value cast to it first;
* any, all: ``logical_or``/``logical_and`` (nonzero is true);
* max, min: the running value is kept unless the value is greater (less) or NaN: NaN sticks, any
  NaN gives NaN, and of equal values (+0.0/-0.0) the running one stays (NumPy's scalar reduce
  loop, ``(a >= b || isnan(a)) ? a : b``); bool max/min are or/and; complex ones that loop itself
  (lexicographic ``>=``, a NaN in either part sticks).
argmax/argmin carry a position and are each emitter's own pair combine (first NaN wins, ties to
the lower position).

NumPy reduces a row left to right, one element at a time; the GPU emitters combine partial states
as a tree. For complex prod, max and min that changes more than rounding where the row's value is
non-finite: a complex product is not associative past an infinite or NaN factor (which parts are
NaN follows the order of the products), and which NaN a complex max/min keeps (the first one it
meets) follows the order of the combines. :func:`redo_ops` says, from the tree's result, when a
GPU emitter redoes the row in NumPy's order (:func:`redo_body`: the statements it recomputes).
"""
from __future__ import annotations

from . import kernel_ir as K
from .decompose import nested

_UFUNC = {"sum": "add", "prod": "multiply", "any": "logical_or", "all": "logical_and"}


def combine_ops(kind: str, acc_dtype: str, running: str, value: str, value_dtype: str) -> list:
    """``running``'s next value after combining ``value`` (of ``value_dtype``) into it, as core
    statements over temporaries (``%...``, the last one the result), for accumulator ``kind``."""
    t = acc_dtype
    if kind in ("any", "all"):
        return [K.Op("%r", _UFUNC[kind], "bool", (running, value), ("bool", value_dtype))]
    ops, v = [], value
    if value_dtype != t:
        ops.append(K.Op("%v", "cast", t, (value,), (value_dtype,)))
        v = "%v"
    if kind in ("sum", "prod"):
        return ops + [K.Op("%r", _UFUNC[kind], t, (running, v), (t, t))]
    if kind not in ("max", "min"):
        raise ValueError(f"kfuse: {kind} has no combine of one value")
    if t == "bool":
        return ops + [K.Op("%r", "logical_or" if kind == "max" else "logical_and", "bool", (running, v), (t, t))]
    if t.startswith("complex"):     # NumPy's maximum/minimum loop: keep a NaN or a running >= (<=) value
        return ops + [K.Op("%n", "isnan", "bool", (running,), (t,)),
                      K.Op("%c", "greater_equal" if kind == "max" else "less_equal", "bool", (running, v), (t, t)),
                      K.Op("%k", "bitwise_or", "bool", ("%n", "%c"), ("bool", "bool")),
                      K.Op("%r", "where", t, ("%k", running, v), ("bool", t, t))]
    ops.append(K.Op("%c", "greater" if kind == "max" else "less", "bool", (v, running), (t, t)))
    if t.startswith("float"):
        ops += [K.Op("%n", "isnan", "bool", (v,), (t,)),
                K.Op("%c2", "bitwise_or", "bool", ("%c", "%n"), ("bool", "bool"))]
    return ops + [K.Op("%r", "where", t, (ops[-1].dst, v, running), ("bool", t, t))]


def combine_expr(acc: K.Acc, running: str, value: str, value_dtype: str, render, literal) -> str:
    """:func:`combine_ops` of ``acc`` as one expression (``render(Op, args)``, ``literal``: the
    emitter's op and constant renderers)."""
    return nested(combine_ops(acc.kind, acc.acc_dtype, running, value, value_dtype), render, literal)


# accumulators whose tree result is redone in order where it is non-finite: the op that says so
_REDO = {"prod": "isfinite", "max": "isnan", "min": "isnan"}


def redo_ops(kind: str, acc_dtype: str, value: str) -> list:
    """Statements (last one bool) true where an accumulator's tree result ``value`` must be redone
    sequentially in NumPy's order: a complex product with an infinite or NaN part, a complex max
    or min with a NaN part; ``[]`` for the accumulators whose tree result is NumPy's (up to
    rounding)."""
    if not acc_dtype.startswith("complex") or kind not in _REDO:
        return []
    ops = [K.Op("%t", _REDO[kind], "bool", (value,), (acc_dtype,))]
    if kind == "prod":
        ops.append(K.Op("%r", "logical_not", "bool", ("%t",), ("bool",)))
    return ops


def redo_body(body, acc: K.Acc) -> list:
    """The statements of a phase's ``body`` that accumulator ``acc``'s value and mask depend on,
    in order (no store: a sequential redo recomputes the accumulated values only)."""
    need, out = {x for x in (acc.src, acc.mask) if x}, []
    for s in reversed(body):
        if getattr(s, "dst", None) in need:
            need.update(K.stmt_reads(s))
            out.append(s)
    return out[::-1]
