"""Complex numbers in the Numba-CUDA emitter: device helpers of NumPy's complex64/complex128 loops
on Numba's native complex values, and :func:`expr`, the Python expression of one complex op that
:class:`~kfuse.codegen.numba_cuda_ops.CudaOps` renders through them.

The same algorithms as the CUDA C prelude (:mod:`kfuse.codegen.cuda_complex`, whose docstring
lists NumPy's rules followed), written on the parts with libdevice's float32/float64 functions:
Numba's own complex ``/`` raises on a zero divisor and its ``cmath`` differs from NumPy's at
infinities, so every op but ``+``, ``-`` and ``==`` goes through a helper here. A helper's source
is a template (``$exp(`` a math function, ``@name(`` another helper, ``MK(`` a complex of the
helper's dtype, ``ISINF(``/``FIN(``/``ISNAN(`` tests spelled in place, ``T(`` a constant of its part dtype) instantiated per complex dtype and per target:
``"cuda"`` (libdevice, ``cuda.jit`` device functions) or ``"host"`` (NumPy scalars, plain Python:
how the tests check the templates against NumPy without a GPU)."""
from __future__ import annotations

import re

from ..errors import UnsupportedError

PARTS = {"complex64": "float32", "complex128": "float64"}
# math function -> (NumPy's name on the host, libdevice's on the device)
_FN = {"exp": ("exp", "exp"), "log": ("log", "log"), "log1p": ("log1p", "log1p"), "expm1": ("expm1", "expm1"),
       "sqrt": ("sqrt", "sqrt"), "hypot": ("hypot", "hypot"), "atan2": ("arctan2", "atan2"),
       "sin": ("sin", "sin"), "cos": ("cos", "cos"), "tan": ("tan", "tan"), "sinh": ("sinh", "sinh"),
       "cosh": ("cosh", "cosh"), "asinh": ("arcsinh", "asinh"), "fabs": ("fabs", "fabs"),
       "copysign": ("copysign", "copysign"), "rint": ("rint", "rint"), "frexp": ("frexp", "frexp"),
       "ldexp": ("ldexp", "ldexp"), "fma": ("", "fma")}     # NumPy has no fma: the host namespace's host_fma
# per part dtype: inf, max, min normal, exp overflow, scaled-exp limit, cosh/sinh big, tanh big,
# reciprocal big, mantissa digits, scaling exponent K (see cuda_complex's KfCxT)
_K = {"float32": dict(MAXV="3.4028234663852886e+38", MINV="1.1754943508222875e-38", OVF="88.72283935546875",
                      SOVF="192.69491577148438", BIG="9.0", TBIG="11.0", RBIG="1e18", MANT="24", KS="235",
                      NEAR1="1e-4"),
      "float64": dict(MAXV="1.7976931348623157e+308", MINV="2.2250738585072014e-308", OVF="709.782712893384",
                      SOVF="1454.9159319953251", BIG="22.0", TBIG="22.0", RBIG="1e150", MANT="53", KS="1799",
                      NEAR1="1e-8")}

_SRC: dict[str, tuple[str, tuple]] = {}     # name -> (template, helpers it calls)


def _t(name: str, src: str) -> None:
    _SRC[name] = (src.strip("\n"), tuple(dict.fromkeys(re.findall(r"@(\w+)\(", src))))


_t("mul", """
def @mul(a, b):
    return MK(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real)
""")
_t("fmul", """
def @fmul(a, b):
    return MK($fma(a.real, b.real, -(a.imag * b.imag)), $fma(a.real, b.imag, a.imag * b.real))
""")
_t("div", """
def @div(a, b):
    br = $fabs(b.real)
    bi = $fabs(b.imag)
    if br >= bi:
        if br == T(0) and bi == T(0):
            return MK(a.real / br, a.imag / bi)
        q = b.imag / b.real
        s = T(1) / (b.real + b.imag * q)
        return MK((a.real + a.imag * q) * s, (a.imag - a.real * q) * s)
    q = b.real / b.imag
    s = T(1) / (b.imag + b.real * q)
    return MK((a.real * q + a.imag) * s, (a.imag * q - a.real) * s)
""")
_t("lt", """
def @lt(a, b):
    return (a.real < b.real and a.imag == a.imag and b.imag == b.imag) or (a.real == b.real and a.imag < b.imag)
""")
_t("le", """
def @le(a, b):
    return (a.real < b.real and a.imag == a.imag and b.imag == b.imag) or (a.real == b.real and a.imag <= b.imag)
""")
for _n, _first, _cmp in (("maximum", "a", "@le(b, a)"), ("minimum", "a", "@le(a, b)"),
                         ("fmax", "b", "@le(b, a)"), ("fmin", "b", "@le(a, b)")):
    _t(_n, f"""
def @{_n}(a, b):
    return a if (ISNAN({_first}) or {_cmp}) else b
""")
for _n, _cmp in (("argmax", ">"), ("argmin", "<")):
    _t(_n, f"""
def @{_n}(av, ai, bv, bi):
    if ai < 0:
        return bv, bi
    if bi < 0:
        return av, ai
    an = ISNAN(av)
    bn = ISNAN(bv)
    if an or bn:
        if an and bn:
            return (av, ai) if ai < bi else (bv, bi)
        return (av, ai) if an else (bv, bi)
    if av.real {_cmp} bv.real or (av.real == bv.real and av.imag {_cmp} bv.imag):
        return av, ai
    if bv.real {_cmp} av.real or (bv.real == av.real and bv.imag {_cmp} av.imag):
        return bv, bi
    return (av, ai) if ai < bi else (bv, bi)
""")
_t("square", """
def @square(a):
    return @fmul(a, a)
""")
_t("reciprocal", """
def @reciprocal(a):
    if $fabs(a.imag) <= $fabs(a.real):
        q = a.imag / a.real
        d = a.real + a.imag * q
        return MK(T(1) / d, -q / d)
    q = a.real / a.imag
    d = a.real * q + a.imag
    return MK(q / d, T(-1) / d)
""")
_t("sign", """
def @sign(a):
    h = $hypot(a.real, a.imag)
    if h != h or (ISINF(a.real) and ISINF(a.imag)):
        return MK(T(np.nan), T(np.nan))
    if ISINF(h):
        if ISINF(a.real):
            return MK(T(1) if a.real > T(0) else T(-1), T(0))
        return MK(T(0), T(1) if a.imag > T(0) else T(-1))
    if h == T(0):
        return MK(T(0), T(0))
    return MK(a.real / h, a.imag / h)
""")
_t("expscaled", """
def @expscaled(x, y, e):
    m, em = $frexp($exp(x - T(KS) * T(0.6931471805599453)))
    c, ec = $frexp($cos(y))
    s, es = $frexp($sin(y))
    k = np.int32(e + em + KS)
    return MK($ldexp(m * c, np.int32(k + ec)), $ldexp(m * s, np.int32(k + es)))
""")
_t("exp", """
def @exp(z):
    x = z.real
    y = z.imag
    if FIN(x):
        if not FIN(y):
            return MK(T(np.nan), T(np.nan))
        if y == T(0):
            return MK($exp(x), y)
        if x >= T(OVF) and x <= T(SOVF):
            return @expscaled(x, y, 0)
        e = $exp(x)
        return MK(e * $cos(y), e * $sin(y))
    if x != x:
        return MK(x, y if y == T(0) else T(np.nan))
    if x > T(0):
        if y == T(0):
            return MK(x, y)
        if not FIN(y):
            return MK(x, T(np.nan))
        return MK(x * $cos(y), x * $sin(y))
    if not FIN(y):
        return MK(T(0), $copysign(T(0), y))
    return MK(T(0) * $cos(y), T(0) * $sin(y))
""")
_t("log", """
def @log(z):
    ax = $fabs(z.real)
    ay = $fabs(z.imag)
    if ax != ax and FIN(ay):
        return MK(ax, T(np.nan))
    if ax > T(MAXV) / T(4) or ay > T(MAXV) / T(4):
        r = $log($hypot(ax / T(2), ay / T(2))) + T(0.6931471805599453)
    elif ax < T(MINV) and ay < T(MINV):
        if ax == T(0) and ay == T(0):
            return MK(T(-np.inf), $atan2(z.imag, z.real))
        r = $log($hypot($ldexp(ax, np.int32(MANT)), $ldexp(ay, np.int32(MANT)))) - T(MANT) * T(0.6931471805599453)
    else:
        h = $hypot(ax, ay)
        if h >= T(0.71) and h <= T(1.73):
            hi = ax if ax > ay else ay
            lo = ay if ax > ay else ax
            r = $log1p((hi - T(1)) * (hi + T(1)) + lo * lo) / T(2)
        else:
            r = $log(h)
    return MK(r, $atan2(z.imag, z.real))
""")
_t("sqrt", """
def @sqrt(z):
    a = z.real
    b = z.imag
    if a == T(0) and b == T(0):
        return MK(T(0), b)
    if ISINF(b):
        return MK(T(np.inf), b)
    if a != a:
        return MK(a, T(np.nan))
    if ISINF(a):
        d = b - b
        if a < T(0):
            return MK($fabs(d), $copysign(a, b))
        return MK(a, $copysign(d, b))
    scale = $fabs(a) >= T(MAXV) / T(2.4142135623730951) or $fabs(b) >= T(MAXV) / T(2.4142135623730951)
    if scale:
        a = a * T(0.25)
        b = b * T(0.25)
    if a >= T(0):
        t = $sqrt((a + $hypot(a, b)) * T(0.5))
        re = t
        im = b / (T(2) * t)
    else:
        t = $sqrt(($hypot(a, b) - a) * T(0.5))
        re = $fabs(b) / (T(2) * t)
        im = $copysign(t, b)
    if scale:
        re = re * T(2)
    return MK(re, im)
""")
_t("mulg", """
def @mulg(z, w):
    a = z.real
    b = z.imag
    c = w.real
    d = w.imag
    ac = a * c
    bd = b * d
    ad = a * d
    bc = b * c
    x = ac - bd
    y = ad + bc
    if x == x or y == y:
        return MK(x, y)
    again = False
    if ISINF(a) or ISINF(b):
        a, b, c, d = BOX(a), BOX(b), NAN0(c), NAN0(d)
        again = True
    if ISINF(c) or ISINF(d):
        a, b, c, d = NAN0(a), NAN0(b), BOX(c), BOX(d)
        again = True
    if not again and (ISINF(ac) or ISINF(bd) or ISINF(ad) or ISINF(bc)):
        a, b, c, d = NAN0(a), NAN0(b), NAN0(c), NAN0(d)
        again = True
    if not again:
        return MK(x, y)
    return MK(T(np.inf) * (a * c - b * d), T(np.inf) * (a * d + b * c))
""")
_t("power", """
def @power(a, b):
    if b.real == T(0) and b.imag == T(0):
        return MK(T(1), T(0))
    if a.real == T(0) and a.imag == T(0):
        if b.real > T(0):
            return MK(T(0), T(0))
        return MK(T(np.nan), T(np.nan))
    if b.imag == T(0) and b.real > T(-100) and b.real < T(100) and T(int(b.real)) == b.real:
        n = int(b.real)
        if n == 1:
            return a
        if n == 2:
            return @mul(a, a)
        if n == 3:
            return @mul(a, @mul(a, a))
        if n < 0:
            n = -n
        acc = MK(T(1), T(0))
        p = a
        bit = 1
        while True:
            if n & bit:
                acc = @mul(acc, p)
            if n < (bit << 1):
                break
            p = @mul(p, p)
            bit = bit << 1
        if b.real < T(0):
            return @div(MK(T(1), T(0)), acc)
        return acc
    return @exp(@mulg(b, @log(a)))
""")
for _n, _sinh in (("sinh", True), ("cosh", False)):
    _a, _b = ("sinh", "cosh") if _sinh else ("cosh", "sinh")
    _t(_n, f"""
def @{_n}(z):
    x = z.real
    y = z.imag
    ax = $fabs(x)
    xf = FIN(x)
    yf = FIN(y)
    if xf and yf:
        if y == T(0):
            return MK(${_n}(x), {'y' if _sinh else 'x * y'})
        if ax < T(BIG):
            return MK(${_a}(x) * $cos(y), ${_b}(x) * $sin(y))
        if ax < T(OVF):
            h = $exp(ax) * T(0.5)
            return MK({'$copysign(h, x)' if _sinh else 'h'} * $cos(y), {'h' if _sinh else '$copysign(h, x)'} * $sin(y))
        if ax < T(SOVF):
            w = @expscaled(ax, y, -1)
            sg = T(-1) if x < T(0) else T(1)
            return MK({'w.real * sg' if _sinh else 'w.real'}, {'w.imag' if _sinh else 'w.imag * sg'})
        h = T(MAXV) * x
        return MK({'h * $cos(y), h * h * $sin(y)' if _sinh else 'h * h * $cos(y), h * $sin(y)'})
    d = y - y
    if x == T(0) and not yf:
        return MK({'$copysign(T(0), x * d), d' if _sinh else 'd, $copysign(T(0), x * d)'})
    if y == T(0) and not xf:
        {'return z if x != x else MK(x, $copysign(T(0), y))' if _sinh else 'return MK(x * x, $copysign(T(0), x) * y)'}
    if xf:
        return MK(d, x * d)
    if x == x:
        if not yf:
            return MK(x * x, x * d)
        return MK({'x * $cos(y), T(np.inf) * $sin(y)' if _sinh else '(x * x) * $cos(y), x * $sin(y)'})
    return MK((x * x) * d, (x + x) * d)
""")
_t("tanh", """
def @tanh(z):
    x = z.real
    y = z.imag
    if not FIN(x):
        if x != x:
            return MK(x, y if y == T(0) else x * y)
        return MK($copysign(T(1), x), $copysign(T(0), y if ISINF(y) else $sin(y) * $cos(y)))
    if not FIN(y):
        return MK(x if x == T(0) else y - y, y - y)
    if $fabs(x) >= T(TBIG):
        e = $exp(-$fabs(x))
        return MK($copysign(T(1), x), T(4) * $sin(y) * $cos(y) * e * e)
    t = $tan(y)
    beta = T(1) + t * t
    s = $sinh(x)
    rho = $sqrt(T(1) + s * s)
    den = T(1) + beta * s * s
    return MK((beta * rho * s) / den, t / den)
""")
_t("sin", """
def @sin(z):
    if not FIN(z.real) and ISINF(z.imag):
        return MK(T(np.nan), T(np.inf))
    w = @sinh(MULI(z))
    return DIVI(w)
""")
_t("cos", """
def @cos(z):
    return @cosh(MULI(z))
""")
_t("asinfin", """
def @asinfin(z):
    s1 = @sqrt(MK(T(1) - z.real, -z.imag))
    s2 = @sqrt(MK(T(1) + z.real, z.imag))
    return MK($atan2(z.real, s1.real * s2.real - s1.imag * s2.imag), $asinh(s1.real * s2.imag - s1.imag * s2.real))
""")
_t("arcsinh", """
def @arcsinh(z):
    x = z.real
    y = z.imag
    if x != x or y != y:
        if ISINF(x):
            return MK(x, T(np.nan))
        if ISINF(y):
            return MK($copysign(T(np.inf), x), T(np.nan))
        return MK(T(np.nan), y if y == T(0) else T(np.nan))
    if ISINF(x) or ISINF(y):
        im = (T(0.7853981633974483) if ISINF(x) else T(1.5707963267948966)) if ISINF(y) else T(0)
        return MK($copysign(T(np.inf), x), $copysign(im, y))
    w = @asinfin(MULI(z))
    return DIVI(w)
""")
_t("infangle", """
def @infangle(x, y):
    if not ISINF(x):
        return T(1.5707963267948966)
    if ISINF(y):
        return T(0.7853981633974483) if x > T(0) else T(2.356194490192345)
    return T(0) if x > T(0) else T(3.141592653589793)
""")
_t("arccos", """
def @arccos(z):
    x = z.real
    y = z.imag
    if x != x or y != y:
        if ISINF(x):
            return MK(T(np.nan), T(-np.inf))
        if ISINF(y):
            return MK(T(np.nan), -y)
        return MK(T(1.5707963267948966) if x == T(0) else T(np.nan), T(np.nan))
    if ISINF(x) or ISINF(y):
        return MK(@infangle(x, y), -$copysign(T(np.inf), y))
    s1 = @sqrt(MK(T(1) - x, -y))
    s2 = @sqrt(MK(T(1) + x, y))
    return MK(T(2) * $atan2(s1.real, s2.real), $asinh(s2.real * s1.imag - s2.imag * s1.real))
""")
_t("arccosh", """
def @arccosh(z):
    x = z.real
    y = z.imag
    if x != x or y != y:
        return MK(T(np.inf) if (ISINF(x) or ISINF(y)) else T(np.nan),
                  T(1.5707963267948966) if x == T(0) else T(np.nan))
    if ISINF(x) or ISINF(y):
        return MK(T(np.inf), $copysign(@infangle(x, y), y))
    s1 = @sqrt(MK(x - T(1), y))
    s2 = @sqrt(MK(x + T(1), y))
    return MK($asinh(s1.real * s2.real + s1.imag * s2.imag), T(2) * $atan2(s1.imag, s2.real))
""")
_t("arctanh", """
def @arctanh(z):
    x = z.real
    y = z.imag
    ax = $fabs(x)
    ay = $fabs(y)
    if x != x or y != y:
        if ISINF(x) or ISINF(y):
            return MK($copysign(T(0), x), $copysign(T(1.5707963267948966), y) if ISINF(y) else T(np.nan))
        return MK(x if x == T(0) else T(np.nan), T(np.nan))
    if ax > T(RBIG) or ay > T(RBIG):
        re = $copysign(T(0), x) if (ISINF(x) or ISINF(y)) else @reciprocal(z).real
        return MK(re, $copysign(T(1.5707963267948966), y))
    if ax == T(1) and y == T(0):
        return MK($copysign(T(np.inf), x), y)
    om = T(1) - ax
    d = $hypot(om, ay)
    if d < T(NEAR1):
        re = ($log(T(4) * ax) - T(2) * $log(d)) / T(4)
    else:
        re = $log1p(T(4) * ax / (om * om + ay * ay)) / T(4)
    return MK($copysign(re, x), $atan2(T(2) * y, om * (T(1) + ax) - ay * ay) / T(2))
""")
for _n, _b in (("tan", "tanh"), ("arctan", "arctanh")):    # f(z) = -i g(iz)
    _t(_n, f"""
def @{_n}(z):
    w = @{_b}(MULI(z))
    return DIVI(w)
""")
# arcsin(z) = -i arcsinh(iz) taken as the parts of arcsinh(y + ix) swapped, as NumPy computes it:
# the same value for finite z, and NumPy's signs where a part is NaN and the other infinite
_t("arcsin", """
def @arcsin(z):
    w = @arcsinh(MK(z.imag, z.real))
    return MK(w.imag, w.real)
""")
_t("exp2", """
def @exp2(z):
    return @exp(MK(z.real * T(0.6931471805599453), z.imag * T(0.6931471805599453)))
""")
for _n, _k in (("log2", "1.4426950408889634"), ("log10", "0.4342944819032518")):
    _t(_n, f"""
def @{_n}(z):
    w = @log(z)
    return MK(w.real * T({_k}), w.imag * T({_k}))
""")
_t("log1p", """
def @log1p(z):
    r = z.real + T(1)
    return MK($log($hypot(r, z.imag)), $atan2(z.imag, r))
""")
_t("expm1", """
def @expm1(z):
    h = $sin(z.imag / T(2))
    return MK($expm1(z.real) * $cos(z.imag) - T(2) * h * h, $exp(z.real) * $sin(z.imag))
""")


# one-line forms spelled out in place (a helper call each would be inlined by Numba's IR inliner,
# whose cost grows fast with the nesting): name -> format of its argument text
_MACROS = {"BOX": "$copysign(T(1) if ISINF({0}) else T(0), {0})",     # Annex G's boxed infinity part
           "NAN0": "($copysign(T(0), {0}) if {0} != {0} else {0})",    # a NaN part as a zero
           "MULI": "MK(-({0}).imag, ({0}).real)", "DIVI": "MK(({0}).imag, -({0}).real)",     # i z, z / i (of a name)
           "MK": "np.$C(complex({}))", "ISINF": "($fabs({}) == T(np.inf))", "FIN": "($fabs({}) < T(np.inf))",
           "ISNAN": "(({0}).real != ({0}).real or ({0}).imag != ({0}).imag)"}


def _expand(src: str, name: str, fmt: str) -> str:
    """``src`` with every ``name(args)`` (balanced parentheses) replaced by ``fmt.format(args)``."""
    out, k = [], 0
    for m in re.finditer(rf"\b{name}\(", src):
        if m.start() < k:
            continue
        depth, j = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(src[j], 0)
            j += 1
        out += [src[k:m.start()], fmt.format(_expand(src[m.end():j - 1], name, fmt))]
        k = j
    return "".join(out + [src[k:]])


def _instantiate(name: str, C: str, target: str) -> str:
    T = PARTS[C]
    src = _SRC[name][0].replace("$C", C)
    src = re.sub(r"@(\w+)\(", lambda m: f"_cx{m.group(1)}_{C}(", src)
    for m, fmt in _MACROS.items():
        src = _expand(src, m, fmt.replace("$C", C))
    for k, v in _K[T].items():
        src = re.sub(rf"\b{k}\b", v, src)
    consts: dict[str, str] = {}     # T(<literal>) -> a module-level constant (typed once, not a call per use)

    def const(m):
        name = f"_cx{T[5:]}_" + re.sub(r"\W", "_", m.group(1).replace("-", "m").replace("+", "p"))
        consts[name] = f"{name} = np.{T}({m.group(1)})"
        return name
    src = re.sub(r"\bT\(([-\w.+]+(?:\.\w+)?)\)", const, src)
    src = re.sub(r"\bT\(", f"np.{T}(", src)
    host, dev = {}, {}
    for fn, (np_name, ld_name) in _FN.items():
        host[fn] = f"np.{np_name}(" if np_name else f"host_{fn}("
        dev[fn] = f"ld.{ld_name}{'f' if T == 'float32' else ''}("
    src = re.sub(r"\$(\w+)\(", lambda m: (dev if target == "cuda" else host)[m.group(1)], src)
    deco = "@cuda.jit(device=True, inline=True)\n" if target == "cuda" else ""
    return "\n".join(list(consts.values()) + [deco + src])


def helper_name(name: str, dtype: str) -> str:
    return f"_cx{name}_{dtype}"


def sources(target: str) -> dict[str, str]:
    """Every helper's source for ``target`` ("cuda" or "host"), by :func:`helper_name`."""
    return {helper_name(n, C): _instantiate(n, C, target) for C in PARTS for n in _SRC}


def closure(name: str, dtype: str) -> list[str]:
    """Helper ``name`` of ``dtype`` and every helper it calls, callees first."""
    out: list[str] = []

    def visit(n):
        for d in _SRC[n][1]:
            if d != n and helper_name(d, dtype) not in out:
                visit(d)
        if helper_name(n, dtype) not in out:
            out.append(helper_name(n, dtype))
    visit(name)
    return out


# ------------------------------------------------------------------------------- expressions

_HELPED = {"argmax", "argmin", "multiply", "divide", "true_divide", "power", "maximum", "minimum", "fmax", "fmin", "square",
           "reciprocal", "sign", "exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
           "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "exp2", "log2", "log10",
           "log1p", "expm1"}
_ALIAS = {"multiply": "fmul", "divide": "div", "true_divide": "div"}
_PLAIN = {"add": "{C}({a} + {b})", "subtract": "{C}({a} - {b})", "negative": "{C}(-{a})", "positive": "{a}",
          "conjugate": "{C}(complex({a}.real, -{a}.imag))", "rint": "{C}(complex({rint}({a}.real), {rint}({a}.imag)))",
          "absolute": "{hypot}({a}.real, {a}.imag)", "real": "{a}.real", "imag": "{a}.imag",
          "angle": "{atan2}({a}.imag, {a}.real)", "equal": "({a} == {b})", "not_equal": "({a} != {b})",
          "isnan": "({a}.real != {a}.real or {a}.imag != {a}.imag)",
          "isinf": "({fabs}({a}.real) == {inf} or {fabs}({a}.imag) == {inf})",
          "isfinite": "({fabs}({a}.real) < {inf} and {fabs}({a}.imag) < {inf})", "logical_not": "({a}.real == 0 and {a}.imag == 0)",
          "less": "{lt}({a}, {b})", "less_equal": "{le}({a}, {b})", "greater": "{lt}({b}, {a})",
          "greater_equal": "{le}({b}, {a})", "logical_and": "({na} and {nb})", "logical_or": "({na} or {nb})",
          "logical_xor": "({na} != {nb})"}


def expr(op: str, t: str, args: list, use) -> str:
    """The Numba-CUDA expression of ``op`` on operands of complex dtype ``t`` (register names
    ``args``); ``use(name)`` records a helper the kernel needs (with those it calls)."""
    def helper(n: str) -> str:
        for h in closure(n, t):
            use(h)
        return helper_name(n, t)
    if op in _HELPED:
        return f"{helper(_ALIAS.get(op, op))}({', '.join(args)})"
    if op not in _PLAIN:
        raise UnsupportedError(f"kfuse: the numba-cuda backend has no rule for {op}({t})")
    tmpl = _PLAIN[op]
    sfx = "f" if t == "complex64" else ""
    a = args[0]
    b = args[1] if len(args) > 1 else None
    fields = dict(a=a, b=b, C=f"np.{t}", rint=f"ld.rint{sfx}", hypot=f"ld.hypot{sfx}", atan2=f"ld.atan2{sfx}",
                  fabs=f"ld.fabs{sfx}", inf=f"np.{PARTS[t]}(np.inf)",
                  na=f"({a}.real != 0 or {a}.imag != 0)", nb=f"({b}.real != 0 or {b}.imag != 0)" if b else "")
    for h in ("lt", "le"):
        if "{" + h + "}" in tmpl:
            fields[h] = helper(h)
    return tmpl.format(**fields)


def cast(a: str, src: str, dst: str, real_cast) -> str:
    """``astype`` with a complex side (cuda_complex.cast_expr's rules); ``real_cast`` casts a
    real value between real dtypes."""
    if src == dst:
        return a
    if dst in PARTS:
        if src in PARTS:
            return f"np.{dst}({a})"
        if src == "bool":
            return f"np.{dst}(complex(1.0 if {a} else 0.0, 0.0))"
        part = real_cast(a, src, PARTS[dst])
        return f"np.{dst}(complex({part}, 0.0))"
    if dst == "bool":
        return f"({a}.real != 0 or {a}.imag != 0)"
    return real_cast(f"{a}.real", PARTS[src], dst)


def literal(value, dt: str, real_literal) -> str:
    """A complex constant of ``dt`` as a Python expression (evaluated once, at module load)."""
    z = complex(value)
    return f"np.{dt}(complex({real_literal(z.real, PARTS[dt])}, {real_literal(z.imag, PARTS[dt])}))"
