"""Scalar rules of the Numba-CUDA emitter (:mod:`kfuse.codegen.numba_cuda`): the device-helper
templates a kernel may pull in (``HELPERS``: floor-divide/remainder/fmod, logaddexp(2), integer
power, shifts, gcd/lcm, arg-reduction combine; the integer division, remainder, shifts and gcd/lcm
from :mod:`kfuse.codegen.int_helpers`), register/storage types, typed constants, and the
NumPy-semantics Python expressions for ufuncs, casts and stores."""
from __future__ import annotations

import math

import numpy as np

from ..errors import UnsupportedError
from . import kernel_ir as K
from .int_helpers import decorated, logaddexp_sources

# --------------------------------------------------------------------------- scalar rules

_STORE = {"bool": "uint8", "float16": "float16"}
_MATH1 = {"exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "cbrt", "sin", "cos", "tan",
          "sinh", "cosh", "tanh", "floor", "ceil", "trunc", "rint"}
_MATH1_RENAME = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
                 "arccosh": "acosh", "arctanh": "atanh"}
_CMP = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
        "greater_equal": ">="}

_HELPERS: dict[str, str] = {}


def _helper(name: str, src: str) -> None:
    _HELPERS[name] = src.strip("\n")


for _T, _f in (("float32", "f"), ("float64", "")):
    _helper(f"_floordiv_{_T}", f'''
@cuda.jit(device=True, inline=True)
def _floordiv_{_T}(a, b):
    """np.floor_divide for {_T} (npy_divmod)."""
    if b == 0:
        return np.{_T}(a / b)
    m = ld.fmod{_f}(a, b)
    d = np.{_T}((a - m) / b)
    if m != 0:
        if (b < 0) != (m < 0):
            d = np.{_T}(d - np.{_T}(1.0))
    if d != 0:
        fl = ld.floor{_f}(d)
        if d - fl > np.{_T}(0.5):
            fl = np.{_T}(fl + np.{_T}(1.0))
        return fl
    return ld.copysign{_f}(np.{_T}(0.0), np.{_T}(a / b))
''')
    _helper(f"_remainder_{_T}", f'''
@cuda.jit(device=True, inline=True)
def _remainder_{_T}(a, b):
    """np.remainder for {_T} (sign of the divisor)."""
    m = ld.fmod{_f}(a, b)
    if b == 0:
        return m
    if m != 0:
        if (b < 0) != (m < 0):
            m = np.{_T}(m + b)
        return m
    return ld.copysign{_f}(np.{_T}(0.0), b)
''')
    _helper(f"_fpow_{_T}", f'''
@cuda.jit(device=True, inline=True)
def _fpow_{_T}(a, b):
    """x ** 1 and x ** 2 exactly, as NumPy's libm pow gives them (libdevice's pow is within 2 ulp)."""
    if b == np.{_T}(1.0):
        return a
    if b == np.{_T}(2.0):
        return np.{_T}(a * a)
    return ld.pow{_f}(a, b)
''')
    for _name, _src in logaddexp_sources(_T, "@cuda.jit(device=True, inline=True)",
                                         lambda f, _f=_f: f"ld.{f}{_f}").items():
        _helper(_name, _src)
for _name, _src in decorated("@cuda.jit(device=True, inline=True)").items():
    _helper(_name, _src)
_helper("_log2_float64", '''
@cuda.jit(device=True, inline=True)
def _log2_float64(x):
    """log2, exact at powers of two as NumPy's libm: libdevice's is 1 ulp off at 362 of the 2098
    (log2(8.0) = 3 - 4e-16; a probe at commit 1e78006, H200 2026-11-25)."""
    r = ld.log2(x)
    k = ld.rint(r)
    if ld.fabs(r) < 2000.0 and ld.ldexp(1.0, np.int32(k)) == x:
        return k
    return r
''')
_helper("_ipow", '''
@cuda.jit(device=True, inline=True)
def _ipow(a, b, zero, one):
    """integer power by squaring, wrapping (negative exponents give 0)."""
    r = one
    if b < zero:
        return zero
    while b > zero:
        if (b & one) != zero:
            r = r * a
        a = a * a
        b = b >> one
    return r
''')
for _kind, _cmp in (("max", ">"), ("min", "<")):
    _helper(f"_arg{_kind}", f'''
@cuda.jit(device=True, inline=True)
def _arg{_kind}(av, ai, bv, bi):
    """combine two (value, position) pairs: first NaN wins, else the extreme, ties -> lower position;
    position < 0 marks an empty pair."""
    if ai < 0:
        return bv, bi
    if bi < 0:
        return av, ai
    an = av != av
    bn = bv != bv
    if an or bn:
        if an and bn:
            return (av, ai) if ai < bi else (bv, bi)
        return (av, ai) if an else (bv, bi)
    if av {_cmp} bv:
        return av, ai
    if bv {_cmp} av:
        return bv, bi
    return (av, ai) if ai < bi else (bv, bi)
''')


def _vt(dt: str) -> str:
    """Register type of a dtype (float16 values live in float32)."""
    return "float32" if dt == "float16" else dt


def _is_f(dt: str) -> bool:
    return dt.startswith("float")


def _lf(dt: str) -> str:
    """libdevice suffix: float16/float32 use the ``f`` functions."""
    return "" if dt == "float64" else "f"


def _const_value(value, dt: str) -> str:
    """A Python expression evaluating (at module load) to the exact typed constant."""
    if dt == "bool":
        return "np.bool_(True)" if value else "np.bool_(False)"
    if _is_f(dt):
        v = float(np.dtype(dt).type(value))
        if math.isnan(v):
            s = "np.nan"
        elif math.isinf(v):
            s = "np.inf" if v > 0 else "-np.inf"
        else:
            s = f"float.fromhex({float.hex(v)!r})"
        return f"np.{_vt(dt)}({s})"
    return f"np.{dt}({int(value)})"


# --------------------------------------------------------------------------- op rules


def store_value(v: str, vdt: str, dt: str) -> str:
    """The storage value of register ``v`` (of dtype ``vdt``) stored as ``dt``."""
    if dt == "bool":
        return f"np.uint8(1 if {v} else 0)" if vdt == "bool" else f"np.uint8(1 if {v} != 0 else 0)"
    return f"np.{dt}({v})" if vdt == dt or _is_f(dt) or _is_f(vdt) else to_int(v, dt)


def op_expr(st: K.Op, a: list[str], use, consts) -> str:
    """A Python expression with NumPy semantics for ``st`` on register names ``a``; ``use(name)``
    records (and returns) a helper from ``HELPERS``; ``consts`` maps var -> (value, dtype)."""
    op, dt = st.op, st.dtype
    t = st.arg_dtypes[0] if st.arg_dtypes else dt
    if op == "cast":
        return cast(a[0], t, dt)
    if op == "where":
        return f"{a[1]} if {a[0]} else {a[2]}"
    if op in _CMP:
        mixed = K.mixed_sign_compare(op, a, st.arg_dtypes)
        if mixed is not None:      # int64 vs uint64: exact, as NumPy (Numba would go through float64)
            return f"({mixed[1]} if {mixed[0]} < 0 else np.uint64({a[0]}) {_CMP[op]} np.uint64({a[1]}))"
        return f"{a[0]} {_CMP[op]} {a[1]}"
    if op in ("logical_and", "logical_or", "logical_xor"):
        sym = {"logical_and": "&", "logical_or": "|", "logical_xor": "!="}[op]
        return f"({a[0]} != 0) {sym} ({a[1]} != 0)"
    if op == "logical_not":
        return f"{a[0]} == 0"
    if op == "signbit":         # the sign bit, NaNs' too (float loops only: the tracer casts ints)
        return f"ld.signbit{'d' if t == 'float64' else 'f'}({a[0]}) != 0"
    if op in ("isnan", "isinf", "isfinite"):
        if not _is_f(t):
            return "True" if op == "isfinite" else "False"
        if op == "isnan":
            return f"{a[0]} != {a[0]}"
        inf = "INF64" if t == "float64" else "INF32"
        return f"ld.fabs{_lf(t)}({a[0]}) {'==' if op == 'isinf' else '<'} {inf}"
    if _is_f(t):
        return f"np.{_vt(dt)}({float_expr(op, t, a, st.args, use, consts)})"
    if t == "bool":
        return bool_expr(op, a)
    return to_int(int_expr(op, t, a, use), dt)


def float_expr(op: str, t: str, a, raw, use, consts) -> str:
    vt, f = _vt(t), _lf(t)
    ar = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/", "divide": "/"}
    if op in ar:
        return f"{a[0]} {ar[op]} {a[1]}"
    if op == "log2" and t == "float64":
        return f"{use('_log2_float64')}({a[0]})"
    if op in _MATH1 or op in _MATH1_RENAME:
        return f"ld.{_MATH1_RENAME.get(op, op)}{f}({a[0]})"
    if op == "power":
        c = consts.get(raw[1])
        if c is not None and float(c[0]) in (1.0, 2.0, 3.0):
            return " * ".join([a[0]] * int(float(c[0])))
        return f"{use('_fpow_' + vt)}({a[0]}, {a[1]})"
    if op == "floor_divide":
        return f"{use('_floordiv_' + vt)}({a[0]}, {a[1]})"
    if op == "remainder":
        return f"{use('_remainder_' + vt)}({a[0]}, {a[1]})"
    if op == "arctan2":
        return f"ld.atan2{f}({a[0]}, {a[1]})"
    if op in ("hypot", "copysign", "fmod"):        # fmod: C's, exact (sign of a[0])
        return f"ld.{op}{f}({a[0]}, {a[1]})"
    if op in ("logaddexp", "logaddexp2"):
        return f"{use(f'_{op}_{vt}')}({a[0]}, {a[1]})"
    if op == "ldexp":           # exact: libdevice scales in steps that round once
        # an int64 exponent saturates to int's range, as NumPy's int64 loop does
        return f"ld.ldexp{f}({a[0]}, np.int32(max(min({a[1]}, 2147483647), -2147483648)))"
    if op == "heaviside":       # npy_heaviside: NaN for NaN, h0 (a[1]) for +-0
        return (f"np.{vt}(np.nan) if {a[0]} != {a[0]} else ({a[1]} if {a[0]} == 0 else "
                f"(np.{vt}(0.0) if {a[0]} < 0 else np.{vt}(1.0)))")
    if op in ("maximum", "minimum"):
        # NaN propagates; equal operands (+0.0/-0.0): the second in NumPy's float32/float64
        # loops, the first in its float16 loop (npy_half_ge/le)
        cmp = (">" if op == "maximum" else "<") + ("=" if t == "float16" else "")
        return f"{a[0]} if ({a[0]} {cmp} {a[1]} or {a[0]} != {a[0]}) else {a[1]}"
    if op in ("fmax", "fmin"):
        return f"ld.{op}{f}({a[0]}, {a[1]})"
    if op == "negative":
        return f"-{a[0]}"
    if op == "positive":
        return a[0]
    if op == "absolute":
        return f"ld.fabs{f}({a[0]})"
    if op == "square":
        return f"{a[0]} * {a[0]}"
    if op == "reciprocal":
        return f"np.{vt}(1.0) / {a[0]}"
    if op == "sign":
        return (f"np.{vt}(1.0) if {a[0]} > 0 else (np.{vt}(-1.0) if {a[0]} < 0 "
                f"else {a[0]} * np.{vt}(0.0) + np.{vt}(0.0))")  # sign(-0.0) is +0.0, NaN stays
    raise UnsupportedError(f"kfuse: the numba-cuda backend has no rule for {op}({t})")


def bool_expr(op: str, a) -> str:
    if op in ("add", "maximum", "fmax", "bitwise_or", "logical_or"):
        return f"{a[0]} | {a[1]}"
    if op in ("multiply", "minimum", "fmin", "bitwise_and"):
        return f"{a[0]} & {a[1]}"
    if op in ("bitwise_xor", "not_equal"):
        return f"{a[0]} != {a[1]}"
    if op == "invert":
        return f"not {a[0]}"
    if op in ("positive", "absolute", "square", "rint", "floor", "ceil", "trunc"):
        return a[0]
    raise UnsupportedError(f"kfuse: the numba-cuda backend has no rule for {op}(bool)")


def int_expr(op: str, t: str, a, use) -> str:
    u = t.startswith("uint")
    w = "np.uint64" if u else "np.int64"
    x, y = f"{w}({a[0]})", (f"{w}({a[1]})" if len(a) > 1 else None)
    # Numba emits signed add/sub/mul with LLVM's nsw flag (overflow undefined: LLVM may assume
    # int64 x*x >= 0), so wrapping arithmetic runs in uint64 and is truncated to the result dtype
    ux, uy = f"np.uint64({a[0]})", (f"np.uint64({a[1]})" if len(a) > 1 else None)
    ar = {"add": "+", "subtract": "-", "multiply": "*"}
    if op in ar:
        return f"{ux} {ar[op]} {uy}"
    if op in ("true_divide", "divide"):
        return f"np.float64({a[0]}) / np.float64({a[1]})"
    if op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        return f"{x} {({'bitwise_and': '&', 'bitwise_or': '|', 'bitwise_xor': '^'})[op]} {y}"
    if op == "invert":
        return f"~{x}"
    if op == "negative":
        return f"np.uint64(0) - {ux}"
    if op in ("positive", "floor", "ceil", "trunc", "rint"):
        return a[0]
    if op == "absolute":
        return a[0] if u else f"{x} if {x} >= 0 else np.int64(np.uint64(0) - {ux})"
    if op == "square":
        return f"{ux} * {ux}"
    if op in ("maximum", "fmax"):
        return f"{a[0]} if {a[0]} >= {a[1]} else {a[1]}"
    if op in ("minimum", "fmin"):
        return f"{a[0]} if {a[0]} <= {a[1]} else {a[1]}"
    if op == "sign":
        return (f"1 if {a[0]} > 0 else 0" if u else
                f"1 if {a[0]} > 0 else (-1 if {a[0]} < 0 else 0)")
    if op == "floor_divide":
        return f"{use('_ufloordiv' if u else '_sfloordiv')}({x}, {y})"
    if op == "remainder":
        return f"{use('_uremainder' if u else '_sremainder')}({x}, {y})"
    if op == "fmod":
        return f"{use('_uremainder' if u else '_sfmod')}({x}, {y})"
    if op in ("gcd", "lcm", "bitwise_count"):   # of magnitudes, in uint64 (int_helpers)
        m = [f"np.uint64({v})" if u else f"{use('_uabs')}(np.int64({v}))" for v in a]
        if op == "bitwise_count":
            return f"ld.popcll(np.int64({m[0]}))"
        return f"{use('_' + op)}({m[0]}, {m[1]})"
    if op == "power":
        b = y if u else f"max({y}, 0)"
        return f"{use('_ipow')}({ux}, np.uint64({b}), np.uint64(0), np.uint64(1))"
    if op == "left_shift":
        return f"{use('_ulshift' if u else '_slshift')}({x}, {y})"
    if op == "right_shift":
        return f"{use('_urshift' if u else '_srshift')}({x}, {y})"
    if op == "reciprocal":
        return f"0 if {a[0]} == 0 else np.int64(1.0 / np.float64({a[0]}))"
    raise UnsupportedError(f"kfuse: the numba-cuda backend has no rule for {op}({t})")


def cast(a: str, src: str, dst: str) -> str:
    if src == dst:
        return a
    if src == "float16" and dst != "float16":   # an f16 value (unrounded in f32) rounds first
        a = f"np.float32(np.float16({a}))"
        if dst == "float32":
            return a
    if dst == "bool":
        return f"{a} != 0"
    if src == "bool":
        one, zero = ("1.0", "0.0") if _is_f(dst) else ("1", "0")
        return f"np.{_vt(dst)}({one} if {a} else {zero})"
    if dst == "float16":              # round once to float16 precision (as astype)
        return f"np.float32(np.float16({a if _is_f(src) else f'np.float64({a})'}))"
    return f"np.{_vt(dst)}({a})" if _is_f(dst) or _is_f(src) else to_int(a, dst)


NARROW_INTS = ("int8", "int16", "uint8", "uint16")


def to_int(expr: str, dt: str) -> str:
    """Integer ``expr`` wrapped to integer dtype ``dt``; 8- and 16-bit types through the asm
    intrinsics of :mod:`kfuse.codegen.numba_cuda_narrow` (a plain ``np.int16(...)`` lets NVVM and
    ptxas lose the wrap)."""
    return f"narrow_{dt}({expr})" if dt in NARROW_INTS else f"np.{dt}({expr})"
