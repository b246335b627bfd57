"""Branch-free float64 transcendentals for the CPU kernels, which LLVM vectorises where Numba's own
``np.exp`` & co. are scalar libm calls that keep a loop scalar.

NumPy's loops for these functions are SIMD on x86 (AVX2/AVX512), so a fused kernel calling libm
lost to NumPy eager on its own op: float64 ``np.exp`` ran at 0.44x NumPy, ``np.tanh`` at 0.09x,
``np.arctan`` at 0.05x (1M elements, 2-core AVX512 VM, 2026-11-28). Each helper here is Cephes'
algorithm (range reduction, then a rational or polynomial approximation on a small interval) with
every branch made a select, special values (NaN, +-inf, +-0.0, subnormals) handled as NumPy does,
and at most a few ulp of error. float32 (and float16, which computes in float32) ops without a
float32 helper of their own (``cpu_helpers``' ``_expf``...) call these on the value widened to
float64 and round once, which is within half an ulp of float32 but for rare near-ties.

``SOURCES`` maps a helper's name to ``(source, the helpers it calls)``; ``FLOAT64`` maps a NumPy
op to its helper, ``WIDENED`` one whose helper serves float32 operands only, in place of
``FLOAT64``'s where both have one (``sin``/``cos``: NumPy's own float64 loops are scalar too; a
float32 ``tan`` through them, a call LLVM does not inline, ran at a third of libm's ``tanf``;
``arctan2``: a polynomial to float32's precision, inlined). Those three compute in float64 and
round once, as the widened ones do, but carry only float32's precision (2**-40 or better).
float32 ``power`` is ``_powf_d`` (2**(y log2|x|) in float64, rounded once: correctly rounded but
for near-ties) except where the exponent is a constant integer: the policy of
``tests/codegen/test_power_policy.py`` keeps float ``x ** 3`` bit for bit libm's (``codegen.cpu``'s
``CpuOps``); float64 ``power`` stays libm's ``pow``.
"""
from __future__ import annotations

_JIT = '@numba.njit(error_model="numpy")'
# the building blocks are inlined into each helper by Numba; a helper is inlined into the kernel's
# loop (and vectorised with it) where LLVM finds it small enough: exp, exp2, the logarithms, cosh,
# arctan, arcsin, arctanh (the others stay calls: float64 tanh still 9x libm's speed, float32 sinh
# half of it). The float32 sin, cos and arctan2 are always inlined: as calls they kept the loop
# scalar (12 and 18 ns an element, against 1.9 and 1.3 inlined). Inlining every helper into the
# loop made LLVM's loop vectoriser run for minutes on a nest whose inner loop recomputed a large
# invariant expression (expm1 and power of an outer index: fuzz seed 11 #191)
_INLINE = frozenset({"_exp2k_d", "_log_parts_d", "_atan_pos_d", "_asin_pos_d", "_exp_or_half_d", "_quarter_f",
                     "_sincos_r", "_sin_f", "_cos_f", "_arctan2_f", "_powf_d"})

# exp(x) * 2**k (k a float holding an integer; |x| <= 1100 and |x / ln 2 + k| <= 2044, which every
# caller's clamp keeps, so that both halves of the power of two are normal): Cephes' exp (n ln2 split in two, a
# [2/3] Pade form of e^r on |r| <= ln2/2; peak error 2.2e-16), the power of two applied as two
# factors so that a subnormal result is rounded once
_EXP2K = '''
def _exp2k_d(x, k):
    n = np.floor(x * 1.4426950408889634 + 0.5)
    r = x - n * 6.93145751953125e-1
    r = r - n * 1.42860682030941723212e-6
    xx = r * r
    px = r * ((1.26177193074810590878e-4 * xx + 3.02994407707441961300e-2) * xx + 9.99999999999999999910e-1)
    qx = ((3.00198505138664455042e-6 * xx + 2.52448340349684104192e-3) * xx
          + 2.27265548208155028766e-1) * xx + 2.00000000000000000009e0
    y = 1.0 + 2.0 * (px / (qx - px))
    n = n + k
    n1 = np.floor(n * 0.5)
    n2 = n - n1
    s1 = np.int64((np.int64(n1) + np.int64(1023)) << np.int64(52)).view(np.float64)
    s2 = np.int64((np.int64(n2) + np.int64(1023)) << np.int64(52)).view(np.float64)
    return (y * s1) * s2
'''

_EXP = '''
def _exp_d(x):
    """np.exp of a float64 (below -746: 0, computed from e^0 and replaced, as a subnormal product
    of the clamp would take a microcode assist a lane: _expf's reason)."""
    xc = 710.0 if x > 710.0 else (0.0 if x < -746.0 else x)
    e = _exp2k_d(xc, 0.0)
    e = 0.0 if x < -746.0 else e
    return x if x != x else e
'''

_EXP2 = '''
def _exp2_d(x):
    """np.exp2 of a float64: 2**n times e**(r ln 2) for x = n + r, n an integer (exact)."""
    xc = 1100.0 if x > 1100.0 else (-1100.0 if x < -1100.0 else x)
    n = np.floor(xc + 0.5)
    e = _exp2k_d((xc - n) * 0.6931471805599453, n)
    return x if x != x else e
'''

_EXPM1 = '''
def _expm1_d(x):
    """np.expm1 of a float64 (Kahan: (u - 1) * x / log(u) with u = e**x rounded, which cancels
    the rounding of u; x itself where u rounds to 1)."""
    xc = 710.0 if x > 710.0 else (-746.0 if x < -746.0 else x)
    u = _exp2k_d(xc, 0.0)
    um = u - 1.0
    r = um * (xc / _log_d(u))
    r = x if u == 1.0 else r
    r = -1.0 if um == -1.0 else r
    r = np.inf if x > 709.782712893384 else r
    return x if x != x else r
'''

# log(x) as (e, f, g): x = 2**e * (1 + f), 1 + f in [sqrt(1/2), sqrt(2)), and g the correction
# with log(1 + f) = f + g (Cephes' log: a [5/5] rational form, peak error 1.9e-16); subnormals
# are scaled by 2**52 first
_LOG_PARTS = '''
def _log_parts_d(x):
    tiny = x < 2.2250738585072014e-308
    xs = x * 4503599627370496.0 if tiny else x
    bits = np.float64(xs).view(np.int64)
    e = np.float64(np.int64((bits >> np.int64(52)) & np.int64(2047)) - np.int64(1022)) - (52.0 if tiny else 0.0)
    m = np.int64((bits & np.int64(0x000fffffffffffff)) | np.int64(0x3fe0000000000000)).view(np.float64)
    low = m < 0.70710678118654752440
    e = e - 1.0 if low else e
    f = (m + m - 1.0) if low else (m - 1.0)
    z = f * f
    p = ((((1.01875663804580931796e-4 * f + 4.97494994976747001425e-1) * f + 4.70579119878881725854e0) * f
          + 1.44989225341610930846e1) * f + 1.79368678507819816313e1) * f + 7.70838733755885391666e0
    q = ((((f + 1.12873587189167450590e1) * f + 4.52279145837532221105e1) * f + 8.29875266912776603211e1) * f
         + 7.11544750618563894466e1) * f + 2.31251620126765340583e1
    g = f * (z * p / q) - 0.5 * z
    return e, f, g
'''

# the special values every logarithm shares: log(0) = -inf, log(x < 0) = NaN, log(inf) = inf
_LOG_SPECIALS = '''
    r = -np.inf if x == 0.0 else r
    r = np.nan if x < 0.0 else r
    r = x if x == np.inf else r
    return x if x != x else r
'''

_LOG = '''
def _log_d(x):
    """np.log of a float64."""
    e, f, g = _log_parts_d(x)
    r = ((g - e * 2.121944400546905827679e-4) + f) + e * 0.693359375
''' + _LOG_SPECIALS

_LOG2 = '''
def _log2_d(x):
    """np.log2 of a float64 (exact at powers of two): log2(e) - 1 applied to the small parts first."""
    e, f, g = _log_parts_d(x)
    r = g * 0.44269504088896340736 + f * 0.44269504088896340736 + g + f + e
''' + _LOG_SPECIALS

_LOG10 = '''
def _log10_d(x):
    """np.log10 of a float64: log10(e) and log10(2) each split in two (Cephes' log10)."""
    e, f, g = _log_parts_d(x)
    r = g * 7.00731903251827651129e-4 + f * 7.00731903251827651129e-4 + e * 2.48745663981195213739e-4
    r = r + g * 4.3359375e-1 + f * 4.3359375e-1 + e * 3.0078125e-1
''' + _LOG_SPECIALS

_LOG1P = '''
def _log1p_d(x):
    """np.log1p of a float64: log(u) - ((u - 1) - x) / u with u = 1 + x rounded (the correction
    carries what the rounding of u lost); x itself where u rounds to 1."""
    u = 1.0 + x
    d = u - 1.0
    r = _log_d(u) - (d - x) / u
    r = x if d == 0.0 else r
    r = x if x == np.inf else r
    r = -np.inf if x == -1.0 else r
    return x if x != x else r
'''

# float64 sign handling: the magnitude's result with x's sign bit (so -0.0 keeps its sign)
_NEG = "np.float64(x).view(np.int64) < np.int64(0)"

_TANH = f'''
def _tanh_d(x):
    """np.tanh of a float64 (Cephes: x + x**3 P/Q below 0.625, else 1 - 2 / (e**2|x| + 1))."""
    a = abs(x)
    s = x * x
    p = (-9.64399179425052238628e-1 * s - 9.92877231001918586564e1) * s - 1.61468768441708447952e3
    q = ((s + 1.12811678491632931402e2) * s + 2.23548839060100448583e3) * s + 4.84406305325125486048e3
    small = x + x * s * (p / q)
    ac = 710.0 if a > 710.0 else a
    big = 1.0 - 2.0 / (_exp2k_d(2.0 * ac if ac < 355.0 else 710.0, 0.0) + 1.0)
    big = -big if {_NEG} else big
    r = small if a < 0.625 else big
    return x if (x != x) | (x == 0.0) else r
'''

# sinh and cosh: e**|x| past 0.5 (and (e**(|x|/2) / 2) * e**(|x|/2) where e**|x| would overflow
# but the result does not)
_EXP_OR_HALF = '''
def _exp_or_half_d(a):
    """e**a, or e**(a/2) from a = 709 on (the caller squares it)."""
    t = a if a < 709.0 else 0.5 * a
    t = 1100.0 if t > 1100.0 else t
    return _exp2k_d(t, 0.0)
'''

_SINH = f'''
def _sinh_d(x):
    """np.sinh of a float64 (Cephes: a [3/3] rational form below 0.5)."""
    a = abs(x)
    s = x * x
    p = ((-7.89474443963537015605e-1 * s - 1.63725857525983828727e2) * s - 1.15614435765005216044e4) * s \\
        - 3.51754964808151394800e5
    q = ((s - 2.77711081420602794433e2) * s + 3.61578279834431989373e4) * s - 2.11052978884890840399e6
    small = x + x * s * (p / q)
    v = _exp_or_half_d(a)
    big = (0.5 * v) * v if a >= 709.0 else 0.5 * v - 0.5 / v
    big = -big if {_NEG} else big
    r = small if a <= 0.5 else big
    return x if x != x else r
'''

_COSH = '''
def _cosh_d(x):
    """np.cosh of a float64."""
    a = abs(x)
    v = _exp_or_half_d(a)
    r = (0.5 * v) * v if a >= 709.0 else 0.5 * v + 0.5 / v
    return x if x != x else r
'''

# arctan of t >= 0 (Cephes' atan: reduced to |t'| <= 0.66 by pi/2 - atan(1/t) or pi/4 +
# atan((t-1)/(t+1)), a [4/5] rational form; pi/2 and pi/4 carry their low bits)
_ATAN_POS = '''
def _atan_pos_d(t):
    big = t > 2.41421356237309504880
    mid = t > 0.66
    u = -1.0 / t if big else ((t - 1.0) / (t + 1.0) if mid else t)
    z = u * u
    p = (((-8.750608600031904122785e-1 * z - 1.615753718733365076637e1) * z - 7.500855792314704667340e1) * z
         - 1.228866684490136173410e2) * z - 6.485021904942025371773e1
    q = ((((z + 2.485846490142306297962e1) * z + 1.650270098316988542046e2) * z + 4.328810604912902668951e2) * z
         + 4.853903996359136964868e2) * z + 1.945506571482613964425e2
    w = u * (z * p / q) + u
    w = w + (6.123233995736765886130e-17 if big else (3.061616997868382943065e-17 if mid else 0.0))
    return (1.57079632679489661923 if big else (7.85398163397448309616e-1 if mid else 0.0)) + w
'''

_ATAN = f'''
def _arctan_d(x):
    """np.arctan of a float64."""
    r = _atan_pos_d(abs(x))
    r = -r if {_NEG} else r
    return x if x != x else r
'''

# arcsin of a in [0, 1] (Cephes' asin: a [5/5] rational form below 0.625, else
# pi/2 - 2 asin(sqrt((1 - a) / 2)) through a [4/4] form in 1 - a)
_ASIN_POS = '''
def _asin_pos_d(a):
    zz = a * a
    p = ((((4.253011369004428248960e-3 * zz - 6.019598008014123785661e-1) * zz + 5.444622390564711410273e0) * zz
          - 1.626247967210700244449e1) * zz + 1.956261983317594739197e1) * zz - 8.198089802484824371615e0
    q = ((((zz - 1.474091372988853791896e1) * zz + 7.049610280856842141659e1) * zz - 1.471791292232726029859e2) * zz
         + 1.395105614657485689735e2) * zz - 4.918853881490881290097e1
    small = a * (zz * p / q) + a
    w = 1.0 - a
    r = (((2.967721961301243206100e-3 * w - 5.634242780008963776856e-1) * w + 6.968710824104713396794e0) * w
         - 2.556901049652824852289e1) * w + 2.853665548261061424989e1
    s = (((w - 2.194779531642920639778e1) * w + 1.470656354026814941758e2) * w - 3.838770957603691357202e2) * w \\
        + 3.424398657913078477438e2
    pw = w * r / s
    sq = np.sqrt(w + w)
    big = ((7.85398163397448309616e-1 - sq) - (sq * pw - 6.123233995736765886130e-17)) + 7.85398163397448309616e-1
    return small if a <= 0.625 else big
'''

_ASIN = f'''
def _arcsin_d(x):
    """np.arcsin of a float64 (NaN outside [-1, 1])."""
    a = abs(x)
    r = _asin_pos_d(a)
    r = -r if {_NEG} else r
    r = np.nan if a > 1.0 else r
    return x if x != x else r
'''

_ACOS = '''
def _arccos_d(x):
    """np.arccos of a float64 (Cephes: 2 asin(sqrt((1 -+ x) / 2)) past |x| = 1/2, else
    pi/2 - asin(x))."""
    a = abs(x)
    far = a > 0.5
    s = _asin_pos_d(np.sqrt(0.5 * (1.0 - a)) if far else a)
    near = (7.85398163397448309616e-1 - (-s if x < 0.0 else s)) + 6.123233995736765886130e-17 \\
        + 7.85398163397448309616e-1
    r = (3.14159265358979323846 - 2.0 * s if x < 0.0 else 2.0 * s) if far else near
    r = np.nan if a > 1.0 else r
    return x if x != x else r
'''

_ATAN2 = '''
def _arctan2_d(y, x):
    """np.arctan2 of float64s: the arctan of the smaller magnitude over the larger, then its
    octant; zeros, infinities and signs as C99's atan2."""
    ax = abs(x)
    ay = abs(y)
    swap = ay > ax
    t = (ax / ay) if swap else (ay / ax)
    a = _atan_pos_d(t)
    a = ((7.85398163397448309616e-1 - a) + 6.123233995736765886130e-17 + 7.85398163397448309616e-1) if swap else a
    xneg = np.float64(x).view(np.int64) < np.int64(0)
    a = ((3.14159265358979323846 - a) + 1.2246467991473532e-16) if xneg else a
    a = (3.14159265358979323846 if xneg else 0.0) if ((ax == 0.0) & (ay == 0.0)) else a
    a = (2.356194490192345 if xneg else 7.85398163397448309616e-1) if ((ax == np.inf) & (ay == np.inf)) else a
    a = -a if np.float64(y).view(np.int64) < np.int64(0) else a
    return a if ((x == x) & (y == y)) else x + y
'''

_ARCSINH = f'''
def _arcsinh_d(x):
    """np.arcsinh of a float64: log1p(a + a**2 / (1 + sqrt(1 + a**2))), log(a) + log(2) past 2**28."""
    a = abs(x)
    big = a > 268435456.0
    ac = 1.0 if big else a
    r = _log1p_d(ac + ac * ac / (1.0 + np.sqrt(1.0 + ac * ac)))
    r = _log_d(a) + 0.6931471805599453 if big else r
    r = -r if {_NEG} else r
    return x if x != x else r
'''

_ARCTANH = f'''
def _arctanh_d(x):
    """np.arctanh of a float64: log1p(2a / (1 - a)) / 2 (+-inf at +-1, NaN past)."""
    a = abs(x)
    r = 0.5 * _log1p_d((a + a) / (1.0 - a))
    r = np.inf if a == 1.0 else r
    r = np.nan if a > 1.0 else r
    r = -r if {_NEG} else r
    return x if x != x else r
'''

_ARCCOSH = '''
def _arccosh_d(x):
    """np.arccosh of a float64: log(x + sqrt(x**2 - 1)), through log1p near 1, log(x) + log(2)
    past 2**28 (NaN below 1)."""
    big = x > 268435456.0
    xc = 2.0 if big else x
    t = xc - 1.0
    near = _log1p_d(t + np.sqrt(t + t + t * t))
    r = _log_d(x) + 0.6931471805599453 if big else near
    r = np.nan if x < 1.0 else r
    return x if x != x else r
'''

# float32 sin and cos, correctly rounded but for rare near-ties on every float32, inlined into the
# loop with the reduction shared by a sin and a cos of one value (LLVM merges the two copies):
# rotary tables' cos and sin of 2M angles up to 1000 rad, one thread, 3.8 ms for sin alone and 4.2
# ms for both, where the table-driven reduction these replaced (a call each) took 24 and 47 ms;
# NumPy's AVX512 float32 loops 1.1 ms each, at ~1.5 ulp. A float32 is x = m 2**s (m its 24-bit
# significand), and x 2/pi mod 4 needs 2/pi's bits from 2**(1-s) on: a 96-bit window of the
# 320-bit string 0, 2/pi (five 64-bit words, the window's start a select of three and a shift),
# times m in wrapping 64-bit integers, is that mod 4 to 2**-61 (Payne-Hanek with no table load:
# gathers kept the loop at a third of this speed). The polynomials are fitted for float32:
# relative error 2**-47.5 (sin) and 2**-42.9 (cos) on |r| <= pi/4.
_QUARTER = '''
def _quarter_f(a):
    """(r, q): a = (4 m + q) pi/2 + r, |r| <= pi/4, for a = |x| of a finite float32 x (as a
    float64): q from the top 2 bits, r from the other 62, of the window times a's significand."""
    b = np.uint64(np.float64(a).view(np.uint64))
    m = np.uint64(np.uint64(np.uint64(b & np.uint64(0xfffffffffffff)) | np.uint64(0x10000000000000)) >> np.uint64(29))
    p = np.int64(np.int64(b >> np.uint64(52)) - np.int64(984))
    k0 = np.uint64(np.uint64(0) - np.uint64(p < np.int64(64)))
    k2 = np.uint64(np.uint64(0) - np.uint64(p >= np.int64(128)))
    k1 = np.uint64(~np.uint64(k0 | k2))
    o = np.uint64(p & np.int64(63))
    no = np.uint64(np.uint64(63) - o)
    w0 = np.uint64(np.uint64(np.uint64(0xa2f9836e4e441529) & k1) | np.uint64(np.uint64(0xfc2757d1f534ddc0) & k2))
    w1 = np.uint64(np.uint64(np.uint64(0xa2f9836e4e441529) & k0) | np.uint64(np.uint64(0xfc2757d1f534ddc0) & k1)
                   | np.uint64(np.uint64(0xdb6295993c439041) & k2))
    w2 = np.uint64(np.uint64(np.uint64(0xfc2757d1f534ddc0) & k0) | np.uint64(np.uint64(0xdb6295993c439041) & k1)
                   | np.uint64(np.uint64(0xfe5163abdebbc561) & k2))
    h = np.uint64(np.uint64(w0 << o) | np.uint64(np.uint64(w1 >> np.uint64(1)) >> no))
    lo = np.uint64(np.uint64(np.uint64(w1 << o) | np.uint64(np.uint64(w2 >> np.uint64(1)) >> no)) >> np.uint64(32))
    f = np.uint64(np.uint64(m * h) + np.uint64(np.uint64(m * lo) >> np.uint64(32)))
    q = np.uint64(np.uint64(f + np.uint64(0x2000000000000000)) >> np.uint64(62))
    d = np.uint64(f - np.uint64(q << np.uint64(62))).view(np.int64)
    small = a < 0.7853981633974483
    return (a if small else np.float64(d) * 3.4061215800865545e-19), (np.int64(0) if small else np.int64(q))
'''

# sin and cos of |r| <= pi/4, to float32's need (see above)
_SINCOS = '''
def _sincos_r(r):
    z = r * r
    s = r + r * z * ((((-2.4760400434456275e-08 * z + 2.755533892213706e-06) * z - 0.00019841263725249459) * z
                      + 0.008333333325071747) * z - 0.16666666666630325)
    c = 1.0 - 0.5 * z + z * z * (((-2.7205684281827363e-07 * z + 2.479945930486159e-05) * z
                                  - 0.0013888883496834294) * z + 0.0416666666194533)
    return s, c
'''

_NEG32 = "np.float32(x).view(np.int32) < np.int32(0)"

_SIN = f'''
def _sin_f(x):
    """np.sin of a float32 value (given as a float64)."""
    r, q = _quarter_f(abs(x))
    s, c = _sincos_r(r)
    v = s if (q & np.int64(1)) == 0 else c
    v = -v if (q & np.int64(2)) != 0 else v
    v = -v if {_NEG32} else v
    return v if (x - x) == 0.0 else np.nan
'''

_COS = '''
def _cos_f(x):
    """np.cos of a float32 value (given as a float64)."""
    r, q = _quarter_f(abs(x))
    s, c = _sincos_r(r)
    v = c if (q & np.int64(1)) == 0 else s
    v = -v if ((q + np.int64(1)) & np.int64(2)) != 0 else v
    return v if (x - x) == 0.0 else np.nan
'''

# float32 arctan2 (values as float64): the smaller magnitude over the larger, then past tan(pi/8)
# pi/4 + arctan((t - 1) / (t + 1)), as one division (the sum and difference of two float32s are
# exact), and a polynomial fitted for float32 on |u| <= tan(pi/8) (relative error 2**-40); inlined
# and vectorised: 2M pairs 2.7 ms on one thread, 37 ms through the float64 helper's call (NumPy 1.2)
_ATAN2F = '''
def _arctan2_f(y, x):
    """np.arctan2 of float32 values (given as float64s); zeros, infinities and signs as C99's atan2."""
    ax = abs(x)
    ay = abs(y)
    swap = ay > ax
    mn = ax if swap else ay
    mx = ay if swap else ax
    mid = mn > 0.41421356237309503 * mx
    u = ((mn - mx) if mid else mn) / ((mn + mx) if mid else mx)
    z = u * u
    p = (((((-0.037920723452741625 * z + 0.06991018794247887) * z - 0.08996797385685369) * z
           + 0.11103999373211211) * z - 0.14285423384429755) * z + 0.19999994320636133) * z - 0.33333333295681367
    a = (7.85398163397448309616e-1 if mid else 0.0) + (u + u * z * p)
    a = 1.57079632679489661923 - a if swap else a
    xneg = np.float64(x).view(np.int64) < np.int64(0)
    a = 3.14159265358979323846 - a if xneg else a
    a = (3.14159265358979323846 if xneg else 0.0) if ((ax == 0.0) & (ay == 0.0)) else a
    a = (2.356194490192345 if xneg else 7.85398163397448309616e-1) if ((ax == np.inf) & (ay == np.inf)) else a
    a = -a if np.float64(y).view(np.int64) < np.int64(0) else a
    return a if ((x == x) & (y == y)) else x + y
'''

# float32 power (values as float64s): 2**(y log2|x|), every step in float64. For a finite nonzero
# float32 result |y log2|x|| < 150, so the log's and the product's rounding (a few 2**-53 of
# 150) and exp2's leave the float64 value within 2**-44 of the exact power: one rounding to float32
# is correctly rounded but for rare near-ties, where libm's powf is within 1 ulp and NumPy's SVML
# loop within 1 ulp too. Larger products are inf or 0 (the exponent clamped). Inlined and
# vectorised: the gamma correction x ** (1 / 2.2) of 512K float32s, one thread, 2.7 -> 0.9 ms
# (NumPy 2.1). Special values are C99's pow (NumPy's): 1 for y = 0 or x = 1 (a NaN's too),
# (-1) ** +-inf = 1, a negative finite x to a finite non-integer y NaN, the sign of x kept for an
# odd integer y (+-0 and +-inf included); the others follow from log2|x| = -inf, inf or NaN.
_POWF = '''
def _powf_d(x, y):
    """np.power of float32 values (given as float64s; the result rounded once by the caller)."""
    ax = abs(x)
    e, f, g = _log_parts_d(ax)
    lg = g * 0.44269504088896340736 + f * 0.44269504088896340736 + g + f + e
    lg = -np.inf if ax == 0.0 else (np.inf if ax == np.inf else (ax if ax != ax else lg))
    t = y * lg
    tc = 130.0 if t > 130.0 else (-160.0 if t < -160.0 else t)
    tc = 0.0 if t != t else tc
    n = np.floor(tc + 0.5)
    r = _exp2k_d((tc - n) * 0.6931471805599453, n)
    r = np.inf if t > 130.0 else (0.0 if t < -160.0 else r)
    fy = np.floor(y)
    hy = 0.5 * y
    odd = (fy == y) & (np.floor(hy) != hy)
    r = -r if (np.float64(x).view(np.int64) < np.int64(0)) & odd else r
    r = np.nan if (t != t) | ((x < 0.0) & (x > -np.inf) & (fy != y) & (y - y == 0.0)) else r
    return 1.0 if (y == 0.0) | (x == 1.0) | ((x == -1.0) & (abs(y) == np.inf)) else r
'''

_DEFS = (
    ("_exp2k_d", _EXP2K, ()),
    ("_exp_d", _EXP, ("_exp2k_d",)),
    ("_exp2_d", _EXP2, ("_exp2k_d",)),
    ("_log_parts_d", _LOG_PARTS, ()),
    ("_log_d", _LOG, ("_log_parts_d",)),
    ("_log2_d", _LOG2, ("_log_parts_d",)),
    ("_log10_d", _LOG10, ("_log_parts_d",)),
    ("_log1p_d", _LOG1P, ("_log_d",)),
    ("_expm1_d", _EXPM1, ("_exp2k_d", "_log_d")),
    ("_tanh_d", _TANH, ("_exp2k_d",)),
    ("_exp_or_half_d", _EXP_OR_HALF, ("_exp2k_d",)),
    ("_sinh_d", _SINH, ("_exp_or_half_d",)),
    ("_cosh_d", _COSH, ("_exp_or_half_d",)),
    ("_atan_pos_d", _ATAN_POS, ()),
    ("_arctan_d", _ATAN, ("_atan_pos_d",)),
    ("_asin_pos_d", _ASIN_POS, ()),
    ("_arcsin_d", _ASIN, ("_asin_pos_d",)),
    ("_arccos_d", _ACOS, ("_asin_pos_d",)),
    ("_arctan2_d", _ATAN2, ("_atan_pos_d",)),
    ("_arcsinh_d", _ARCSINH, ("_log1p_d", "_log_d")),
    ("_arctanh_d", _ARCTANH, ("_log1p_d",)),
    ("_arccosh_d", _ARCCOSH, ("_log1p_d", "_log_d")),
    ("_quarter_f", _QUARTER, ()),
    ("_sincos_r", _SINCOS, ()),
    ("_sin_f", _SIN, ("_quarter_f", "_sincos_r")),
    ("_cos_f", _COS, ("_quarter_f", "_sincos_r")),
    ("_arctan2_f", _ATAN2F, ()),
    ("_powf_d", _POWF, ("_log_parts_d", "_exp2k_d")),
)

def _jitted(name: str, src: str) -> str:
    jit = _JIT.replace(")", ', inline="always")') if name in _INLINE else _JIT
    return f"{jit}\n{src.strip(chr(10))}"


SOURCES: dict[str, tuple[str, tuple]] = {name: (_jitted(name, src), deps) for name, src, deps in _DEFS}

FLOAT64: dict[str, str] = {
    op: f"_{op}_d" for op in ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "sinh",
                              "cosh", "arctan", "arcsin", "arccos", "arctan2", "arcsinh", "arctanh",
                              "arccosh")}
# ops whose helper is for float32 (and float16) operands only, widened to float64
WIDENED: dict[str, str] = {"sin": "_sin_f", "cos": "_cos_f", "arctan2": "_arctan2_f", "power": "_powf_d"}
