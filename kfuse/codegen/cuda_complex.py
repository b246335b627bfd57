"""Complex numbers in the CUDA C emitter: the device prelude of complex64/complex128 values
(``kf_c64``/``kf_c128``, two floats, real then imaginary, 8/16-byte aligned: CuPy's, NumPy's and
torch's layout, so a buffer element loads as one value and two complex64 as one 16-byte vector)
and the C expressions of NumPy's complex loops (:func:`op_expr`, :func:`cast_expr`,
:func:`literal`), which :mod:`kfuse.codegen.cuda_ops` hands complex ops to.

NumPy's values, not C's: ``*`` and ``/`` are NumPy's loops (the product of its SIMD loop, two FMAs,
bit for bit; Smith's quotient, ``x / 0`` componentwise), comparisons and ``maximum``/``minimum`` are lexicographic with NumPy 2's
NaN rules, ``sign`` is ``z / |z|``; ``log1p``/``expm1``/``exp2``/``log2``/``log10`` follow NumPy's own
formulas (``log1p(z)`` is ``log(1 + z)`` computed as NumPy does, not the accurate one), ``x ** n``
for an integer ``|n| < 100`` multiplies as ``npy_cpow`` does. exp, log, sqrt, the trigonometric
and hyperbolic functions and their inverses follow C99 Annex G on infinities, NaNs and signed
zeros (as npymath and glibc, whose functions NumPy calls) and are accurate to a few ulps inside
(Kahan's formulas for the inverse functions). Everything is computed in the value's own precision
(complex64 in float), each add and multiply rounded on its own (``--fmad=false``).
"""
from __future__ import annotations

import dataclasses

from ..errors import UnsupportedError
from . import kernel_ir as K

COMPLEX = {"complex64": "float", "complex128": "double"}      # dtype -> its parts' C type
# a complex cumprod's step and start (:func:`unit_scans`)
PROD_SCAN, UNIT = "cumprod_step", "complex cumprod unit"
CTYPE = {"complex64": "kf_c64", "complex128": "kf_c128"}


def is_complex(dt) -> bool:
    return dt in COMPLEX


PRELUDE = r"""
// ---- kfuse complex prelude (codegen.cuda_complex): NumPy's complex64/complex128 loops
template <typename T> struct __align__(2 * sizeof(T)) KfCx { T re, im; };
typedef KfCx<float> kf_c64;
typedef KfCx<double> kf_c128;
template <typename T> __device__ __forceinline__ KfCx<T> kf_cx(T r, T i) { KfCx<T> z; z.re = r; z.im = i; return z; }
// per-precision constants: exp overflows past `ovf`; on [ovf, sovf) exp(x) * (cos y, sin y) can
// still be finite and is computed scaled by 2^-K; past `big` cosh(x) and sinh(x) are exp(|x|)/2
template <typename T> struct KfCxT;
template <> struct KfCxT<float> {
  static __device__ __forceinline__ float inf() { return __int_as_float(0x7f800000); }
  static __device__ __forceinline__ float nan() { return __int_as_float(0x7fc00000); }
  static constexpr float max = 3.40282347e+38f, min = 1.17549435e-38f, ovf = 88.7228394f, sovf = 192.694916f;
  static constexpr float big = 9.0f, tbig = 11.0f, rbig = 1.0e18f, near1 = 1.0e-4f;
  static constexpr int mant = 24, K = 235;
};
template <> struct KfCxT<double> {
  static __device__ __forceinline__ double inf() { return __longlong_as_double(0x7ff0000000000000LL); }
  static __device__ __forceinline__ double nan() { return __longlong_as_double(0x7ff8000000000000LL); }
  static constexpr double max = 1.7976931348623157e+308, min = 2.2250738585072014e-308;
  static constexpr double ovf = 709.782712893384, sovf = 1454.9159319953251;
  static constexpr double big = 22.0, tbig = 22.0, rbig = 1.0e150, near1 = 1.0e-8;
  static constexpr int mant = 53, K = 1799;
};
#define KF_LN2 0.6931471805599453094
#define KF_PI_2 1.5707963267948966192
template <typename T> __device__ __forceinline__ bool kf_fin(T x) { return fabs(x) < KfCxT<T>::inf(); }
template <typename T> __device__ __forceinline__ bool kf_isinf_(T x) { return fabs(x) == KfCxT<T>::inf(); }
template <typename T> __device__ __forceinline__ KfCx<T> operator+(KfCx<T> a, KfCx<T> b) { return kf_cx(a.re + b.re, a.im + b.im); }
template <typename T> __device__ __forceinline__ KfCx<T> operator-(KfCx<T> a, KfCx<T> b) { return kf_cx(a.re - b.re, a.im - b.im); }
template <typename T> __device__ __forceinline__ KfCx<T> operator-(KfCx<T> a) { return kf_cx(-a.re, -a.im); }
// NumPy's multiply loop is SIMD with FMAs (re = fma(a, c, -(b d)), im = fma(a, d, b c)): its bits;
// npy_cpow's own products (npymath's cmul) round each term: kf_cmul
template <typename T> __device__ __forceinline__ KfCx<T> operator*(KfCx<T> a, KfCx<T> b) {
  return kf_cx(fma(a.re, b.re, -(a.im * b.im)), fma(a.re, b.im, a.im * b.re));
}
template <typename T> __device__ __forceinline__ KfCx<T> kf_cmul(KfCx<T> a, KfCx<T> b) {
  return kf_cx(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
// NumPy's complex divide loop: Smith's algorithm scaled by the larger part of b; a zero divisor
// divides each part by zero (inf or nan per part)
template <typename T> __device__ __forceinline__ KfCx<T> operator/(KfCx<T> a, KfCx<T> b) {
  const T br = fabs(b.re), bi = fabs(b.im);
  if (br >= bi) {
    if (br == (T)0 && bi == (T)0) return kf_cx(a.re / br, a.im / bi);
    const T q = b.im / b.re, s = (T)1 / (b.re + b.im * q);
    return kf_cx((a.re + a.im * q) * s, (a.im - a.re * q) * s);
  }
  const T q = b.re / b.im, s = (T)1 / (b.im + b.re * q);
  return kf_cx((a.re * q + a.im) * s, (a.im * q - a.re) * s);
}
template <typename T> __device__ __forceinline__ bool operator==(KfCx<T> a, KfCx<T> b) { return a.re == b.re && a.im == b.im; }
template <typename T> __device__ __forceinline__ bool operator!=(KfCx<T> a, KfCx<T> b) { return a.re != b.re || a.im != b.im; }
// the arg-reductions' pair order (cuda_ops' kf_argcomb, after its NaN test): lexicographic
template <typename T> __device__ __forceinline__ bool operator<(KfCx<T> a, KfCx<T> b) { return a.re < b.re || (a.re == b.re && a.im < b.im); }
template <typename T> __device__ __forceinline__ bool operator>(KfCx<T> a, KfCx<T> b) { return b < a; }
// NumPy 2's ordering: by real part (a NaN imaginary part makes the real parts incomparable), then imaginary
template <typename T> __device__ __forceinline__ bool kf_clt(KfCx<T> a, KfCx<T> b) {
  return (a.re < b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im < b.im);
}
template <typename T> __device__ __forceinline__ bool kf_cle(KfCx<T> a, KfCx<T> b) {
  return (a.re < b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im <= b.im);
}
template <typename T> __device__ __forceinline__ bool kf_cnan(KfCx<T> a) { return a.re != a.re || a.im != a.im; }
// maximum/minimum: a NaN operand (either part) wins, the first one first; else the larger (smaller),
// the second on ties; fmax/fmin: the other operand wins over a NaN
template <typename T, bool MAX> __device__ __forceinline__ KfCx<T> kf_cmaxmin(KfCx<T> a, KfCx<T> b) {
  return (kf_cnan(a) || (MAX ? kf_cle(b, a) : kf_cle(a, b))) ? a : b;
}
template <typename T, bool MAX> __device__ __forceinline__ KfCx<T> kf_cfmaxmin(KfCx<T> a, KfCx<T> b) {
  return (kf_cnan(b) || (MAX ? kf_cle(b, a) : kf_cle(a, b))) ? a : b;
}
template <typename T> __device__ __forceinline__ KfCx<T> kf_csquare(KfCx<T> a) { return a * a; }
// 1 / z as NumPy's reciprocal loop: scaled by the larger part (0 gives nan + nan i)
template <typename T> __device__ __forceinline__ KfCx<T> kf_crecip(KfCx<T> a) {
  if (fabs(a.im) <= fabs(a.re)) {
    const T q = a.im / a.re, d = a.re + a.im * q;
    return kf_cx((T)1 / d, -q / d);
  }
  const T q = a.re / a.im, d = a.re * q + a.im;
  return kf_cx(q / d, (T)-1 / d);
}
// np.sign: z / |z|; 0 for 0, nan for a NaN part or two infinite parts, the unit of an infinite part
template <typename T> __device__ __forceinline__ KfCx<T> kf_csign(KfCx<T> a) {
  const T h = hypot(a.re, a.im);
  if (h != h || (kf_isinf_(a.re) && kf_isinf_(a.im))) return kf_cx(KfCxT<T>::nan(), KfCxT<T>::nan());
  if (kf_isinf_(h)) {
    if (kf_isinf_(a.re)) return kf_cx(a.re > (T)0 ? (T)1 : (T)-1, (T)0);
    return kf_cx((T)0, a.im > (T)0 ? (T)1 : (T)-1);
  }
  if (h == (T)0) return kf_cx((T)0, (T)0);
  return kf_cx(a.re / h, a.im / h);
}
// e^x (cos y, sin y) for e^x past the float range: exp(x - K ln2) times the unit, each part's
// mantissa scaled by 2^K (and `e`) in one ldexp, so a finite result is not lost to overflow
template <typename T> __device__ KfCx<T> kf_cexp_scaled(T x, T y, int e) {
  int em, ec, es;
  const T m = frexp(exp(x - (T)KfCxT<T>::K * (T)KF_LN2), &em);
  const T c = frexp(cos(y), &ec), s = frexp(sin(y), &es);
  e += em + KfCxT<T>::K;
  return kf_cx(ldexp(m * c, e + ec), ldexp(m * s, e + es));
}
template <typename T> __device__ KfCx<T> kf_cexp(KfCx<T> z) {
  const T x = z.re, y = z.im, nan = KfCxT<T>::nan();
  if (kf_fin(x)) {
    if (!kf_fin(y)) return kf_cx(nan, nan);
    if (y == (T)0) return kf_cx(exp(x), y);
    if (x >= (T)KfCxT<T>::ovf && x <= (T)KfCxT<T>::sovf) return kf_cexp_scaled(x, y, 0);
    const T e = exp(x);
    return kf_cx(e * cos(y), e * sin(y));
  }
  if (x != x) return kf_cx(x, y == (T)0 ? y : nan);
  if (x > (T)0) {                       // +inf
    if (y == (T)0) return kf_cx(x, y);
    if (!kf_fin(y)) return kf_cx(x, nan);
    return kf_cx(x * cos(y), x * sin(y));
  }
  if (!kf_fin(y)) return kf_cx((T)0, copysign((T)0, y));   // -inf
  return kf_cx((T)0 * cos(y), (T)0 * sin(y));
}
// log|z| without overflow or loss near |z| = 1 (log1p of (max - 1)(max + 1) + min^2) or for subnormal |z|
template <typename T> __device__ KfCx<T> kf_clog(KfCx<T> z) {
  const T ax = fabs(z.re), ay = fabs(z.im);
  T r;
  if (ax != ax && kf_fin(ay)) return kf_cx(ax, KfCxT<T>::nan());
  if (ax > KfCxT<T>::max / (T)4 || ay > KfCxT<T>::max / (T)4) {
    r = log(hypot(ax / (T)2, ay / (T)2)) + (T)KF_LN2;
  } else if (ax < KfCxT<T>::min && ay < KfCxT<T>::min) {
    if (ax == (T)0 && ay == (T)0) return kf_cx(-KfCxT<T>::inf(), atan2(z.im, z.re));
    const int m = KfCxT<T>::mant;
    r = log(hypot(ldexp(ax, m), ldexp(ay, m))) - (T)m * (T)KF_LN2;
  } else {
    const T h = hypot(ax, ay);
    if (h >= (T)0.71 && h <= (T)1.73) {
      const T hi = ax > ay ? ax : ay, lo = ax > ay ? ay : ax;
      r = log1p((hi - (T)1) * (hi + (T)1) + lo * lo) / (T)2;
    } else {
      r = log(h);
    }
  }
  return kf_cx(r, atan2(z.im, z.re));
}
// principal square root (CACM algorithm 312) with Annex G's special values; parts past max/(1+sqrt 2) scaled by 1/4
template <typename T> __device__ KfCx<T> kf_csqrt(KfCx<T> z) {
  T a = z.re, b = z.im;
  if (a == (T)0 && b == (T)0) return kf_cx((T)0, b);
  if (kf_isinf_(b)) return kf_cx(KfCxT<T>::inf(), b);
  if (a != a) return kf_cx(a, KfCxT<T>::nan());
  if (kf_isinf_(a)) {
    const T d = b - b;                  // nan for a NaN b, else 0
    return a < (T)0 ? kf_cx(fabs(d), copysign(a, b)) : kf_cx(a, copysign(d, b));
  }
  const bool scale = fabs(a) >= KfCxT<T>::max / (T)2.4142135623730951 || fabs(b) >= KfCxT<T>::max / (T)2.4142135623730951;
  if (scale) { a *= (T)0.25; b *= (T)0.25; }
  KfCx<T> r;
  if (a >= (T)0) {
    const T t = sqrt((a + hypot(a, b)) * (T)0.5);
    r = kf_cx(t, b / ((T)2 * t));
  } else {
    const T t = sqrt((hypot(a, b) - a) * (T)0.5);
    r = kf_cx(fabs(b) / ((T)2 * t), copysign(t, b));
  }
  if (scale) r.re *= (T)2;
  return r;
}
// C99 Annex G's product (C's `*` on complex, as glibc's cpow computes b log a): the plain
// product, but where both parts come out NaN an infinite factor is boxed to +-1 (NaNs in the other
// factor to 0) and the product recomputed times infinity
template <typename T> __device__ KfCx<T> kf_cmul_g(KfCx<T> z, KfCx<T> w) {
  T a = z.re, b = z.im, c = w.re, d = w.im;
  const T ac = a * c, bd = b * d, ad = a * d, bc = b * c;
  const T x = ac - bd, y = ad + bc;
  if (x == x || y == y) return kf_cx(x, y);
  bool again = false;
  auto box = [](T& p, T& q, T& r, T& s) {     // p + iq infinite: its parts to +-1/+-0, NaNs of r + is to 0
    p = copysign(kf_isinf_(p) ? (T)1 : (T)0, p); q = copysign(kf_isinf_(q) ? (T)1 : (T)0, q);
    if (r != r) r = copysign((T)0, r);
    if (s != s) s = copysign((T)0, s);
  };
  if (kf_isinf_(a) || kf_isinf_(b)) { box(a, b, c, d); again = true; }
  if (kf_isinf_(c) || kf_isinf_(d)) { box(c, d, a, b); again = true; }
  if (!again && (kf_isinf_(ac) || kf_isinf_(bd) || kf_isinf_(ad) || kf_isinf_(bc))) {
    if (a != a) a = copysign((T)0, a);
    if (b != b) b = copysign((T)0, b);
    if (c != c) c = copysign((T)0, c);
    if (d != d) d = copysign((T)0, d);
    again = true;
  }
  if (!again) return kf_cx(x, y);
  return kf_cx(KfCxT<T>::inf() * (a * c - b * d), KfCxT<T>::inf() * (a * d + b * c));
}
// npy_cpow: 1 for a zero exponent; 0 (or nan for Re b <= 0) at a zero base; an integer exponent
// below 100 in magnitude by repeated squaring (1 and 2 and 3 unrolled); else exp(b log a)
template <typename T> __device__ KfCx<T> kf_cpow(KfCx<T> a, KfCx<T> b) {
  if (b.re == (T)0 && b.im == (T)0) return kf_cx((T)1, (T)0);
  if (a.re == (T)0 && a.im == (T)0) {
    if (b.re > (T)0) return kf_cx((T)0, (T)0);
    return kf_cx(KfCxT<T>::nan(), KfCxT<T>::nan());
  }
  if (b.im == (T)0 && b.re > (T)-100 && b.re < (T)100 && (T)(int)b.re == b.re) {
    int n = (int)b.re;
    if (n == 1) return a;
    if (n == 2) return kf_cmul(a, a);
    if (n == 3) return kf_cmul(a, kf_cmul(a, a));
    if (n < 0) n = -n;
    KfCx<T> acc = kf_cx((T)1, (T)0), p = a;
    for (int bit = 1;; bit <<= 1) {
      if (n & bit) acc = kf_cmul(acc, p);
      if (n < (bit << 1)) break;
      p = kf_cmul(p, p);
    }
    return b.re < (T)0 ? kf_cx((T)1, (T)0) / acc : acc;
  }
  return kf_cexp(kf_cmul_g(b, kf_clog(a)));
}
template <typename T> __device__ __forceinline__ KfCx<T> kf_mul_i(KfCx<T> z) { return kf_cx(-z.im, z.re); }
template <typename T> __device__ __forceinline__ KfCx<T> kf_div_i(KfCx<T> z) { return kf_cx(z.im, -z.re); }
// cosh/sinh of x + iy: cosh(x) cos(y) + i sinh(x) sin(y) and sinh(x) cos(y) + i cosh(x) sin(y);
// past `big` cosh and sinh are exp(|x|)/2 (scaled past the float range); Annex G's special values
template <typename T, bool SINH> __device__ KfCx<T> kf_ccoshsinh(KfCx<T> z) {
  const T x = z.re, y = z.im, ax = fabs(x);
  const bool xf = kf_fin(x), yf = kf_fin(y);
  if (xf && yf) {
    if (y == (T)0) return SINH ? kf_cx(sinh(x), y) : kf_cx(cosh(x), x * y);
    if (ax < (T)KfCxT<T>::big) {
      return SINH ? kf_cx(sinh(x) * cos(y), cosh(x) * sin(y)) : kf_cx(cosh(x) * cos(y), sinh(x) * sin(y));
    }
    if (ax < (T)KfCxT<T>::ovf) {
      const T h = exp(ax) * (T)0.5;
      return SINH ? kf_cx(copysign(h, x) * cos(y), h * sin(y)) : kf_cx(h * cos(y), copysign(h, x) * sin(y));
    }
    if (ax < (T)KfCxT<T>::sovf) {
      const KfCx<T> w = kf_cexp_scaled(ax, y, -1);
      return SINH ? kf_cx(x < (T)0 ? -w.re : w.re, w.im) : kf_cx(w.re, x < (T)0 ? -w.im : w.im);
    }
    const T h = KfCxT<T>::max * x;      // overflows, with x's sign
    return SINH ? kf_cx(h * cos(y), h * h * sin(y)) : kf_cx(h * h * cos(y), h * sin(y));
  }
  const T d = y - y;                    // nan where y is not finite
  if (x == (T)0 && !yf) return SINH ? kf_cx(copysign((T)0, x * d), d) : kf_cx(d, copysign((T)0, x * d));
  if (y == (T)0 && !xf) {
    if (SINH) return x != x ? z : kf_cx(x, copysign((T)0, y));
    return kf_cx(x * x, copysign((T)0, x) * y);
  }
  if (xf) return kf_cx(d, x * d);
  if (x == x) {                         // x infinite
    if (!yf) return kf_cx(x * x, x * d);
    return SINH ? kf_cx(x * cos(y), KfCxT<T>::inf() * sin(y)) : kf_cx((x * x) * cos(y), x * sin(y));
  }
  return kf_cx((x * x) * d, (x + x) * d);
}
// tanh(x + iy) by Kahan's formula (t = tan y, s = sinh x): (s sqrt(1 + s^2)(1 + t^2) + i t) / (1 + (1 + t^2) s^2);
// past `tbig`, sign(x) + 4 i sin(y) cos(y) exp(-2|x|)
template <typename T> __device__ KfCx<T> kf_ctanh(KfCx<T> z) {
  const T x = z.re, y = z.im;
  if (!kf_fin(x)) {
    if (x != x) return kf_cx(x, y == (T)0 ? y : x * y);
    return kf_cx(copysign((T)1, x), copysign((T)0, kf_isinf_(y) ? y : sin(y) * cos(y)));
  }
  if (!kf_fin(y)) return kf_cx(x == (T)0 ? x : y - y, y - y);
  if (fabs(x) >= (T)KfCxT<T>::tbig) {
    const T e = exp(-fabs(x));
    return kf_cx(copysign((T)1, x), (T)4 * sin(y) * cos(y) * e * e);
  }
  const T t = tan(y), beta = (T)1 + t * t, s = sinh(x), rho = sqrt((T)1 + s * s);
  const T den = (T)1 + beta * s * s;
  return kf_cx((beta * rho * s) / den, t / den);
}
// sin(z) = -i sinh(iz), cos(z) = cosh(iz), tan(z) = -i tanh(iz); sin(x +- i inf) is nan + i inf for x inf or nan, as glibc's
template <typename T> __device__ __forceinline__ KfCx<T> kf_csin(KfCx<T> z) {
  if (!kf_fin(z.re) && kf_isinf_(z.im)) return kf_cx(KfCxT<T>::nan(), KfCxT<T>::inf());
  return kf_div_i(kf_ccoshsinh<T, true>(kf_mul_i(z)));
}
template <typename T> __device__ __forceinline__ KfCx<T> kf_ccos(KfCx<T> z) { return kf_ccoshsinh<T, false>(kf_mul_i(z)); }
template <typename T> __device__ __forceinline__ KfCx<T> kf_ctan(KfCx<T> z) { return kf_div_i(kf_ctanh(kf_mul_i(z))); }
// Kahan's inverse functions (Branch cuts for complex elementary functions, 1987): products of
// two square roots, which never cancel; signed zeros pick the side of a branch cut. Finite z only.
template <typename T> __device__ KfCx<T> kf_casin_fin(KfCx<T> z) {
  const KfCx<T> s1 = kf_csqrt(kf_cx((T)1 - z.re, -z.im)), s2 = kf_csqrt(kf_cx((T)1 + z.re, z.im));
  return kf_cx(atan2(z.re, s1.re * s2.re - s1.im * s2.im), asinh(s1.re * s2.im - s1.im * s2.re));
}
// Annex G's values where a part is infinite or NaN: `pi4` where both parts are infinite
template <typename T> __device__ KfCx<T> kf_casinh(KfCx<T> z) {
  const T x = z.re, y = z.im, inf = KfCxT<T>::inf(), nan = KfCxT<T>::nan();
  if (x != x || y != y) {
    if (kf_isinf_(x)) return kf_cx(x, nan);
    if (kf_isinf_(y)) return kf_cx(copysign(inf, x), nan);
    return kf_cx(nan, y == (T)0 ? y : nan);
  }
  if (kf_isinf_(x) || kf_isinf_(y)) {
    const T im = kf_isinf_(y) ? (kf_isinf_(x) ? (T)(KF_PI_2 / 2) : (T)KF_PI_2) : (T)0;
    return kf_cx(copysign(inf, x), copysign(im, y));
  }
  return kf_div_i(kf_casin_fin(kf_mul_i(z)));     // asinh(z) = -i asin(iz)
}
// asin(z) = -i asinh(iz) as the parts of asinh(y + ix) swapped, as NumPy computes it: the same value
// for finite z, and NumPy's signs where a part is NaN and the other infinite
template <typename T> __device__ __forceinline__ KfCx<T> kf_casin(KfCx<T> z) {
  const KfCx<T> w = kf_casinh(kf_cx(z.im, z.re));
  return kf_cx(w.im, w.re);
}
template <typename T> __device__ KfCx<T> kf_cacos(KfCx<T> z) {
  const T x = z.re, y = z.im, inf = KfCxT<T>::inf(), nan = KfCxT<T>::nan();
  if (x != x || y != y) {
    if (kf_isinf_(x)) return kf_cx(nan, -inf);
    if (kf_isinf_(y)) return kf_cx(nan, -y);
    return kf_cx(x == (T)0 ? (T)KF_PI_2 : nan, nan);
  }
  if (kf_isinf_(x) || kf_isinf_(y)) {
    const T re = !kf_isinf_(x) ? (T)KF_PI_2 : kf_isinf_(y) ? (x > (T)0 ? (T)(KF_PI_2 / 2) : (T)(3 * KF_PI_2 / 2))
                                            : (x > (T)0 ? (T)0 : (T)(2 * KF_PI_2));
    return kf_cx(re, -copysign(inf, y));
  }
  const KfCx<T> s1 = kf_csqrt(kf_cx((T)1 - x, -y)), s2 = kf_csqrt(kf_cx((T)1 + x, y));
  return kf_cx((T)2 * atan2(s1.re, s2.re), asinh(s2.re * s1.im - s2.im * s1.re));
}
template <typename T> __device__ KfCx<T> kf_cacosh(KfCx<T> z) {
  const T x = z.re, y = z.im, inf = KfCxT<T>::inf(), nan = KfCxT<T>::nan();
  if (x != x || y != y) return kf_cx(kf_isinf_(x) || kf_isinf_(y) ? inf : nan, x == (T)0 ? (T)KF_PI_2 : nan);
  if (kf_isinf_(x) || kf_isinf_(y)) {
    const T im = !kf_isinf_(x) ? (T)KF_PI_2 : kf_isinf_(y) ? (x > (T)0 ? (T)(KF_PI_2 / 2) : (T)(3 * KF_PI_2 / 2))
                                            : (x > (T)0 ? (T)0 : (T)(2 * KF_PI_2));
    return kf_cx(inf, copysign(im, y));
  }
  const KfCx<T> s1 = kf_csqrt(kf_cx(x - (T)1, y)), s2 = kf_csqrt(kf_cx(x + (T)1, y));
  return kf_cx(asinh(s1.re * s2.re + s1.im * s2.im), (T)2 * atan2(s1.im, s2.re));
}
// atanh(x + iy) = log1p(4|x| / ((1 - |x|)^2 + y^2)) / 4 (x's sign) + i atan2(2y, (1 - x^2) - y^2) / 2;
// past `rbig` in magnitude, Re(1/z) + i sign(y) pi/2
template <typename T> __device__ KfCx<T> kf_catanh(KfCx<T> z) {
  const T x = z.re, y = z.im, ax = fabs(x), ay = fabs(y), nan = KfCxT<T>::nan();
  if (x != x || y != y) {
    if (kf_isinf_(x) || kf_isinf_(y)) return kf_cx(copysign((T)0, x), kf_isinf_(y) ? copysign((T)KF_PI_2, y) : nan);
    return kf_cx(x == (T)0 ? x : nan, nan);
  }
  if (ax > (T)KfCxT<T>::rbig || ay > (T)KfCxT<T>::rbig) {
    const T re = kf_isinf_(x) || kf_isinf_(y) ? copysign((T)0, x) : kf_crecip(z).re;
    return kf_cx(re, copysign((T)KF_PI_2, y));
  }
  if (ax == (T)1 && y == (T)0) return kf_cx(copysign(KfCxT<T>::inf(), x), y);
  const T om = (T)1 - ax, d = hypot(om, ay);
  // near z = +-1, (1 - |x|)^2 + y^2 underflows: log(4|x|) - 2 log|1 - |x| + iy| instead (log1p(r) = log(r) there)
  const T re = d < (T)KfCxT<T>::near1 ? (log((T)4 * ax) - (T)2 * log(d)) / (T)4
                                      : log1p((T)4 * ax / (om * om + ay * ay)) / (T)4;
  return kf_cx(copysign(re, x), atan2((T)2 * y, om * ((T)1 + ax) - ay * ay) / (T)2);
}
template <typename T> __device__ __forceinline__ KfCx<T> kf_catan(KfCx<T> z) { return kf_div_i(kf_catanh(kf_mul_i(z))); }
// NumPy's own formulas (umath funcs.inc): exp2 = exp(z ln 2), log2/log10 = log(z) scaled,
// log1p = log(1 + z) from |1 + z| and its angle, expm1 with the 1 - cos(y) = 2 sin^2(y/2) form
template <typename T> __device__ __forceinline__ KfCx<T> kf_cexp2(KfCx<T> z) { return kf_cexp(kf_cx(z.re * (T)KF_LN2, z.im * (T)KF_LN2)); }
template <typename T> __device__ __forceinline__ KfCx<T> kf_clogk(KfCx<T> z, T k) { const KfCx<T> l = kf_clog(z); return kf_cx(l.re * k, l.im * k); }
template <typename T> __device__ __forceinline__ KfCx<T> kf_clog1p(KfCx<T> z) {
  const T r = z.re + (T)1;
  return kf_cx(log(hypot(r, z.im)), atan2(z.im, r));
}
template <typename T> __device__ __forceinline__ KfCx<T> kf_cexpm1(KfCx<T> z) {
  const T h = sin(z.im / (T)2);
  return kf_cx(expm1(z.re) * cos(z.im) - (T)2 * h * h, exp(z.re) * sin(z.im));
}
// a complex cumprod starts from its first factor, as NumPy's accumulate (1 * x is not x where x has
// an infinite part): its running value starts as a NaN of its own payload, kf_cprodscan's identity
template <typename T> __device__ __forceinline__ KfCx<T> kf_cunit();
template <> __device__ __forceinline__ kf_c64 kf_cunit<float>() { return kf_cx(__uint_as_float(0x7fc0c0deu), 0.0f); }
template <> __device__ __forceinline__ kf_c128 kf_cunit<double>() { return kf_cx(__longlong_as_double(0x7ff80000c0de0001LL), 0.0); }
__device__ __forceinline__ bool kf_isunit(kf_c64 a) { return __float_as_uint(a.re) == 0x7fc0c0deu; }
__device__ __forceinline__ bool kf_isunit(kf_c128 a) { return __double_as_longlong(a.re) == 0x7ff80000c0de0001LL; }
template <typename T> __device__ __forceinline__ KfCx<T> kf_cprodscan(KfCx<T> a, KfCx<T> b) {
  return kf_isunit(a) ? b : kf_isunit(b) ? a : a * b;
}
// warp shuffles of a complex value: its two parts
__device__ __forceinline__ kf_c64 kf_shfl(kf_c64 v, int m) { return kf_cx(__shfl_xor_sync(0xffffffffu, v.re, m), __shfl_xor_sync(0xffffffffu, v.im, m)); }
__device__ __forceinline__ kf_c128 kf_shfl(kf_c128 v, int m) { return kf_cx(__shfl_xor_sync(0xffffffffu, v.re, m), __shfl_xor_sync(0xffffffffu, v.im, m)); }
#define KF_SHFL_CX(T) \
  __device__ __forceinline__ T kf_shfl_up(T v, int d, int w) { return kf_cx(__shfl_up_sync(0xffffffffu, v.re, d, w), __shfl_up_sync(0xffffffffu, v.im, d, w)); } \
  __device__ __forceinline__ T kf_shfl_idx(T v, int s, int w) { return kf_cx(__shfl_sync(0xffffffffu, v.re, s, w), __shfl_sync(0xffffffffu, v.im, s, w)); }
KF_SHFL_CX(kf_c64) KF_SHFL_CX(kf_c128)
"""

# ----------------------------------------------------------------------------- C expressions

_UNARY = {"exp": "kf_cexp({a})", "log": "kf_clog({a})", "sqrt": "kf_csqrt({a})", "sin": "kf_csin({a})",
          "cos": "kf_ccos({a})", "tan": "kf_ctan({a})", "sinh": "kf_ccoshsinh<{P}, true>({a})",
          "cosh": "kf_ccoshsinh<{P}, false>({a})", "tanh": "kf_ctanh({a})", "arcsin": "kf_casin({a})",
          "arccos": "kf_cacos({a})", "arctan": "kf_catan({a})", "arcsinh": "kf_casinh({a})",
          "arccosh": "kf_cacosh({a})", "arctanh": "kf_catanh({a})", "exp2": "kf_cexp2({a})",
          "log2": "kf_clogk({a}, ({P})1.4426950408889634)", "log10": "kf_clogk({a}, ({P})0.4342944819032518)",
          "log1p": "kf_clog1p({a})", "expm1": "kf_cexpm1({a})", "reciprocal": "kf_crecip({a})",
          "sign": "kf_csign({a})", "square": "kf_csquare({a})", "negative": "(-{a})", "positive": "{a}",
          "conjugate": "kf_cx({a}.re, -{a}.im)", "rint": "kf_cx(rint({a}.re), rint({a}.im))",
          # of the float dtype
          "absolute": "hypot({a}.re, {a}.im)", "real": "{a}.re", "imag": "{a}.im",
          "angle": "atan2({a}.im, {a}.re)",
          # bool
          "isnan": "kf_cnan({a})", "isinf": "(kf_isinf_({a}.re) || kf_isinf_({a}.im))",
          "isfinite": "(kf_fin({a}.re) && kf_fin({a}.im))", "logical_not": "({a}.re == 0 && {a}.im == 0)"}
_BINARY = {PROD_SCAN: "kf_cprodscan({a}, {b})", "add": "({a} + {b})", "subtract": "({a} - {b})", "multiply": "({a} * {b})", "divide": "({a} / {b})",
           "true_divide": "({a} / {b})", "power": "kf_cpow({a}, {b})", "equal": "({a} == {b})",
           "not_equal": "({a} != {b})", "less": "kf_clt({a}, {b})", "less_equal": "kf_cle({a}, {b})",
           "greater": "kf_clt({b}, {a})", "greater_equal": "kf_cle({b}, {a})",
           "maximum": "kf_cmaxmin<{P}, true>({a}, {b})", "minimum": "kf_cmaxmin<{P}, false>({a}, {b})",
           "fmax": "kf_cfmaxmin<{P}, true>({a}, {b})", "fmin": "kf_cfmaxmin<{P}, false>({a}, {b})",
           "logical_and": "({na} && {nb})", "logical_or": "({na} || {nb})", "logical_xor": "({na} != {nb})"}


def _nonzero(a: str) -> str:
    return f"({a}.re != 0 || {a}.im != 0)"


def op_expr(op: str, dt: str, args: list, adts: tuple, cast) -> str | None:
    """The C expression of ``op`` where a complex value is involved (an operand or the result),
    else None (an op NumPy has no complex loop for raises UnsupportedError); ``cast(a, src, dst)`` is the emitter's cast of real values (for the parts)."""
    t = adts[0] if adts else dt
    if op == "where":
        return None if not is_complex(dt) else f"({args[0]} ? {args[1]} : {args[2]})"
    if op == "cast":
        return cast_expr(args[0], t, dt, cast) if is_complex(t) or is_complex(dt) else None
    if op == "complex":         # the number of its parts (real, imag), exactly
        return f"kf_cx<{COMPLEX[dt]}>({args[0]}, {args[1]})"
    if not is_complex(t):
        return None
    P = COMPLEX[t]
    if len(args) == 1 and op in _UNARY:
        return _UNARY[op].format(a=args[0], P=P)
    if len(args) == 2 and op in _BINARY:
        a, b = args
        return _BINARY[op].format(a=a, b=b, P=P, na=_nonzero(a), nb=_nonzero(b))
    raise UnsupportedError(f"kfuse: the CUDA backend has no rule for {op}({', '.join(adts)})")


def cast_expr(a: str, src: str, dst: str, cast) -> str:
    """``astype`` between a complex and any dtype: complex to complex part by part, a real value
    into the real part (rounded as ``cast`` rounds it to the part's dtype), complex to bool its
    nonzero test, to a real dtype its real part (NumPy's ComplexWarning cast)."""
    if src == dst:
        return a
    if is_complex(dst):
        part = "float32" if dst == "complex64" else "float64"
        P = COMPLEX[dst]
        if is_complex(src):
            return f"kf_cx<{P}>(({P}){a}.re, ({P}){a}.im)"
        if src == "bool":
            return f"kf_cx<{P}>({a} ? ({P})1 : ({P})0, ({P})0)"
        return f"kf_cx<{P}>({cast(a, src, part)}, ({P})0)"
    if dst == "bool":
        return _nonzero(a)
    part = "float32" if src == "complex64" else "float64"
    return cast(f"{a}.re", part, dst)


def literal(value, dt: str, real_literal) -> str:
    """A complex constant of ``dt`` (``real_literal(v, part dtype)`` spells each part)."""
    if isinstance(value, str) and value == UNIT:
        return f"kf_cunit<{COMPLEX[dt]}>()"
    z = complex(value)
    part = "float32" if dt == "complex64" else "float64"
    return f"kf_cx<{COMPLEX[dt]}>({real_literal(z.real, part)}, {real_literal(z.imag, part)})"


def uses_complex(code: str) -> bool:
    """Whether kernel source ``code`` holds a complex value (then it needs :data:`PRELUDE`)."""
    return any(t in code for t in CTYPE.values()) or "kf_cx<" in code


def combine_store(st, out_dtype: str, ptr: str, render) -> str:
    """A scatter's ``np.add.at``/``np.subtract.at`` into a complex array: an atomic add on each
    part (complex addition is per part; the order of a repeated position's adds varies, as float
    ``add.at``'s does). Other complex combines (a product is not per part), or one computed in
    another dtype than the array's, raise."""
    if st.combine not in ("add", "subtract") or st.loop != out_dtype:
        raise UnsupportedError(f"kfuse: np.{st.combine}.at into a {out_dtype} array (computed in {st.loop}) "
                               "has no exact atomic on the CUDA backend")
    v = f"{st.src}_c"
    cast = render(K.Op(v, "cast", out_dtype, (st.src,), (st.loop,)))
    sign = "-" if st.combine == "subtract" else ""
    return "\n".join([f"{{  // {st}", f"  {cast}", f"  auto* const ep_ = {ptr};",
                      f"  atomicAdd(&ep_->re, {sign}{v}.re); atomicAdd(&ep_->im, {sign}{v}.im);", "}"])


def unit_scans(kir: K.KernelIR) -> K.KernelIR:
    """``kir`` with each complex cumprod started from its first factor, as NumPy's accumulate is:
    its running value starts at :data:`UNIT` (``kf_cunit``), the identity of its step
    :data:`PROD_SCAN` (``kf_cprodscan``), so tree scans and chunk prefixes keep it too."""
    def fix(stmts):
        return tuple(dataclasses.replace(s, op=PROD_SCAN, init=UNIT)
                     if isinstance(s, K.Scan) and s.op == "multiply" and is_complex(s.dtype) else s for s in stmts)
    phases = tuple(dataclasses.replace(ph, pre=fix(ph.pre), body=fix(ph.body)) for ph in kir.phases)
    return kir if phases == kir.phases else dataclasses.replace(kir, phases=phases)
