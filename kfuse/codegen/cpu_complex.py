"""Complex64/complex128 ops on the CPU (Numba's native complex scalars), with NumPy's values.

:func:`expr` renders one op whose inputs are complex (:class:`~kfuse.codegen.cpu.CpuOps` calls it);
``HELPERS`` holds the sources of the Numba helpers it calls (``cpu_helpers`` emits them with the
others), one per part dtype where a constant's type matters. NumPy's complex loops, followed here:

* ``divide`` and ``reciprocal``: Smith's algorithm as NumPy's loops write it (a zero divisor gives
  ``x / 0`` per part: a complex inf or NaN); ``power``: ``npy_cpow`` (``z ** 0`` is 1, ``0 ** w``
  is 0 for ``Re w > 0`` else NaN, an integer exponent within +-100 by repeated squaring as
  ``cmul``, a negative one then divided into 1, any other ``exp(w * log(z))`` as glibc's cpow);
* ``exp2``/``log2``/``log10``/``expm1``/``log1p``: NumPy's own formulas (``funcs.inc.src``);
  ``log``/``sqrt``: Numba's (CPython's cmath, Annex G's special values, as npymath's); ``exp`` and
  the trigonometric and hyperbolic functions: :mod:`kfuse.codegen.cpu_cmath`;
* ``sign``: ``z / |z|`` with NumPy 2's rules at NaN, infinities and zero; ``absolute``: ``hypot``;
* orderings, ``maximum``/``minimum``/``fmax``/``fmin``: lexicographic with NumPy's NaN rules
  (``CLT``: ``xr < yr`` counts only when neither imaginary part is NaN);
* ``isnan``/``isinf``: of either part; ``isfinite``: of both; ``rint``: of each part.

``multiply`` (and ``square``, and so ``x ** 2``) is NumPy's SIMD loop: ``re = fma(a, c, -(b d))``,
``im = fma(a, d, b c)`` (bit for bit, overflows included: ``(1e30+1e30j)**2`` is ``-inf+inf j`` in
complex64); ``npy_cpow``'s own products round each term (``cmul``).
"""
from __future__ import annotations

from . import cpu_cmath

HELPERS: dict[str, tuple] = dict(cpu_cmath.HELPERS)
_PARTS = {"complex64": "float32", "complex128": "float64"}
# the C constants NumPy's formulas use, as Python literals of their float64 value (float32
# helpers round them to float32, as NPY_LOGE2f and its kin are)
_LOGE2, _LOG2E, _LOG10E = "0.6931471805599453", "1.4426950408889634", "0.4342944819032518"


def _helper(name: str, src: str, deps: tuple = ()) -> None:
    HELPERS[name] = (src.strip("\n"), deps)


_NJIT = '@numba.njit(error_model="numpy")'
_helper("_fma", '''
from numba.extending import intrinsic as _intrinsic


@_intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c rounded once (LLVM's fma: the hardware's where it has one)."""
    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return a(a, b, c), codegen
''')
_helper("_cisnan", f'''
{_NJIT}
def _cisnan(a):
    return np.isnan(a.real) or np.isnan(a.imag)
''')
for _name, _cmp in (("_clt", "<"), ("_cle", "<="), ("_cgt", ">"), ("_cge", ">=")):
    _strict = _cmp[0]
    _helper(_name, f'''
{_NJIT}
def {_name}(a, b):
    """NumPy's lexicographic complex {_cmp} (C{_name[2:].upper()} of loops.c.src)."""
    return ((a.real {_strict} b.real and not np.isnan(a.imag) and not np.isnan(b.imag))
            or (a.real == b.real and a.imag {_cmp} b.imag))
''')
for _name, _cmp in (("_cmaximum", "_cge"), ("_cminimum", "_cle")):
    _helper(_name, f'''
{_NJIT}
def {_name}(a, b):
    """np.{_name[2:]} of complex: a NaN (either part) of the first operand or the first when
    {_cmp}(a, b), else the second (a NaN of the second propagates: no comparison holds)."""
    return a if (_cisnan(a) or {_cmp}(a, b)) else b
''', ("_cisnan", _cmp))
for _name, _cmp in (("_cfmax", "_cge"), ("_cfmin", "_cle")):
    _helper(_name, f'''
{_NJIT}
def {_name}(a, b):
    """np.{_name[2:]} of complex: the first operand when the second is NaN or {_cmp}(a, b)."""
    return a if (_cisnan(b) or {_cmp}(a, b)) else b
''', ("_cisnan", _cmp))

_helper("_cbox", f'''
{_NJIT}
def _cbox(v):
    """__muldc3's box: an infinity as +-1, any other value as +-0 (NaN's sign kept)."""
    return np.copysign(1.0 if np.isinf(v) else 0.0, v)
''')
_helper("_cunnan", f'''
{_NJIT}
def _cunnan(v):
    """__muldc3's NaN as a zero of its sign, any other value itself."""
    return np.copysign(0.0, v) if np.isnan(v) else v
''')
for _C, _T in _PARTS.items():
    _helper(f"_cdiv_{_C}", f'''
{_NJIT}
def _cdiv_{_C}(a, b):
    """NumPy's complex divide (Smith's algorithm; a zero divisor divides each part by |0|)."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    abr, abi = np.abs(br), np.abs(bi)
    if abr >= abi:
        if abr == 0 and abi == 0:
            return np.{_C}(complex(ar / abr, ai / abr))
        rat = bi / br
        scl = np.{_T}(1.0) / (br + bi * rat)
        return np.{_C}(complex((ar + ai * rat) * scl, (ai - ar * rat) * scl))
    rat = br / bi
    scl = np.{_T}(1.0) / (bi + br * rat)
    return np.{_C}(complex((ar * rat + ai) * scl, (ai * rat - ar) * scl))
''')
    _helper(f"_crecip_{_C}", f'''
{_NJIT}
def _crecip_{_C}(a):
    """NumPy's complex reciprocal loop."""
    ar, ai = a.real, a.imag
    if np.abs(ai) <= np.abs(ar):
        r = ai / ar
        d = ar + ai * r
        return np.{_C}(complex(np.{_T}(1.0) / d, -r / d))
    r = ar / ai
    d = ar * r + ai
    return np.{_C}(complex(r / d, np.{_T}(-1.0) / d))
''')
    _helper(f"_cmul_{_C}", f'''
{_NJIT}
def _cmul_{_C}(a, b):
    """npymath's cmul: each product rounded on its own."""
    return np.{_C}(complex(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real))
''')
    _helper(f"_cfmul_{_C}", f'''
{_NJIT}
def _cfmul_{_C}(z, w):
    """NumPy's complex multiply loop (its SIMD form, FMAs): re = fma(a, c, -(b d)), im = fma(a, d, b c)."""
    a, b, c, d = z.real, z.imag, w.real, w.imag
    return np.{_C}(complex(_fma(a, c, -(b * d)), _fma(a, d, b * c)))
''', ("_fma",))
    _I, _SENT = ("int32", "0x7fc0c0de") if _T == "float32" else ("int64", "0x7ff80000c0de0001")
    _helper(f"_cunit_{_C}", f'''
{_NJIT}
def _cunit_{_C}():
    """The start of a complex cumprod: a NaN of its own payload that the first factor replaces
    (1 * x is not x where x has an infinite part: NumPy's accumulate starts from x itself)."""
    return np.{_C}(complex(np.{_I}({_SENT}).view(np.{_T}), 0.0))
''')
    _helper(f"_cprodstep_{_C}", f'''
{_NJIT}
def _cprodstep_{_C}(acc, x):
    """acc * x (NumPy's multiply), x itself while acc is _cunit_{_C}()."""
    if acc.real != acc.real and np.{_T}(acc.real).view(np.{_I}) == np.{_I}({_SENT}):
        return x
    return _cfmul_{_C}(acc, x)
''', (f"_cfmul_{_C}",))
    _helper(f"_cmulg_{_C}", f'''
{_NJIT}
def _cmulg_{_C}(z, w):
    """C's complex multiply (Annex G, libgcc's __muldc3): where the plain products give NaN in
    both parts, infinite operands count as infinities of their direction."""
    a, b, c, d = z.real, z.imag, w.real, w.imag
    ac, bd, ad, bc = a * c, b * d, a * d, b * c
    x, y = ac - bd, ad + bc
    if np.isnan(x) and np.isnan(y):
        recalc = False
        if np.isinf(a) or np.isinf(b):
            a, b, c, d = _cbox(a), _cbox(b), _cunnan(c), _cunnan(d)
            recalc = True
        if np.isinf(c) or np.isinf(d):
            a, b, c, d = _cunnan(a), _cunnan(b), _cbox(c), _cbox(d)
            recalc = True
        if not recalc and (np.isinf(ac) or np.isinf(bd) or np.isinf(ad) or np.isinf(bc)):
            a, b, c, d = _cunnan(a), _cunnan(b), _cunnan(c), _cunnan(d)
            recalc = True
        if recalc:
            x = np.{_T}(np.inf) * (a * c - b * d)
            y = np.{_T}(np.inf) * (a * d + b * c)
    return np.{_C}(complex(x, y))
''', ("_cbox", "_cunnan"))
    _helper(f"_cpow_{_C}", f'''
{_NJIT}
def _cpow_{_C}(a, b):
    """npy_cpow (module docstring)."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    if br == 0 and bi == 0:
        return np.{_C}(complex(1.0, 0.0))
    if ar == 0 and ai == 0:
        if br > 0:
            return np.{_C}(complex(0.0, 0.0))
        return np.{_C}(complex(np.nan, np.nan))
    if bi == 0 and np.abs(br) < 100 and br == np.floor(br):
        n = np.int64(br)
        if n == 1:
            return a
        if n == 2:
            return _cmul_{_C}(a, a)
        if n == 3:
            return _cmul_{_C}(a, _cmul_{_C}(a, a))
        m = n if n > 0 else -n
        acc = np.{_C}(complex(1.0, 0.0))
        p = a
        mask = np.int64(1)
        while True:
            if m & mask:
                acc = _cmul_{_C}(acc, p)
            mask <<= 1
            if m < mask:
                break
            p = _cmul_{_C}(p, p)
        return _cdiv_{_C}(np.{_C}(complex(1.0, 0.0)), acc) if n < 0 else acc
    return _cexp_{_C}(_cmulg_{_C}(b, np.{_C}(np.log(a))))
''', (f"_cmul_{_C}", f"_cdiv_{_C}", f"_cexp_{_C}", f"_cmulg_{_C}"))
    _helper(f"_csign_{_C}", f'''
{_NJIT}
def _csign_{_C}(a):
    """NumPy 2's complex sign: z / |z|; NaN for a NaN or two infinite parts, the unit along an
    infinite part, 0 for 0."""
    ar, ai = a.real, a.imag
    m = np.hypot(ar, ai)
    if np.isnan(m):
        return np.{_C}(complex(np.nan, np.nan))
    if np.isinf(m):
        if np.isinf(ar):
            if np.isinf(ai):
                return np.{_C}(complex(np.nan, np.nan))
            return np.{_C}(complex(1.0 if ar > 0 else -1.0, 0.0))
        return np.{_C}(complex(0.0, 1.0 if ai > 0 else -1.0))
    if m == 0:
        return np.{_C}(complex(0.0, 0.0))
    return np.{_C}(complex(ar / m, ai / m))
''')
    _helper(f"_cexp2_{_C}", f'''
{_NJIT}
def _cexp2_{_C}(a):
    """NumPy's nc_exp2: exp of each part times ln 2."""
    k = np.{_T}({_LOGE2})
    return _cexp_{_C}(np.{_C}(complex(a.real * k, a.imag * k)))
''', (f"_cexp_{_C}",))
    for _F, _K in (("log2", _LOG2E), ("log10", _LOG10E)):
        _helper(f"_c{_F}_{_C}", f'''
{_NJIT}
def _c{_F}_{_C}(a):
    """NumPy's nc_{_F}: log's parts times a constant."""
    k = np.{_T}({_K})
    r = np.{_C}(np.log(a))
    return np.{_C}(complex(r.real * k, r.imag * k))
''')
    _helper(f"_cexpm1_{_C}", f'''
{_NJIT}
def _cexpm1_{_C}(a):
    """NumPy's nc_expm1."""
    x, y = a.real, a.imag
    s = np.sin(y / np.{_T}(2.0))
    return np.{_C}(complex(np.expm1(x) * np.cos(y) - np.{_T}(2.0) * s * s, np.exp(x) * np.sin(y)))
''')
    _helper(f"_clog1p_{_C}", f'''
{_NJIT}
def _clog1p_{_C}(a):
    """NumPy's nc_log1p."""
    x1 = a.real + np.{_T}(1.0)
    return np.{_C}(complex(np.log(np.hypot(x1, a.imag)), np.arctan2(a.imag, x1)))
''')

# ops whose value is Numba's function of the same name on a complex scalar
_NATIVE = ("log", "sqrt")
_TYPED = {**cpu_cmath.FUNCTIONS, "multiply": "_cfmul", "square": "_cfmul", "divide": "_cdiv", "true_divide": "_cdiv", "reciprocal": "_crecip", "power": "_cpow",
          "sign": "_csign", "exp2": "_cexp2", "log2": "_clog2", "log10": "_clog10",
          "expm1": "_cexpm1", "log1p": "_clog1p"}
_GENERIC = {"less": "_clt", "less_equal": "_cle", "greater": "_cgt", "greater_equal": "_cge",
            "maximum": "_cmaximum", "minimum": "_cminimum", "fmax": "_cfmax", "fmin": "_cfmin",
            "isnan": "_cisnan"}


def expr(op: str, t: str, dt: str, a: list, use) -> str | None:
    """Numba source of ``op`` on complex operands ``a`` of dtype ``t`` giving ``dt`` (``use(name)``
    records a helper), or None where NumPy defines no such complex loop."""
    C, T = t, _PARTS[t]
    helper = f"{_TYPED[op]}_{C}" if op in _TYPED else _GENERIC.get(op)
    if helper is not None:
        return f"{use(helper)}({', '.join(a if op != 'square' else a * 2)})"
    if op in _NATIVE:
        return f"np.{C}(np.{op}({a[0]}))"
    simple = {"add": "{0} + {1}", "subtract": "{0} - {1}", "negative": "-{0}", "positive": "{0}",
              "conjugate": "{0}.conjugate()", "equal": "{0} == {1}", "not_equal": "{0} != {1}",
              "real": "np.{T}({0}.real)", "imag": "np.{T}({0}.imag)",
              "absolute": "np.{T}(np.hypot({0}.real, {0}.imag))",
              "angle": "np.{T}(np.arctan2({0}.imag, {0}.real))",
              "rint": "np.{C}(complex(np.rint({0}.real), np.rint({0}.imag)))",
              "isinf": "(np.isinf({0}.real) or np.isinf({0}.imag))",
              "isfinite": "(np.isfinite({0}.real) and np.isfinite({0}.imag))",
              "logical_not": "{0} == 0", "logical_and": "({0} != 0) & ({1} != 0)",
              "logical_or": "({0} != 0) | ({1} != 0)", "logical_xor": "({0} != 0) != ({1} != 0)"}
    if op not in simple:
        return None
    e = simple[op].format(*a, C=C, T=T)
    return f"np.{C}({e})" if dt == C and op in ("add", "subtract", "negative") else e
