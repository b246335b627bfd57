"""Scalar rules of the Numba-CUDA emitter (:mod:`kfuse.codegen.numba_cuda`): the device-helper
templates a kernel may pull in (``HELPERS``: those of :mod:`kfuse.codegen.int_helpers` as device
functions, and the GPU's own: pow exact at 1 and 2, log2 exact at powers of two, the arg-reduction
combine), register/storage types, typed constants, casts and stores, and :class:`CudaOps`, the
Numba-CUDA dialect of the shared op renderer :mod:`kfuse.codegen.py_ops`."""
from __future__ import annotations

import math

import numpy as np

from ..errors import UnsupportedError
from . import kernel_ir as K
from . import philox
from . import numba_cuda_complex as ncx
from .int_helpers import decorated, float_sources
from .py_ops import PyOps

# --------------------------------------------------------------------------- scalar rules

_STORE = {"bool": "uint8", "float16": "float16"}

_HELPERS: dict[str, str] = {}


def _helper(name: str, src: str) -> None:
    _HELPERS[name] = src.strip("\n")


_helper(philox.HELPER, philox.python_source("@cuda.jit(device=True, inline=True)"))

_CUBE = {   # the body of x ** 3 in _fpow_<T>, indented for it (codegen.cuda_ops's kf_cubef/kf_cube)
    "float32": """        x = np.float64(a)
        xx = x * x
        p = xx * x
        e = cuda.fma(xx, x, -p)
        f = np.float32(p)
        o = 2.0 * p - np.float64(f)
        if e != 0.0 and abs(o) < np.inf and o != np.float64(f) and np.float64(np.float32(o)) == o \\
                and (e > 0.0) == (p > np.float64(f)):
            f = np.float32(o)
        return f""",
    "float64": """        xx = a * a
        p = xx * a
        if np.inf > abs(p) >= 2.0 ** -900:
            return p + cuda.fma(cuda.fma(a, a, -xx), a, cuda.fma(xx, a, -p))""",
}

for _T, _f in (("float32", "f"), ("float64", "")):
    for _name, _src in float_sources(_T, "@cuda.jit(device=True, inline=True)",
                                     lambda f, _f=_f: f"ld.{f}{_f}").items():
        _helper(_name, _src)
    _helper(f"_fpow_{_T}", f'''
@cuda.jit(device=True, inline=True)
def _fpow_{_T}(a, b):
    """x ** 1 and x ** 2 exactly, x ** 3 rounded once from the exact cube, as NumPy's libm pow
    gives them (libdevice's pow is within 2 ulp); the cube as CUDA C's kf_cubef/kf_cube."""
    if b == np.{_T}(1.0):
        return a
    if b == np.{_T}(2.0):
        return np.{_T}(a * a)
    if b == np.{_T}(3.0):
{_CUBE[_T]}
    return ld.pow{_f}(a, b)
''')
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
_HELPERS.update({_n: _s.strip("\n") for _n, _s in ncx.sources("cuda").items()})
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

# maxsumexp (codegen.online_softmax): a running float32 maximum m and the sum s of exp(y - m) at it,
# CUDA C's kf_mse_step/kf_mse_comb (cuda_ops): the sum rescaled by exp(m_old - m_new) when the
# maximum grows (1 where they are equal, as for -inf before any finite value), a NaN sticking; each
# term through libdevice's exp2f (ex2.approx.f32, as CUDA C's ex2.approx: 2 ulp, a multiply and one
# MUFU op where expf is about ten instructions a term)
_helper("_mse_step", '''
@cuda.jit(device=True, inline=True)
def _mse_step(m, s, y):
    """(m, s) after term y."""
    if y > m or y != y:
        s = s * (np.float32(1.0) if m == y else ld.exp2f((m - y) * np.float32(1.4426950408889634)))
        m = y
    return m, s + (np.float32(1.0) if y == m else ld.exp2f((y - m) * np.float32(1.4426950408889634)))
''')
_helper("_mse_comb", '''
@cuda.jit(device=True, inline=True)
def _mse_comb(am, a_s, bm, bs):
    """Two partial (maximum, sum) states as one."""
    if bm > am or bm != bm:
        am, a_s, bm, bs = bm, bs, am, a_s
    return am, a_s + bs * (np.float32(1.0) if bm == am else ld.exp2f((bm - am) * np.float32(1.4426950408889634)))
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
    if dt in ncx.PARTS:
        return ncx.literal(value, dt, _const_value)
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
    if dt in ncx.PARTS or vdt in ncx.PARTS:
        return cast(v, vdt, dt) if vdt != dt else f"np.{dt}({v})"
    if dt == "bool":
        return f"np.uint8(1 if {v} else 0)" if vdt == "bool" else f"np.uint8(1 if {v} != 0 else 0)"
    return f"np.{dt}({v})" if vdt == dt or _is_f(dt) or _is_f(vdt) else to_int(v, dt)


class CudaOps(PyOps):
    """The Numba-CUDA dialect of :class:`~kfuse.codegen.py_ops.PyOps`: libdevice math (``ld.expf``),
    results narrowed by :func:`to_int`, float16 values in float32 (the emitter rounds each result)."""

    backend = "numba-cuda"
    FN, ISINF = "ld.{c}{f}", "ld.fabs{f}({a}) {cmp} {inf}"
    SIGNBIT, POPCOUNT = "ld.signbit{d}({a}) != 0", "ld.popcll(np.int64({m}))"

    def cast(self, a: str, src: str, dst: str) -> str:
        return cast(a, src, dst)

    def op_expr(self, st: K.Op, a: list[str]) -> str:
        t = st.arg_dtypes[0] if st.arg_dtypes else st.dtype
        if st.op == "complex":      # the number of its parts (real, imag), exactly
            return f"np.{st.dtype}(complex({a[0]}, {a[1]}))"
        if st.op not in ("cast", "where") and t in ncx.PARTS:
            return self.complex_expr(st.op, t, st.dtype, a)
        return super().op_expr(st, a)

    def complex_expr(self, op: str, t: str, dt: str, a) -> str:
        """``op`` on complex operands (:mod:`kfuse.codegen.numba_cuda_complex`)."""
        return ncx.expr(op, t, a, self.use)

    def float_result(self, expr: str, dt: str) -> str:
        return f"np.{_vt(dt)}({expr})"

    def int_result(self, expr: str, dt: str) -> str:
        return to_int(expr, dt)

    def special(self, op: str, t: str, a) -> str | None:
        if op == "log2" and t == "float64":
            return f"{self.use('_log2_float64')}({a[0]})"
        if op == "power":       # a constant exponent: codegen.decompose (ir.power's policy)
            return f"{self.use('_fpow_' + _vt(t))}({a[0]}, {a[1]})"
        return None

    def error(self, op: str, t: str) -> Exception:
        return UnsupportedError(f"kfuse: the numba-cuda backend has no rule for {op}({t})")


def op_expr(st: K.Op, a: list[str], use, consts=None) -> str:
    """A Python expression with NumPy semantics for ``st`` on register names ``a``; ``use(name)``
    records (and returns) a helper from ``HELPERS`` (``consts``: unused, constant exponents are
    :mod:`kfuse.codegen.decompose`'s)."""
    return CudaOps(use).op_expr(st, a)


def cast(a: str, src: str, dst: str) -> str:
    if src == dst:
        return a
    if src in ncx.PARTS or dst in ncx.PARTS:
        return ncx.cast(a, src, dst, cast)
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
