"""NumPy functions on the parts of numbers: ``np.real``/``np.imag``/``np.angle`` of complex arrays
(the ``REAL``/``IMAG``/``ANGLE`` ops; ``np.isreal``, ``np.iscomplex`` and the ``*obj`` tests) and, composed of traced ufuncs with NumPy's values exactly,
of real arrays (the array itself; read-only zeros; ``arctan2(0, x)``), ``np.modf`` (``x - trunc(x)`` with NumPy's signs), ``np.frexp`` (the exponent
from ``log2`` corrected by one step, the mantissa by an exact ``ldexp``), ``np.nextafter`` (one
spacing of ``x`` towards ``y``, the spacing from ``frexp``) and ``np.i0`` (NumPy's own Chebyshev
series, evaluated by NumPy's code on tracers).
"""
from __future__ import annotations

import numpy as np

from ..ir import dtypes
from . import movement as mv
from ..ir.ops import Op
from ..errors import at
from .core import Tracer, as_node, const_node, loc, mk, operand, unsupported
from .elementwise import apply_ufunc
from .mutation import link_view, setitem


def _strong(x, what: str) -> Tracer:
    """``np.asanyarray(x)`` of a traced value: a weak Python scalar becomes its default dtype."""
    return Tracer(as_node(x, what))


def _part(op: Op, t: Tracer) -> Tracer:
    """A part of complex ``t`` (``REAL``/``IMAG``/``ANGLE``): its float dtype, weak if ``t`` is."""
    dt = dtypes.real_dtype(t.dtype)
    return Tracer(mk(op, dt, t.shape, [t.node]), float if t.weak is not None else None)


def make_complex(re: Tracer, im: Tracer) -> Tracer:
    """The complex array of the parts ``re`` and ``im`` (one float32/float64 dtype; broadcast),
    exactly (``re + 1j * im`` is NaN where ``im`` is infinite)."""
    re, im = np.broadcast_arrays(re, im)
    dt = np.result_type(re.dtype, np.complex64)
    return Tracer(mk(Op.COMPLEX, dt, re.shape, [re.node, im.node]))


def real(val):
    """``np.real`` of a complex array is its real part, a view (a write into it writes the
    array's real parts); of a real array the array itself (``ndarray.real`` returns ``self``)."""
    t = val if isinstance(val, Tracer) else _strong(val, "argument of np.real")
    return link_view(_part(Op.REAL, t), t) if dtypes.is_complex(t.dtype) else t


def set_real(t: Tracer, value) -> None:
    """``z.real = value``: the real parts of complex ``z`` (of a real array, the array itself)."""
    setitem(real(t), Ellipsis, value)


def set_imag(t: Tracer, value) -> None:
    """``z.imag = value``: the imaginary parts of complex ``z``; a real array has none (NumPy's
    TypeError)."""
    if not dtypes.is_complex(t.dtype):
        raise TypeError(f"array does not have imaginary part to set{at(loc())}")
    setitem(imag(t), Ellipsis, value)


def imag(val):
    """``np.imag`` of a complex array is its imaginary part, a view as :func:`real`'s; of a real
    array a new read-only array of zeros of its dtype and shape."""
    t = val if isinstance(val, Tracer) else _strong(val, "argument of np.imag")
    if dtypes.is_complex(t.dtype):
        return link_view(_part(Op.IMAG, t), t)
    zero = Tracer(const_node(0, t.dtype), t.weak)
    if t.weak is not None or not t.ndim:
        return zero
    return link_view(Tracer(mv.broadcast_to(zero, t.shape).node), zero)   # read-only, as NumPy's


def angle(z, deg=False):
    """``np.angle``: ``arctan2(imag, real)`` of a complex array (the ``ANGLE`` op), of a real one
    ``arctan2(0, z)`` (0 or pi; float64 for ints), in degrees with ``deg``, as NumPy computes it."""
    t = _strong(z, "argument of np.angle")
    a = _part(Op.ANGLE, t) if dtypes.is_complex(t.dtype) else apply_ufunc("arctan2", 0, t)
    if deg:
        a = a * (180 / np.pi)
    return a


def iscomplexobj(x) -> bool:
    """``np.iscomplexobj``: the dtype's kind (known while tracing)."""
    return dtypes.is_complex(_strong(x, "argument of np.iscomplexobj").dtype)


def isrealobj(x) -> bool:
    return not iscomplexobj(x)


def isreal(x):
    """``np.isreal``: ``imag(x) == 0``."""
    return imag(x) == 0


def iscomplex(x):
    """``np.iscomplex``: ``x.imag != 0`` of a complex array, else False everywhere."""
    t = _strong(x, "argument of np.iscomplex")
    return imag(t) != 0 if dtypes.is_complex(t.dtype) else np.zeros_like(t, dtype=bool)


def _loop_input(name: str, x) -> Tracer:
    """``x`` cast to the input dtype of NumPy's loop of the one-input ufunc ``name``."""
    o = operand(x, f"argument of np.{name}")
    dt = dtypes.resolve(getattr(np, name), [o.key])[0]
    t = Tracer(as_node(x, f"argument of np.{name}"))
    return t.astype(dt) if t.dtype != dt else t


def modf(x):
    """``np.modf``: ``(x - trunc(x), trunc(x))``, the fraction with ``x``'s sign (``-0.0`` for
    ``-2.0``) and ``±0`` for ``±inf`` (``x - trunc(x)`` is exact)."""
    t = _loop_input("modf", x)
    whole = np.trunc(t)
    frac = np.copysign(t - whole, t)
    zero = t.dtype.type(0)
    return np.where(np.isinf(t), np.copysign(zero, t), frac), whole


def _frexp_parts(t: Tracer) -> tuple[Tracer, Tracer]:
    """The mantissa and int32 exponent of the finite non-zero elements of ``t`` (others: of 1)."""
    ordinary = np.isfinite(t) & (t != 0)
    safe = np.where(ordinary, t, t.dtype.type(1))
    # floor(log2|x|) is the exponent or one off near a power of two (log2 is rounded): the
    # mantissa ldexp(x, -e) is exact, and one halving or doubling puts it in [0.5, 1)
    e = (np.floor(np.log2(np.abs(safe))) + 1).astype(np.int32)
    m = np.ldexp(safe, -e)
    high, low = np.abs(m) >= 1, np.abs(m) < 0.5
    m = np.where(high, m * t.dtype.type(0.5), np.where(low, m * t.dtype.type(2), m))
    e = e + high.astype(np.int32) - low.astype(np.int32)
    return m, e


def frexp(x):
    """``np.frexp``: ``x = m * 2**e`` with ``0.5 <= |m| < 1``; zeros, infinities and NaN give
    ``(x, 0)``."""
    t = _loop_input("frexp", x)
    m, e = _frexp_parts(t)
    ordinary = np.isfinite(t) & (t != 0)
    edt = dtypes.resolve(np.frexp, [t.dtype])[-1]
    return np.where(ordinary, m, t), np.where(ordinary, e, np.int32(0)).astype(edt)


def nextafter(x1, x2):
    """``np.nextafter``: ``x1`` plus one spacing towards ``x2`` (the spacing of ``x1``'s binade, half
    that below a power of two moving towards zero, at least the smallest subnormal); ``x2`` where
    they are equal, NaN where either is."""
    o1, o2 = (operand(v, "argument of np.nextafter") for v in (x1, x2))
    dt = dtypes.resolve(np.nextafter, [o1.key, o2.key])[0]
    a, b = (Tracer(as_node(v)).astype(dt) for v in (x1, x2))
    a, b = np.broadcast_arrays(a, b)
    info = np.finfo(dt)
    m, e = _frexp_parts(a)
    up = b > a                                  # the direction of the step
    away = up == (a > 0)                        # away from zero (a == 0: away whatever b is)
    bits = info.nmant + 1
    power = np.abs(m) == dt.type(0.5)
    exp = e - bits - (power & ~away).astype(np.int32)
    step = np.maximum(np.ldexp(dt.type(1), exp), dt.type(info.smallest_subnormal))
    step = np.where(a == 0, dt.type(info.smallest_subnormal), step)
    near = np.where(up, a + step, a - step)
    near = np.where(near == 0, np.copysign(dt.type(0), a), near)    # (-tiny + tiny is +0.0)
    near = np.where(np.isinf(a), np.copysign(dt.type(info.max), a), near)
    near = np.where(a == b, b, near)
    return np.where(np.isnan(a) | np.isnan(b), dt.type(np.nan), near)


def i0(x):
    """``np.i0``: NumPy's own piecewise Chebyshev series (``_i0_1`` for ``|x| <= 8``, ``_i0_2``
    above), run on the traced array: NumPy's operations in NumPy's order."""
    try:
        from numpy.lib import _function_base_impl as impl
        series = impl._i0_1, impl._i0_2
    except (ImportError, AttributeError):
        raise unsupported("np.i0", "this NumPy has no _i0_1/_i0_2 to follow") from None
    t = _strong(x, "argument of np.i0")
    if t.dtype.kind != "f":
        t = t.astype(np.float64)
    t = np.abs(t)
    return np.where(t <= 8.0, series[0](t), series[1](t))


UFUNCS = {"modf": modf, "frexp": frexp, "nextafter": nextafter}
