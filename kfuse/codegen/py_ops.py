"""The one renderer of NumPy-semantics op expressions in the Python dialects: the CPU emitter's
Numba ``njit`` code and the Numba-CUDA emitter's ``cuda.jit`` code. :class:`PyOps` holds the op
table and every rule they share (comparisons of mixed signs, logical ops, NaN rules of
maximum/minimum, sign, heaviside, ldexp's saturated exponent, wrapping integer arithmetic in
uint64, the integer helpers of :mod:`kfuse.codegen.int_helpers`, the expansions of
:mod:`kfuse.codegen.decompose`: heaviside, sign, int64-uint64 comparisons); a dialect (``cpu.CpuOps``,
``numba_cuda_ops.CudaOps``) supplies the math namespace (``np.exp`` / ``ld.expf``), how a result
is narrowed to its dtype, casts, and the few ops it renders its own way (:meth:`PyOps.special`).

Numba emits signed add/sub/mul with LLVM's nsw flag (overflow undefined: LLVM may assume int64
``x*x >= 0``), so wrapping integer arithmetic runs in uint64 and is narrowed to the result dtype.
"""
from __future__ import annotations

import math

import numpy as np

from . import kernel_ir as K
from .decompose import EXPANSIONS, inline

CMP = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
       "greater_equal": ">="}
ARITH = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/", "divide": "/"}
BITS = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}
LOGICAL = {"logical_and": "&", "logical_or": "|", "logical_xor": "!="}
# float math functions: ufunc -> C/libdevice name (a dialect spells it: np.<ufunc>, ld.<name>f)
MATH = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "log10": "log10", "log1p": "log1p",
        "expm1": "expm1", "sqrt": "sqrt", "cbrt": "cbrt", "sin": "sin", "cos": "cos", "tan": "tan",
        "arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh", "cosh": "cosh",
        "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "floor": "floor",
        "ceil": "ceil", "trunc": "trunc", "rint": "rint", "absolute": "fabs",
        # binary; fmod is C's (exact, the sign of the dividend)
        "arctan2": "atan2", "hypot": "hypot", "copysign": "copysign", "fmod": "fmod", "ldexp": "ldexp",
        "fmax": "fmax", "fmin": "fmin"}
# bool ops (on Python bools) and the integer ops of one expression: x, y the operands as int64
# (uint64 for unsigned), ux, uy as uint64, where arithmetic wraps (module docstring)
_BOOL = {**dict.fromkeys(("add", "maximum", "fmax", "bitwise_or", "logical_or"), "{0} | {1}"),
         **dict.fromkeys(("multiply", "minimum", "fmin", "bitwise_and"), "{0} & {1}"),
         "bitwise_xor": "{0} != {1}", "invert": "not {0}",
         **dict.fromkeys(("positive", "absolute", "square", "rint", "floor", "ceil", "trunc"), "{0}")}
_INT = {**{op: f"{{ux}} {ARITH[op]} {{uy}}" for op in ("add", "subtract", "multiply")},
        **dict.fromkeys(("true_divide", "divide"), "np.float64({a0}) / np.float64({a1})"),
        **{op: f"{{x}} {sym} {{y}}" for op, sym in BITS.items()},
        "invert": "~{x}", "negative": "np.uint64(0) - {ux}", "square": "{ux} * {ux}",
        **dict.fromkeys(("positive", "floor", "ceil", "trunc", "rint"), "{a0}"),
        **dict.fromkeys(("maximum", "fmax"), "{a0} if {a0} >= {a1} else {a1}"),
        **dict.fromkeys(("minimum", "fmin"), "{a0} if {a0} <= {a1} else {a1}"),
        "reciprocal": "0 if {a0} == 0 else np.int64(1.0 / np.float64({a0}))"}


def vt(dt: str) -> str:
    """The register type of a dtype (float16 values live in float32)."""
    return "float32" if dt == "float16" else dt


def is_float(dt: str) -> bool:
    return dt.startswith("float")


def literal(value, dtype: str) -> str:
    """A constant of ``dtype`` as a Python expression (float16: its float32 register value; a
    complex one from its parts)."""
    if dtype.startswith("complex"):
        part = "float32" if dtype == "complex64" else "float64"
        c = complex(value)
        return f"np.{dtype}(complex({literal(c.real, part)}, {literal(c.imag, part)}))"
    if dtype == "bool":
        return "True" if value else "False"
    if is_float(dtype):
        v = float(value)
        if dtype == "float16":
            v = float(np.float16(v))
        if math.isnan(v):
            s = "np.nan"
        elif math.isinf(v):
            s = "np.inf" if v > 0 else "-np.inf"
        else:
            s = repr(v)
        return f"np.{vt(dtype)}({s})"
    return f"np.{dtype}({int(value)})"


class PyOps:
    """NumPy-semantics expressions of :class:`~kfuse.codegen.kernel_ir.Op` statements in Numba's
    Python. ``use(name)`` records a helper the kernel needs and returns its name."""

    backend = ""                    # the emitter, in error messages
    native: frozenset = frozenset()     # ops of decompose.EXPANSIONS the dialect renders itself

    def __init__(self, use):
        self.use = use

    # -- the dialect: templates and methods a subclass gives -------------------------------------
    # FN: a float math function (fields: np, NumPy's name; c, C's; f, "f" below float64); ISINF:
    # isinf/isfinite of {a} (op, cmp "=="/"<", inf, f); SIGNBIT ({a}, d: "d" for float64 else "f");
    # POPCOUNT: the set bits of uint64 {m}, through helper POPCOUNT_HELPER where there is one.
    # Methods: cast(a, src, dst), float_result(expr, dt) and int_result(expr, dt): a value as a
    # register of dt (ints wrapped to it).
    FN = ISINF = SIGNBIT = POPCOUNT = POPCOUNT_HELPER = ""
    NP_NAME = {"absolute": "abs"}           # NumPy's spelling where it is not the ufunc's name

    def _fields(self, t: str) -> dict:
        f64 = t == "float64"
        return {"f": "" if f64 else "f", "d": "d" if f64 else "f", "inf": "INF64" if f64 else "INF32"}

    def fn(self, op: str, t: str) -> str:
        return self.FN.format(np=self.NP_NAME.get(op, op), c=MATH[op], **self._fields(t))

    def isinf(self, op: str, t: str, a: str) -> str:
        return self.ISINF.format(op=op, a=a, cmp="==" if op == "isinf" else "<", **self._fields(t))

    def signbit(self, t: str, a: str) -> str:
        return self.SIGNBIT.format(a=a, **self._fields(t))

    def popcount(self, m: str) -> str:
        if self.POPCOUNT_HELPER:
            self.use(self.POPCOUNT_HELPER)
        return self.POPCOUNT.format(m=m)

    def special(self, op: str, t: str, a) -> str | None:
        """The dialect's own rendering of float ``op`` (a faster or exact helper), else None."""
        return None

    def complex_expr(self, op: str, t: str, dt: str, a) -> str:
        """``op`` on complex operands of dtype ``t`` (the dialect's own: ``cpu_complex``)."""
        raise self.error(op, t)

    def error(self, op: str, t: str) -> Exception:
        return NotImplementedError(f"kfuse {self.backend}: no rule for {op}({t})")

    # -- one op ------------------------------------------------------------------------------
    def op_expr(self, st: K.Op, a: list[str]) -> str:
        """A Python expression with NumPy semantics for ``st`` on register names ``a``."""
        op, dt = st.op, st.dtype
        t = st.arg_dtypes[0] if st.arg_dtypes else dt
        if op == "cast":
            return self.cast(a[0], t, dt)
        if op == "where":
            return f"{a[1]} if {a[0]} else {a[2]}"
        if t.startswith("complex"):
            return self.complex_expr(op, t, dt, a)
        if op in EXPANSIONS and op not in self.native:
            e = inline(op, dt, a, st.arg_dtypes, self.op_expr, literal)
            if e is not None:
                return e
        if op in CMP:
            return f"{a[0]} {CMP[op]} {a[1]}"
        if op in LOGICAL:
            return f"({a[0]} != 0) {LOGICAL[op]} ({a[1]} != 0)"
        if op == "logical_not":
            return f"{a[0]} == 0"
        if op in ("isnan", "isinf", "isfinite"):
            if not is_float(t):
                return "True" if op == "isfinite" else "False"
            return f"{a[0]} != {a[0]}" if op == "isnan" else self.isinf(op, t, a[0])
        if op == "signbit":         # the sign bit, NaNs' too (float loops only: the tracer casts ints)
            return self.signbit(t, a[0])
        if is_float(t):
            return self.float_result(self.float_expr(op, t, a), dt)
        if t == "bool":
            return self.bool_expr(op, a)
        return self.int_result(self.int_expr(op, t, a), dt)

    def float_expr(self, op: str, t: str, a) -> str:
        v = vt(t)
        if op in ARITH:
            return f"{a[0]} {ARITH[op]} {a[1]}"
        own = self.special(op, t, a)
        if own is not None:
            return own
        if op == "ldexp":           # exact; an int64 exponent saturates to C int's range, as NumPy
            return f"{self.fn(op, t)}({a[0]}, np.int32(max(min({a[1]}, 2147483647), -2147483648)))"
        if op in MATH:
            return f"{self.fn(op, t)}({', '.join(a)})"
        if op in _FLOAT_HELPER:     # int_helpers.float_sources
            return f"{self.use(f'{_FLOAT_HELPER[op]}_{v}')}({a[0]}, {a[1]})"
        if op in ("maximum", "minimum"):
            # NaN propagates; ties (+0.0/-0.0): NumPy's float32/64 loops keep the second operand,
            # its float16 loop (npy_half_ge/le) the first
            cmp = (">" if op == "maximum" else "<") + ("=" if t == "float16" else "")
            return f"{a[0]} if ({a[0]} {cmp} {a[1]} or {a[0]} != {a[0]}) else {a[1]}"
        if op == "negative":
            return f"-{a[0]}"
        if op == "positive":
            return a[0]
        if op == "square":
            return f"{a[0]} * {a[0]}"
        if op == "reciprocal":
            return f"np.{v}(1.0) / {a[0]}"
        raise self.error(op, t)

    def bool_expr(self, op: str, a) -> str:
        if op not in _BOOL:
            raise self.error(op, "bool")
        return _BOOL[op].format(*a)

    def int_expr(self, op: str, t: str, a) -> str:
        u = t.startswith("uint")
        w = "np.uint64" if u else "np.int64"
        x, y = f"{w}({a[0]})", (f"{w}({a[1]})" if len(a) > 1 else None)
        ux, uy = f"np.uint64({a[0]})", (f"np.uint64({a[1]})" if len(a) > 1 else None)
        if op in _INT:
            return _INT[op].format(x=x, y=y, ux=ux, uy=uy, a0=a[0], a1=a[-1])
        if op == "absolute":
            return a[0] if u else f"{x} if {x} >= 0 else np.int64(np.uint64(0) - {ux})"
        if op in ("floor_divide", "remainder", "fmod", "left_shift", "right_shift"):
            return f"{self.use(_INT_HELPER[op][u])}({x}, {y})"
        if op in ("gcd", "lcm", "bitwise_count"):   # of magnitudes, in uint64 (int_helpers)
            m = [f"np.uint64({v})" if u else f"{self.use('_uabs')}(np.int64({v}))" for v in a]
            return self.popcount(m[0]) if op == "bitwise_count" else f"{self.use('_' + op)}({m[0]}, {m[1]})"
        if op == "power":           # a negative exponent gives 1 (NumPy raises)
            b = y if u else f"max({y}, 0)"
            return f"{self.use('_ipow')}({ux}, np.uint64({b}), np.uint64(0), np.uint64(1))"
        raise self.error(op, t)


_FLOAT_HELPER = {"floor_divide": "_floordiv", "remainder": "_remainder", "logaddexp": "_logaddexp",
                 "logaddexp2": "_logaddexp2"}
# op -> (signed helper, unsigned helper) of int_helpers; unsigned fmod is the remainder
_INT_HELPER = {"floor_divide": ("_sfloordiv", "_ufloordiv"), "remainder": ("_sremainder", "_uremainder"),
               "fmod": ("_sfmod", "_uremainder"), "left_shift": ("_slshift", "_ulshift"),
               "right_shift": ("_srshift", "_urshift")}
