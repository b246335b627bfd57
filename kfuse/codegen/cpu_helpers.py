"""Source of the Numba helpers the CPU kernels call (:mod:`kfuse.codegen.cpu` emits the ones a
kernel uses into its own source, so the source text alone determines the compiled code).

``HELPERS`` maps a helper's name to ``(source, names of the helpers it calls)``; its order is the
definition order, which respects those dependencies. float16 travels as uint16 bits (``_h2f``,
``_f2h``, ``_rf16``: :mod:`kfuse.codegen.cpu_half`); ``_expf``/``_tanhf``/``_logf``/``_log1pf``/``_hypotf`` are branch-free float32 versions LLVM vectorises
(:mod:`kfuse.codegen.cpu_vecmath`'s float64 ones serve float64 and the other float32 functions);
``_radd`` is the reassociable add of float sums; ``_fkey_*``/``_fval_*`` map floats to integers of the
same order (vectorisable max/min); ``_cbrt`` and ``_popcount`` are the CPU's own; NumPy's integer
and float division, remainder, shifts, power, gcd/lcm and logaddexp are
:mod:`kfuse.codegen.int_helpers`', shared with the Numba-CUDA emitter.
"""
from __future__ import annotations

from . import philox
from . import cpu_argblocks, cpu_complex, cpu_half, cpu_vecmath
from .int_helpers import decorated, float_sources

HELPERS: dict[str, tuple] = {}


def _helper(name: str, src: str, deps: tuple = ()) -> None:
    HELPERS[name] = (src.strip("\n"), deps)


_helper("_radd", '''
@numba.njit(error_model="numpy", fastmath={"reassoc"})
def _radd(a, b):
    """a + b that LLVM may reassociate: a float sum's add (kfuse.codegen.cpu)."""
    return a + b
''')
_helper("_cbrt", '''
@numba.njit(error_model="numpy")
def _cbrt(x):
    """np.cbrt with NaN, +-inf and +-0.0 passed through: Numba's own is compiled with fastmath, so
    once inlined LLVM took its result for finite and folded a later isinf/isfinite (cpu seed 905 #133)."""
    return x if (x == 0 or not np.isfinite(x)) else np.cbrt(x)
''')
for _T, _I, _B in (("float32", "int32", 31), ("float64", "int64", 63)):
    _helper(f"_fkey_{_T}", f'''
@numba.njit(error_model="numpy")
def _fkey_{_T}(x):
    """{_T} -> {_I} of the same order (-0.0 below +0.0, NaN beyond +-inf: callers flag NaN)."""
    b = np.{_T}(x).view(np.{_I})
    return np.{_I}(b ^ ((b >> np.{_I}({_B})) & np.{_I}({(1 << _B) - 1})))
''')
    _helper(f"_fval_{_T}", f'''
@numba.njit(error_model="numpy")
def _fval_{_T}(k):
    """The {_T} whose _fkey_{_T} is k (the map is its own inverse)."""
    return np.{_I}(k ^ ((k >> np.{_I}({_B})) & np.{_I}({(1 << _B) - 1}))).view(np.{_T})
''')
HELPERS.update(cpu_half.SOURCES)           # float16 conversions (hardware where the CPU has them)
_helper("_hypotf", '''
@numba.njit(error_model="numpy")
def _hypotf(x, y):
    """np.hypot of float32 values, as glibc's hypotf computes it (bit for bit): the squares and
    their sum in float64, one square root, rounded once; +-inf with a NaN gives inf (IEEE)."""
    r = np.float32(np.sqrt(np.float64(x) * np.float64(x) + np.float64(y) * np.float64(y)))
    return np.float32(np.inf) if (abs(x) == np.inf or abs(y) == np.inf) else r
''')
_helper("_tanhf", '''
@numba.njit(error_model="numpy")
def _tanhf(x):
    """float32 tanh: a [13/6] rational approximation on the clamped input (Eigen's fast tanh;
    max relative error ~4e-7), branch-free so LLVM vectorises the loop; NaN propagates."""
    c = np.float32(7.9053111076354980)
    xc = c if x > c else (-c if x < -c else x)
    x2 = xc * xc
    p = x2 * np.float32(-2.76076847742355e-16) + np.float32(2.00018790482477e-13)
    p = x2 * p + np.float32(-8.60467152213735e-11)
    p = x2 * p + np.float32(5.12229709037114e-08)
    p = x2 * p + np.float32(1.48572235717979e-05)
    p = x2 * p + np.float32(6.37261928875436e-04)
    p = x2 * p + np.float32(4.89352455891786e-03)
    q = x2 * np.float32(1.19825839466702e-06) + np.float32(1.18534705686654e-04)
    q = x2 * q + np.float32(2.26843463243900e-03)
    q = x2 * q + np.float32(4.89352518554385e-03)
    r = xc * p / q
    return x if np.abs(x) < np.float32(0.0004) else r
''')
_helper("_expf", '''
@numba.njit(error_model="numpy")
def _expf(x):
    """float32 exp: Cody-Waite reduction x = n ln2 + r, Cephes' degree-6 polynomial for e^r, and
    2^n applied as two normal powers of two built in the exponent bits (so subnormal results are
    rounded once, as libm does); max error ~2 ulp. Branch-free and call-free, so LLVM vectorises
    the loop (Numba's scalar expf is a libm call that blocks it: 16M elements 68 ms -> 9 ms).
    Overflow gives inf, NaN propagates, below the smallest subnormal gives 0: those lanes compute
    e^0 and are replaced (computed from a clamp at -104, their subnormal products took a microcode
    assist each: a softmax of causal-masked rows, half -inf, 5.3 ms against 1.6 unmasked, Xeon VM)."""
    xc = np.float32(88.72283) if x > np.float32(88.72283) else (np.float32(0.0) if x < np.float32(-104.0) else x)
    n = np.floor(xc * np.float32(1.44269504088896341) + np.float32(0.5))
    n = np.float32(127.0) if n > np.float32(127.0) else n
    r = xc - n * np.float32(0.693359375) + n * np.float32(2.12194440e-4)
    p = np.float32(1.9875691500e-4) * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    y = p * r * r + r + np.float32(1.0)
    n1 = np.floor(n * np.float32(0.5))
    n2 = n - n1
    s1 = np.int32((np.int32(n1) + np.int32(127)) << np.int32(23)).view(np.float32)
    s2 = np.int32((np.int32(n2) + np.int32(127)) << np.int32(23)).view(np.float32)
    e = (y * s1) * s2
    e = np.float32(np.inf) if x > np.float32(88.72283) else e
    e = np.float32(0.0) if x < np.float32(-104.0) else e
    return x if x != x else e
''')
_helper("_logf", '''
@numba.njit(error_model="numpy")
def _logf(x):
    """float32 log: frexp from the bits (subnormals scaled by 2^23 first), Cephes' degree-8
    polynomial on the mantissa folded to [sqrt(1/2), sqrt(2)), ln 2 split in two; max error 0.78
    ulp over every positive float32. Branch-free and call-free, so LLVM vectorises the loop
    (16M elements: 7.8 ms, Numba's libm call 29.8 ms, NumPy 8.3 ms); 0 -> -inf, x < 0 -> NaN."""
    tiny = x < np.float32(1.1754944e-38)
    xs = np.float32(x * np.float32(8388608.0)) if tiny else x
    bits = np.float32(xs).view(np.int32)
    e = np.float32(np.int32(np.int32(bits >> np.int32(23)) & np.int32(255)) - np.int32(126)) - (np.float32(23.0) if tiny else np.float32(0.0))
    m = np.int32(np.int32(bits & np.int32(0x007fffff)) | np.int32(0x3f000000)).view(np.float32)
    low = m < np.float32(0.70710677)
    e = e - np.float32(1.0) if low else e
    m = (m + m - np.float32(1.0)) if low else (m - np.float32(1.0))
    z = m * m
    y = np.float32(7.0376836292e-2) * m + np.float32(-1.1514610310e-1)
    y = y * m + np.float32(1.1676998740e-1)
    y = y * m + np.float32(-1.2420140846e-1)
    y = y * m + np.float32(1.4249322787e-1)
    y = y * m + np.float32(-1.6668057665e-1)
    y = y * m + np.float32(2.0000714765e-1)
    y = y * m + np.float32(-2.4999993993e-1)
    y = y * m + np.float32(3.3333331174e-1)
    y = y * m * z
    y = y + e * np.float32(-2.12194440e-4)
    y = y - np.float32(0.5) * z
    r = m + y + e * np.float32(0.693359375)
    r = np.float32(-np.inf) if x == np.float32(0.0) else r
    r = np.float32(np.nan) if x < np.float32(0.0) else r
    r = x if x == np.float32(np.inf) else r
    return x if x != x else r
''')
_helper("_log1pf", '''
@numba.njit(error_model="numpy")
def _log1pf(x):
    """float32 log1p: log(u) corrected by ((u - 1) - x) / u, u = 1 + x rounded (Goldberg's
    trick: the correction carries what the rounding of u lost); max error 1.4 ulp. -1 -> -inf."""
    u = np.float32(np.float32(1.0) + x)
    d = np.float32(u - np.float32(1.0))
    r = _logf(u) - (d - x) / u
    r = x if d == np.float32(0.0) else r
    r = x if x == np.float32(np.inf) else r
    r = np.float32(-np.inf) if x == np.float32(-1.0) else r
    return x if x != x else r
''', ("_logf",))
for _T in ("float32", "float64"):
    for _name, _src in float_sources(_T, '@numba.njit(error_model="numpy")', lambda f: f"np.{f}").items():
        _helper(_name, _src)
for _name, _src in decorated('@numba.njit(error_model="numpy")').items():
    _helper(_name, _src)
_helper("_popcount", '''
@numba.njit(error_model="numpy")
def _popcount(x):
    """The number of set bits of a uint64 (SWAR; LLVM recognises it as ctpop)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)
''')
_helper(philox.HELPER, philox.python_source('@numba.njit(error_model="numpy")'))


HELPERS.update(cpu_vecmath.SOURCES)       # float64 transcendentals LLVM vectorises
HELPERS.update(cpu_argblocks.SOURCES)     # argmax/argmin keys
for _name, _entry in cpu_complex.HELPERS.items():     # complex64/complex128 ops (cpu_complex)
    HELPERS[_name] = _entry
