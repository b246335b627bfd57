"""Complex exp and the complex trigonometric and hyperbolic functions with npymath's special values
(C99 Annex G, as the libm NumPy calls gives them: infinities, NaNs and signed zeros in either
part), for the CPU's Numba kernels. Numba's own (CPython's cmath) give NaN for many of these
(``sinh(inf j)``, ``exp(1e300)``), and its ``arccosh`` takes the wrong side of the cut for
``-x - 0j``.

Finite arguments take the textbook formulas (``exp(x) cis(y)``, ``sinh(x) cos(y) + i cosh(x)
sin(y)``, Kahan's ``tanh``; ``exp`` and ``sinh``/``cosh`` of a large real part scaled so that
their products do not overflow early) or Numba's inverse functions, which are accurate there; the
other cases follow Annex G's tables. ``sin``/``cos``/``tan`` and ``arcsin``/``arctan`` are the
hyperbolic ones on the rotated argument (``sin z = -i sinh(iz)``), ``arccos``/``arccosh`` go
through ``casin`` and Numba's ``arccos``. :data:`HELPERS` maps ``_c<fn>_<complex dtype>`` to its
source (the ``cpu_helpers`` form).
"""
from __future__ import annotations

HELPERS: dict[str, tuple] = {}
_NJIT = '@numba.njit(error_model="numpy")'
# |x| past which exp(|x|) overflows (float32, float64): sinh/cosh/exp scale there
_BIG = {"float32": "88.0", "float64": "709.0"}
# |x| past which tanh(x) is +-1 in the part dtype (its imaginary part then decays as exp(-2|x|))
_TANH_BIG = {"float32": "9.0", "float64": "22.0"}


def _add(name: str, src: str, deps: tuple = ()) -> None:
    HELPERS[name] = (f"{_NJIT}\n{src.strip(chr(10))}", deps)


def _rotated(C: str, fn: str, hyp: str) -> None:
    """``_c<fn>`` as -i <hyp>(i z): the parts of <hyp>(y + i x) swapped (npymath's identity)."""
    _add(f"_c{fn}_{C}", f'''
def _c{fn}_{C}(z):
    """npy_c{fn}: -i {hyp}(i z), as the parts of {hyp}(y + i x) swapped."""
    w = _c{hyp}_{C}(np.{C}(complex(z.imag, z.real)))
    return np.{C}(complex(w.imag, w.real))
''', (f"_c{hyp}_{C}",))


def _sources(C: str, T: str) -> None:
    f, pi2 = f"np.{T}", f"np.{T}(1.5707963267948966)"
    _add(f"_cexp_{C}", f'''
def _cexp_{C}(z):
    """npy_cexp: exp(x) cis(y); y == 0 gives (exp(x), y), an infinite or NaN y NaNs unless x is
    -inf (zeros) or +inf (inf + NaN j)."""
    x, y = z.real, z.imag
    if y == 0:
        return np.{C}(complex(np.exp(x), y))
    if not np.isfinite(y):
        if np.isinf(x):
            return np.{C}(complex(0.0, 0.0)) if x < 0 else np.{C}(complex(x, y - y))
        return np.{C}(complex(y - y, y - y))
    if x > {f}({_BIG[T]}):
        h = np.exp(x * {f}(0.5))
        return np.{C}(complex((h * np.cos(y)) * h, (h * np.sin(y)) * h))
    e = np.exp(x)
    return np.{C}(complex(e * np.cos(y), e * np.sin(y)))
''')
    _add(f"_csinh_{C}", f'''
def _csinh_{C}(z):
    """npy_csinh (Annex G)."""
    x, y = z.real, z.imag
    if np.isfinite(x) and np.isfinite(y):
        if y == 0:
            return np.{C}(complex(np.sinh(x), y))
        if np.abs(x) > {f}({_BIG[T]}):
            h = np.exp(np.abs(x) * {f}(0.5)) * {f}(0.5)
            return np.{C}(complex(np.copysign(h, x) * np.cos(y) * h * {f}(2.0), h * np.sin(y) * h * {f}(2.0)))
        return np.{C}(complex(np.sinh(x) * np.cos(y), np.cosh(x) * np.sin(y)))
    if x == 0:
        return np.{C}(complex(x, y - y))
    if y == 0:
        return np.{C}(complex(x if np.isinf(x) else x + x, y))
    if np.isfinite(x):
        return np.{C}(complex(y - y, y - y))
    if np.isinf(x):
        if not np.isfinite(y):
            return np.{C}(complex(x * x, x * (y - y)))
        return np.{C}(complex(x * np.cos(y), np.inf * np.sin(y)))
    return np.{C}(complex((x * x) * (y - y), (x + x) * (y - y)))
''')
    _add(f"_ccosh_{C}", f'''
def _ccosh_{C}(z):
    """npy_ccosh (Annex G)."""
    x, y = z.real, z.imag
    if np.isfinite(x) and np.isfinite(y):
        if y == 0:
            return np.{C}(complex(np.cosh(x), x * y))
        if np.abs(x) > {f}({_BIG[T]}):
            h = np.exp(np.abs(x) * {f}(0.5)) * {f}(0.5)
            return np.{C}(complex(h * np.cos(y) * h * {f}(2.0), np.copysign(h, x) * np.sin(y) * h * {f}(2.0)))
        return np.{C}(complex(np.cosh(x) * np.cos(y), np.sinh(x) * np.sin(y)))
    if x == 0:
        return np.{C}(complex(y - y, x * np.copysign({f}(0.0), y)))
    if y == 0:
        return np.{C}(complex(x * x, np.copysign({f}(0.0), x) * y))
    if np.isfinite(x):
        return np.{C}(complex(y - y, x * (y - y)))
    if np.isinf(x):
        if not np.isfinite(y):
            return np.{C}(complex(np.inf, x * (y - y)))
        return np.{C}(complex(np.inf * np.cos(y), x * np.sin(y)))
    return np.{C}(complex((x * x) * (y - y), (x + x) * (y - y)))
''')
    _add(f"_ctanh_{C}", f'''
def _ctanh_{C}(z):
    """npy_ctanh (Annex G; Kahan's algorithm for finite arguments)."""
    x, y = z.real, z.imag
    if np.isnan(x):
        return np.{C}(complex(x, y if y == 0 else x + y))
    if np.isinf(x):
        return np.{C}(complex(np.copysign({f}(1.0), x),
                              np.copysign({f}(0.0), y if np.isinf(y) else np.sin(y) * np.cos(y))))
    if not np.isfinite(y):
        return np.{C}(complex(y - y if x != 0 else x, y - y))
    if np.abs(x) >= {f}({_TANH_BIG[T]}):
        e = np.exp(-np.abs(x))
        return np.{C}(complex(np.copysign({f}(1.0), x), {f}(4.0) * np.sin(y) * np.cos(y) * e * e))
    t = np.tan(y)
    beta = {f}(1.0) + t * t
    s = np.sinh(x)
    rho = np.sqrt({f}(1.0) + s * s)
    den = {f}(1.0) + beta * s * s
    return np.{C}(complex((beta * rho * s) / den, t / den))
''')
    _rotated(C, "sin", "sinh")
    _rotated(C, "tan", "tanh")
    _add(f"_ccos_{C}", f'''
def _ccos_{C}(z):
    """npy_ccos: cosh(i z)."""
    return _ccosh_{C}(np.{C}(complex(-z.imag, z.real)))
''', (f"_ccosh_{C}",))
    _add(f"_casinh_{C}", f'''
def _casinh_{C}(z):
    """npy_casinh: Numba's for finite arguments, Annex G's values for the others."""
    x, y = z.real, z.imag
    if np.isfinite(x) and np.isfinite(y):
        return np.{C}(np.arcsinh(z))
    if np.isinf(y):
        if np.isnan(x):
            return np.{C}(complex(np.inf, x))
        return np.{C}(complex(np.copysign(np.inf, x),
                              np.copysign({pi2} if np.isfinite(x) else {f}(0.7853981633974483), y)))
    if np.isinf(x):
        return np.{C}(complex(x, np.copysign({f}(0.0), y) if np.isfinite(y) else y))
    if np.isnan(x) and y == 0:
        return np.{C}(complex(x, y))
    return np.{C}(complex(np.nan, np.nan))
''')
    _rotated(C, "asin", "asinh")
    _add(f"_catanh_{C}", f'''
def _catanh_{C}(z):
    """npy_catanh: Numba's for finite arguments, Annex G's values for the others."""
    x, y = z.real, z.imag
    if np.isfinite(x) and np.isfinite(y):
        return np.{C}(np.arctanh(z))
    if np.isinf(y):
        return np.{C}(complex(np.copysign({f}(0.0), x), np.copysign({pi2}, y)))
    if np.isinf(x) or x == 0:
        return np.{C}(complex(np.copysign({f}(0.0), x), np.copysign({pi2}, y) if np.isfinite(y) else y))
    return np.{C}(complex(np.nan, np.nan))
''')
    _rotated(C, "atan", "atanh")
    _add(f"_cacos_{C}", f'''
def _cacos_{C}(z):
    """npy_cacos: Numba's for finite non-zero arguments, else pi/2 - casin(z)."""
    x, y = z.real, z.imag
    if np.isfinite(x) and np.isfinite(y) and not (x == 0 and y == 0):
        return np.{C}(np.arccos(z))
    w = _casin_{C}(z)
    r = {pi2} - w.real
    return np.{C}(complex(r if r != 0 else {f}(0.0), -w.imag))
''', (f"_casin_{C}",))
    _add(f"_cacosh_{C}", f'''
def _cacosh_{C}(z):
    """npy_cacosh: from cacos(z) = a + i b, |b| + i copysign(a, y) (the side of the cut by
    the sign of y); Annex G's values where a part is NaN."""
    x, y = z.real, z.imag
    w = _cacos_{C}(z)
    a, b = w.real, w.imag
    if np.isnan(a) and np.isnan(b):
        return np.{C}(complex(b, a))
    if np.isnan(a):
        return np.{C}(complex(np.abs(b), a))
    if np.isnan(b):
        return np.{C}(complex(b, a if x == 0 and np.isnan(y) else b))
    return np.{C}(complex(np.abs(b), np.copysign(a, y)))
''', (f"_cacos_{C}",))


for _C, _T in (("complex64", "float32"), ("complex128", "float64")):
    _sources(_C, _T)

FUNCTIONS = {"exp": "_cexp", "sin": "_csin", "cos": "_ccos", "tan": "_ctan", "sinh": "_csinh",
             "cosh": "_ccosh", "tanh": "_ctanh", "arcsin": "_casin", "arccos": "_cacos",
             "arctan": "_catan", "arcsinh": "_casinh", "arccosh": "_cacosh", "arctanh": "_catanh"}
