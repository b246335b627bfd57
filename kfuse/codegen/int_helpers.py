"""The helpers both Numba emitters share, as Python source without its decorator: NumPy's floor
division, remainder, fmod and shifts of int64/uint64 operands (a zero divisor gives 0, MIN // -1
wraps, x % -1 is 0, a shift by the width or more gives 0, or -1 for a negative signed right shift;
unsigned fmod is ``_uremainder``: truncating and flooring agree on non-negative operands), the
wrapping integer power ``_ipow``, gcd/lcm of magnitudes (``_uabs``) as NumPy's npy_gcd/npy_lcm
compute them, and the binary searches of ``np.searchsorted`` (``_search_left``/``_search_right``).
:mod:`kfuse.codegen.cpu_helpers` compiles them with ``numba.njit``, :mod:`kfuse.codegen.numba_cuda_ops`
as ``cuda.jit`` device functions (:func:`decorated`). The float ones are shared the same way, with
each emitter's math functions (:func:`float_sources`): np.floor_divide/np.remainder (npy_divmod)
and np.logaddexp/np.logaddexp2 step by step. :mod:`kfuse.codegen.py_ops` renders the calls."""
from __future__ import annotations

_SOURCES = {
    "_sfloordiv": '''
def _sfloordiv(a, b):
    """np.floor_divide for signed ints in int64 (0 for b == 0, wraps for MIN // -1)."""
    if b == 0:
        return np.int64(0)
    if b == -1:
        return np.int64(0) - a
    return a // b
''',
    "_sremainder": '''
def _sremainder(a, b):
    if b == 0 or b == -1:
        return np.int64(0)
    return a % b
''',
    "_sfmod": '''
def _sfmod(a, b):
    """np.fmod for signed ints in int64: C's truncating % (sign of a); 0 for b == 0 and b == -1."""
    if b == 0 or b == -1:
        return np.int64(0)
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r -= b      # Python's % takes the sign of b
    return r
''',
    "_ufloordiv": '''
def _ufloordiv(a, b):
    if b == np.uint64(0):
        return np.uint64(0)
    return a // b
''',
    "_uremainder": '''
def _uremainder(a, b):
    if b == np.uint64(0):
        return np.uint64(0)
    return a % b
''',
    "_slshift": '''
def _slshift(a, b):
    if b < 0 or b >= 64:
        return np.int64(0)
    return a << b
''',
    "_srshift": '''
def _srshift(a, b):
    if b < 0 or b >= 64:
        return np.int64(-1) if a < 0 else np.int64(0)
    return a >> b
''',
    "_ulshift": '''
def _ulshift(a, b):
    if b >= np.uint64(64):
        return np.uint64(0)
    return a << b
''',
    "_urshift": '''
def _urshift(a, b):
    if b >= np.uint64(64):
        return np.uint64(0)
    return a >> b
''',
    # np.gcd/np.lcm/np.bitwise_count of a signed int work on its magnitude in the unsigned type,
    # where |MIN| is 2^(bits-1): gcd(MIN, 0) truncates back to MIN, as NumPy's does
    "_ipow": '''
def _ipow(a, b, zero, one):
    """integer power by squaring of uint64s, wrapping (callers clamp a negative exponent to 0)."""
    r = one
    while b > zero:
        if (b & one) != zero:
            r = r * a
        a = a * a
        b = b >> one
    return r
''',
    "_uabs": '''
def _uabs(a):
    """|a| of an int64 as uint64 (|INT64_MIN| = 2^63)."""
    if a < 0:
        return np.uint64(0) - np.uint64(a)
    return np.uint64(a)
''',
    "_gcd": '''
def _gcd(a, b):
    """gcd of two uint64s (Euclid; gcd(0, 0) = 0)."""
    while a != np.uint64(0):
        a, b = b % a, a
    return b
''',
    "_lcm": '''
def _lcm(a, b):
    """lcm of two uint64s as npy_lcm: a / gcd * b, wrapping; 0 when either is 0."""
    x, g = a, b
    while x != np.uint64(0):
        x, g = g % x, x
    if g == np.uint64(0):
        return np.uint64(0)
    return a // g * b
''',
}


for _side, _below in (("left", "x < v or (v != v and x == x)"),
                      ("right", "not (v < x or (x != x and v == v))")):
    _SOURCES[f"_search_{_side}"] = f'''
def _search_{_side}(a, n, st, v):
    """np.searchsorted(a[:n:st], v, side="{_side}") of a sorted a, NaN after every number (a
    binary search; the CPU passes st 1, the GPU the flat buffer's stride)."""
    lo, hi = np.int64(0), np.int64(n)
    while lo < hi:
        mid = (lo + hi) >> 1
        x = a[mid * st]
        if {_below}:
            lo = mid + 1
        else:
            hi = mid
    return lo
'''


def decorated(decorator: str) -> dict[str, str]:
    """Each helper's name -> its source under ``decorator`` (one line, e.g. ``@numba.njit(...)``)."""
    return {name: f"\n{decorator}{src}" for name, src in _SOURCES.items()}


def float_sources(T: str, decorator: str, math) -> dict[str, str]:
    """The float helpers of ``T`` under ``decorator``; ``math(name)`` spells a C math function for
    the emitter (``np.fmod``, ``ld.fmodf``): ``_floordiv_<T>``, ``_remainder_<T>`` (npy_divmod) and
    :func:`logaddexp_sources`'."""
    fmod, floor, copysign = math("fmod"), math("floor"), math("copysign")
    out = {f"_floordiv_{T}": f'''
{decorator}
def _floordiv_{T}(a, b):
    """np.floor_divide for {T} (npy_divmod)."""
    if b == 0:
        return np.{T}(a / b)
    mod = np.{T}({fmod}(a, b))
    div = np.{T}((a - mod) / b)
    if mod != 0:
        if (b < 0) != (mod < 0):
            div = np.{T}(div - np.{T}(1.0))
    if div != 0:
        fl = np.{T}({floor}(div))
        if div - fl > np.{T}(0.5):
            fl = np.{T}(fl + np.{T}(1.0))
        return fl
    return np.{T}({copysign}(np.{T}(0.0), np.{T}(a / b)))
''', f"_remainder_{T}": f'''
{decorator}
def _remainder_{T}(a, b):
    """np.remainder for {T} (sign of the divisor)."""
    mod = np.{T}({fmod}(a, b))
    if b == 0:
        return mod
    if mod != 0:
        if (b < 0) != (mod < 0):
            mod = np.{T}(mod + b)
        return mod
    return np.{T}({copysign}(np.{T}(0.0), b))
'''}
    return {**out, **logaddexp_sources(T, decorator, math)}


def logaddexp_sources(T: str, decorator: str, math) -> dict[str, str]:
    """``_logaddexp_<T>`` and ``_logaddexp2_<T>`` under ``decorator``; ``math(name)`` spells a math
    function for the emitter (``np.exp``, ``ld.expf``). NumPy's npy_logaddexp/npy_logaddexp2 step by
    step: equal operands first (equal infinities give no inf - inf), then the larger plus log1p of
    the smaller's share; NaN falls through. Constants: NPY_LOGE2 and NPY_LOG2E (their float32 forms
    are these doubles rounded)."""
    out = {}
    for fn, eq, exp, scale in (("logaddexp", "0.6931471805599453", "exp", ""),
                               ("logaddexp2", "1.0", "exp2", f" * np.{T}(1.4426950408889634)")):
        log1p, exp = math("log1p"), math(exp)
        out[f"_{fn}_{T}"] = f'''
{decorator}
def _{fn}_{T}(x, y):
    """np.{fn} for {T} (npy_{fn})."""
    if x == y:
        return np.{T}(x + np.{T}({eq}))
    d = np.{T}(x - y)
    if d > 0:
        return np.{T}(x + np.{T}({log1p}({exp}(-d)){scale}))
    if d <= 0:
        return np.{T}(y + np.{T}({log1p}({exp}(d)){scale}))
    return d
'''
    return out
