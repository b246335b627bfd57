"""Builders for elementwise ops: NumPy ufuncs (with NumPy 2 / NEP 50 dtype resolution through
``np.<ufunc>.resolve_dtypes``), ``where``, ``clip``, ``astype``, ``round`` and a few ufunc aliases.

Every node built here follows the IR convention: inputs explicitly CAST to the loop dtypes and
BROADCAST to the output shape; constants are 0-d CONST nodes.
"""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np
from numpy._core import umath as _umath

from ..errors import at
from ..ir import dtypes
from ..ir.dtypes import check_supported
from ..ir.ops import BY_UFUNC, Op
from .core import (Operand, Tracer, broadcast_shapes, cast, loc, materialize, mk, operand,
                   pytype_of, unsupported)
from .writes import check_same_kind, write_out

_COMPARISONS = frozenset({"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"})

# ufuncs that are one IR op on the loop dtypes NumPy resolves for them.
_ALIASES = {"fabs": Op.ABSOLUTE, "float_power": Op.POWER}
# ufuncs that are a multiplication by a constant on their loop dtype: NumPy's C constants, e.g.
# float32 rad2deg multiplies by 180.0f / NPY_PIf (a float32 division: 57.295776, not 57.29578)
_TO_DEG = frozenset({"rad2deg", "degrees"})
_SCALED = _TO_DEG | {"deg2rad", "radians"}


def _scale(name: str, dtype: np.dtype) -> float:
    """The factor NumPy's ``name`` loop multiplies by, in ``dtype`` (float32 or float64)."""
    pi, k = dtype.type(math.pi), dtype.type(180.0)
    return float(k / pi if name in _TO_DEG else pi / k)


_BOOL_KEEPING = _COMPARISONS | {"bitwise_and", "bitwise_or", "bitwise_xor"}


def _bool_to_int(o: Operand) -> Operand:
    if o.weak is not bool:
        return o
    if o.node is None:
        return Operand(None, int(o.value), np.dtype(np.int64), int)
    return Operand(cast(o.node, np.int64), None, np.dtype(np.int64), int)


def supports_ufunc(name: str) -> bool:
    return name in BY_UFUNC or name in _ALIASES or name in _SCALED


def _fits(value: int, dtype: np.dtype) -> bool:
    if dtype.kind not in "iu":
        return True
    info = np.iinfo(dtype)
    return info.min <= value <= info.max


def _resolve(ufunc: np.ufunc, ops: list[Operand]) -> tuple[np.dtype, ...]:
    keys = [o.key for o in ops]
    loop = dtypes.resolve(ufunc, keys)
    if ufunc.__name__ in _COMPARISONS:
        # NumPy 2 compares with out-of-range Python ints exactly (int8 < 1000 is True): compare
        # in a dtype that holds both sides.
        changed = False
        for i, o in enumerate(ops):
            if o.is_const and o.weak is int and not _fits(o.value, loop[i]):
                keys[i] = np.dtype(np.int64) if _fits(o.value, np.dtype(np.int64)) \
                    else np.dtype(np.float64)
                changed = True
        if changed:
            loop = dtypes.resolve(ufunc, keys)
    if any(d == np.object_ for d in loop[:ufunc.nin]):
        # NumPy compares two Python ints in its object loop (exactly, at any size); weak ints kfuse
        # traces are int64 values, whose int64 comparison is the exact one
        loop = dtypes.resolve(ufunc, [o.dtype if o.weak is int else k for o, k in zip(ops, keys)])
    return loop


def apply_ufunc(name: str, *args, python_op: bool = False) -> Tracer:
    """Trace ``np.<name>(*args)``. ``python_op``: called through a Python operator, so that
    weak (Python scalar) operands give a weak result, as Python arithmetic on scalars does."""
    ufunc = getattr(np, name, None)
    if not isinstance(ufunc, np.ufunc) or not supports_ufunc(name):
        raise unsupported(f"np.{name}")
    if len(args) != ufunc.nin:
        raise TypeError(f"{name}() takes {ufunc.nin} positional arguments but {len(args)} were given")
    ops = [operand(a, f"argument of np.{name}") for a in args]
    if python_op and all(o.weak for o in ops) and name not in _BOOL_KEEPING:
        ops = [_bool_to_int(o) for o in ops]   # Python: -True == -1, True + True == 2
    loop = _resolve(ufunc, ops)
    in_dts, out_dt = loop[:ufunc.nin], loop[ufunc.nin]
    if name in ("power", "float_power") and in_dts[1].kind in "iu" and ops[1].is_const \
            and ops[1].value < 0:
        raise ValueError(f"Integers to negative integer powers are not allowed.{at(loc())}")
    shape = broadcast_shapes(*[o.shape for o in ops])
    nodes = [materialize(o, dt, shape) for o, dt in zip(ops, in_dts)]
    if name in _SCALED:
        # the float16 loop computes in float32 (its float32 constant) and rounds once
        dt = np.dtype(np.float32) if in_dts[0] in (dtypes.F16, dtypes.BF16) else in_dts[0]
        c = materialize(operand(_scale(name, dt)), dt, shape)
        node = mk(Op.MULTIPLY, dt, shape, [cast(nodes[0], dt), c])
        node = cast(node, out_dt) if dt != out_dt else node
    else:
        op = _ALIASES.get(name) or BY_UFUNC[name]
        if op is Op.CONJUGATE and not dtypes.is_complex(out_dt):
            op = Op.POSITIVE            # the conjugate of a real number is itself
        node = mk(op, out_dt, shape, nodes)
    weak = pytype_of(out_dt) if python_op and all(o.weak for o in ops) else None
    return Tracer(node, weak)


def where(condition, x=None, y=None) -> Tracer:
    if x is None or y is None:
        raise unsupported("np.where with one argument (np.nonzero)", "data-dependent shape")
    c, a, b = (operand(v, "argument of np.where") for v in (condition, x, y))
    rep = {bool: False, int: 0, float: 0.0, complex: 0j}
    dt = dtypes.result_type(*[rep[o.weak] if o.weak else o.dtype for o in (a, b)])
    shape = broadcast_shapes(c.shape, a.shape, b.shape)
    nodes = [materialize(c, np.bool_, shape, "unsafe"), materialize(a, dt, shape, "unsafe"),
             materialize(b, dt, shape, "unsafe")]
    return Tracer(mk(Op.WHERE, dt, shape, nodes))


def clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue,
         max=np._NoValue, **kwargs) -> Tracer:
    if out is not None:
        casting = kwargs.pop("casting", "same_kind")
        return write_out(out, clip(a, a_min, a_max, min=min, max=max, **kwargs), "clip", casting)
    if kwargs:
        raise unsupported("np.clip with " + ", ".join(kwargs))
    lo = a_min if a_min is not np._NoValue else (None if min is np._NoValue else min)
    hi = a_max if a_max is not np._NoValue else (None if max is np._NoValue else max)
    x = operand(a, "argument of np.clip")
    bounds = [operand(v, "bound of np.clip") for v in (lo, hi) if v is not None]
    keys = [x.key] + [o.key for o in bounds]
    # np.clip is the ufunc umath.clip (3 operands); resolve with both bounds present.
    while len(keys) < 3:
        keys.append(keys[1] if len(keys) == 2 else x.key)
    dt = dtypes.resolve(_umath.clip, keys)[-1]
    result = Tracer(cast(x.node, dt) if x.node is not None else materialize(x, dt, ()))
    for bound, fn in ((lo, "maximum"), (hi, "minimum")):
        if bound is None:
            continue
        b = operand(bound)
        if b.is_const and b.weak is int and dt.kind in "iu" and not _fits(b.value, dt):
            # NumPy accepts a Python-int bound outside the dtype only on the side where clipping
            # to it is a no-op (a_min below the range, a_max above it)
            info = np.iinfo(dt)
            if (fn == "maximum") != (b.value < info.min):
                raise OverflowError(f"Python integer {b.value} out of bounds for {dt}")
            bound = int(np.clip(b.value, info.min, info.max))
        elif b.node is not None:
            bound = Tracer(cast(b.node, dt))
        elif b.weak is None:
            bound = np.array(b.value, b.dtype).astype(dt)[()]
        # np.clip with both bounds keeps x on ties (+0.0/-0.0): NumPy's maximum/minimum return
        # their 2nd operand on ties, its float16 loops their 1st (npy_half_ge/le), so x goes where
        # the tie rule keeps it. With one bound NumPy calls maximum(x, lo) / minimum(x, hi) itself
        # (numpy/_core/_methods.py _clip), ties as that call gives them (seed 32 #9555)
        x_first = dt == np.float16 or lo is None or hi is None
        result = apply_ufunc(fn, result, bound) if x_first else apply_ufunc(fn, bound, result)
        if result.dtype != dt:
            result = Tracer(cast(result.node, dt))
    return result


def astype(x, dtype, order="K", casting="unsafe", subok=True, copy=True, *, device=None) -> Tracer:
    dt = check_supported(dtype, "astype", loc())
    o = operand(x, "argument of astype")
    if casting != "unsafe" and not np.can_cast(o.dtype, dt, casting=casting):
        raise TypeError(f"Cannot cast array data from {o.dtype!r} to {dt!r} according to the "
                        f"rule {casting!r}")
    node = o.node if o.node is not None else materialize(o, o.dtype, ())
    warn_complex_cast(o.dtype, dt)
    return Tracer(cast(node, dt))


def warn_complex_cast(src: np.dtype, dst: np.dtype) -> None:
    """NumPy's ComplexWarning for a cast of complex values to a real number dtype (the imaginary
    part is dropped, as in NumPy; bool is ``!= 0`` and warns of nothing)."""
    if dtypes.is_complex(src) and not dtypes.is_complex(dst) and dst != np.bool_:
        warnings.warn("Casting complex values to real discards the imaginary part",
                      np.exceptions.ComplexWarning, stacklevel=3)


def round_(a, decimals=0, out=None) -> Tracer:
    """``np.round`` as NumPy's ``PyArray_Round`` computes it: integers unchanged for
    ``decimals >= 0``; ``decimals == 0`` is ``rint`` (bool gives float16); otherwise
    ``rint(x * 10**d) / 10**d`` (``x / 10**-d`` and back for ``d < 0``) in the array's float dtype,
    integers in float64 and cast back, each op rounded as NumPy's loops round it."""
    if out is not None:
        raise unsupported("np.round with out=")
    decimals = operator.index(decimals)
    o = operand(a, "argument of np.round")
    if o.dtype.kind in "iu" and decimals >= 0:
        return Tracer(o.node) if o.node is not None else Tracer(materialize(o, o.dtype, ()))
    if decimals == 0:
        return apply_ufunc("rint", a)
    if o.dtype.kind == "c":     # NumPy rounds each part (a complex product would NaN an infinite one)
        x = Tracer(o.node if o.node is not None else materialize(o, o.dtype, ()))
        part = dtypes.real_dtype(o.dtype)
        re, im = (round_(Tracer(mk(p, part, x.shape, [x.node])), decimals) for p in (Op.REAL, Op.IMAG))
        return Tracer(mk(Op.COMPLEX, o.dtype, x.shape, [re.node, im.node]))
    first, second = ("multiply", "divide") if decimals >= 0 else ("divide", "multiply")
    work = np.dtype(np.float64) if o.dtype.kind in "iu" else o.dtype
    check_same_kind(first, np.result_type(work, 1.0), work)     # bool: NumPy's casting error
    f = _power_of_ten(abs(decimals))
    x = Tracer(materialize(o, work, o.shape) if o.node is None else cast(o.node, work))
    y = apply_ufunc(second, apply_ufunc("rint", apply_ufunc(first, x, f)), f)
    return Tracer(cast(y.node, o.dtype))


def _power_of_ten(n: int) -> float:
    """NumPy's ``power_of_ten`` (multiplyarray.c): exact up to 1e8, then repeated products by 10."""
    if n < 9:
        return float(10 ** n)
    ret = 1e9
    for _ in range(n - 9):
        ret *= 10.0
    return ret


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    o = operand(a, "argument of full_like")
    shp = tuple(np.atleast_1d(shape)) if shape is not None else o.shape
    dt = check_supported(dtype if dtype is not None else o.dtype, "full_like", loc())
    v = operand(fill_value, "fill value")
    return Tracer(materialize(v, dt, shp, "unsafe"))


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return full_like(a, 0, dtype, shape=shape)


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return full_like(a, 1, dtype, shape=shape)
