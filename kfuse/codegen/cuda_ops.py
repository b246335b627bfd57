"""Scalar CUDA C rules for :mod:`kfuse.codegen.cuda`: C types, literals, casts, NumPy-semantics
ufunc expressions, loads/stores of storage types, index expressions, and the device prelude
(helper templates) every generated kernel starts with."""
from __future__ import annotations

import math

import numpy as np

from ..errors import UnsupportedError
from . import kernel_ir as K
from . import philox
from . import cuda_complex as cx
from .decompose import EXPANSIONS, inline

_CTYPE = {"bool": "bool", "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
          "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
          "uint64": "unsigned long long", "float16": "float", "bfloat16": "float", "float32": "float",
          "float64": "double", **cx.CTYPE}
_STYPE = dict(_CTYPE, bool="unsigned char", float16="unsigned short", bfloat16="unsigned short")   # storage
# 16-bit floats, held in float32 registers: (widen, round from float32, round from float64) helpers
LOWP = {"float16": ("kf_h2f", "kf_f2h", "kf_d2h"), "bfloat16": ("kf_bf2f", "kf_f2bf", "kf_d2bf")}
_UTYPE = {"int8": "unsigned int", "int16": "unsigned int", "int32": "unsigned int",
          "int64": "unsigned long long", "uint8": "unsigned int", "uint16": "unsigned int",
          "uint32": "unsigned int", "uint64": "unsigned long long"}
NATIVE: frozenset = frozenset()     # ops of decompose.EXPANSIONS rendered here, not expanded
_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}


PRELUDE = r"""
// ---- kfuse CUDA prelude
typedef long long i64;
typedef unsigned long long u64;
template <typename T, int N> struct __align__(sizeof(T) * N) KfVec { T v[N]; };
// a host scalar argument (a Python or NumPy scalar) passed by value in its storage type (a 16-bit
// float as its bits, a bool as a byte), read as the 0-d buffer it stands for: in[0]
template <typename T> struct KfHost { T v; __device__ __forceinline__ T operator[](long long) const { return v; } };
// streaming (evict-first) vector load/store for data touched once: keeps L2 for reused operands
template <typename T, int N> __device__ __forceinline__ KfVec<T, N> kf_ldcs(const T* p) {
  KfVec<T, N> r;
  if constexpr (sizeof(r) == 16) *reinterpret_cast<int4*>(&r) = __ldcs(reinterpret_cast<const int4*>(p));
  else if constexpr (sizeof(r) == 8) *reinterpret_cast<int2*>(&r) = __ldcs(reinterpret_cast<const int2*>(p));
  else r = *reinterpret_cast<const KfVec<T, N>*>(p);
  return r;
}
// predicated vector loads with L1 and L2 eviction priorities (sm_80+; a plain load elsewhere):
// "last" for data read again (a row a later phase re-loads, operands every row reads), "first" for
// a row's last read. The predicate is inside the asm, so a phase's loads issue back to back
// (a guarded asm load would be a branch the compiler cannot if-convert); r is zero where !ok.
#define KF_LDHINT(NAME, POL)                                                                          \
template <typename T, int N> __device__ __forceinline__ KfVec<T, N> NAME(const T* p, bool ok) {      \
  KfVec<T, N> r;                                                                                      \
  if constexpr (sizeof(r) == 16 && __CUDA_ARCH__ >= 800) {                                            \
    unsigned long long pol; int4 v = make_int4(0, 0, 0, 0);                                           \
    asm volatile("createpolicy.fractional.L2::" POL ".b64 %0, 1.0;" : "=l"(pol));                    \
    asm volatile("{\n .reg .pred q;\n setp.ne.b32 q, %5, 0;\n"                                       \
                 " @q ld.global.L1::" POL ".L2::cache_hint.v4.b32 {%0,%1,%2,%3}, [%4], %6;\n}"         \
                 : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w) : "l"(p), "r"((int)ok), "l"(pol));    \
    *reinterpret_cast<int4*>(&r) = v;                                                                 \
  } else if (ok) {                                                                                    \
    r = *reinterpret_cast<const KfVec<T, N>*>(p);                                                     \
  } else {                                                                                            \
    for (int e = 0; e < N; ++e) r.v[e] = T();                                                         \
  }                                                                                                   \
  return r;                                                                                           \
}                                                                                                     \
template <typename T, int N> __device__ __forceinline__ KfVec<T, N> NAME(const T* p) {               \
  KfVec<T, N> r;                                                                                      \
  if constexpr (sizeof(r) == 16 && __CUDA_ARCH__ >= 800) {                                            \
    unsigned long long pol; int4 v;                                                                   \
    asm volatile("createpolicy.fractional.L2::" POL ".b64 %0, 1.0;" : "=l"(pol));                    \
    asm volatile("ld.global.L1::" POL ".L2::cache_hint.v4.b32 {%0,%1,%2,%3}, [%4], %5;"              \
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(pol));                  \
    *reinterpret_cast<int4*>(&r) = v;                                                                 \
  } else {                                                                                            \
    r = *reinterpret_cast<const KfVec<T, N>*>(p);                                                     \
  }                                                                                                   \
  return r;                                                                                           \
}
KF_LDHINT(kf_ldlast, "evict_last")
KF_LDHINT(kf_ldfirst, "evict_first")
// np.searchsorted(a[:n:st], v): a binary search of a sorted table, NaN after every number (RIGHT:
// side="right", the elements not above v; else those below it)
template <bool RIGHT, typename T> __device__ long long kf_search(const T* a, long long n, long long st, T v) {
  long long lo = 0, hi = n;
  while (lo < hi) {
    const long long mid = (lo + hi) >> 1;
    const T x = a[mid * st];
    const bool below = RIGHT ? !(v < x || (x != x && v == v)) : (x < v || (v != v && x == x));
    if (below) lo = mid + 1; else hi = mid;
  }
  return lo;
}
template <typename T, int N> __device__ __forceinline__ void kf_stcs(T* p, const KfVec<T, N>& v) {
  if constexpr (sizeof(v) == 16) __stcs(reinterpret_cast<int4*>(p), *reinterpret_cast<const int4*>(&v));
  else if constexpr (sizeof(v) == 8) __stcs(reinterpret_cast<int2*>(p), *reinterpret_cast<const int2*>(&v));
  else *reinterpret_cast<KfVec<T, N>*>(p) = v;
}
__device__ __forceinline__ float kf_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned short kf_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ unsigned short kf_d2h(double f) { unsigned short h; asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(f)); return h; }
// bfloat16: the top half of a float32 (widening is exact); rounding to nearest even (sm_80+); from
// float64 in one rounding: round to float32 toward zero, make it odd if inexact (round-to-odd keeps
// the information a second rounding to 8 bits needs), then round to nearest even
__device__ __forceinline__ float kf_bf2f(unsigned short h) { return __uint_as_float(((unsigned)h) << 16); }
// (through the packed conversion, its high half zero: sm_90 runs cvt.rn.bf16x2.f32 natively, 1.4x
// cheaper a value than cvt.rn.bf16.f32, H200 2026-11-27; the same rounding)
__device__ __forceinline__ unsigned short kf_f2bf(float f) {
  unsigned r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(0.f), "f"(f)); return (unsigned short)r;
}
__device__ __forceinline__ unsigned short kf_d2bf(double d) {
  float f = __double2float_rz(d);
  if ((double)f != d && d == d) f = __uint_as_float(__float_as_uint(f) | 1u);
  return kf_f2bf(f);
}
// 64-bit ints to bfloat16 in one rounding: to float64 rounded to odd (toward zero, then the last bit
// set if inexact), then kf_d2bf (round-to-odd twice, then to nearest even, is one rounding)
__device__ __forceinline__ unsigned short kf_ll2bf(long long v) {
  double d = __ll2double_rz(v);
  if ((long long)d != v) d = __longlong_as_double(__double_as_longlong(d) | 1LL);
  return kf_d2bf(d);
}
__device__ __forceinline__ unsigned short kf_ull2bf(unsigned long long v) {
  double d = __ull2double_rz(v);
  if ((unsigned long long)d != v) d = __longlong_as_double(__double_as_longlong(d) | 1LL);
  return kf_d2bf(d);
}
// 16-bit float add/subtract/multiply on the 16-bit bits, in the hardware's own units: the exact
// result rounded once to the format, which is what NumPy's loops give (computed in float32 and
// rounded: float32 holds 2p+2 bits of a p-bit format, so the second rounding never differs), without
// the two conversions a float32 op costs each way (GEGLU in float16 ran compute-bound on them).
// .rn keeps ptxas from contracting a product and a sum into an fma. bfloat16 through fma.rn.bf16
// (sm_80+): a + b = fma(a, 1, b), a - b = fma(b, -1, a), a * b = fma(a, b, -0) (the signed zero kept).
#define KF_H16OP(NAME, INSN) \
__device__ __forceinline__ unsigned short NAME(unsigned short a, unsigned short b) { \
  unsigned short r; asm(INSN : "=h"(r) : "h"(a), "h"(b)); return r; }
KF_H16OP(kf_hadd, "add.rn.f16 %0, %1, %2;")
KF_H16OP(kf_hsub, "sub.rn.f16 %0, %1, %2;")
KF_H16OP(kf_hmul, "mul.rn.f16 %0, %1, %2;")
KF_H16OP(kf_bfadd, "{ .reg .b16 o; mov.b16 o, 0x3F80; fma.rn.bf16 %0, %1, o, %2; }")
KF_H16OP(kf_bfsub, "{ .reg .b16 o; mov.b16 o, 0xBF80; fma.rn.bf16 %0, %2, o, %1; }")
KF_H16OP(kf_bfmul, "{ .reg .b16 z; mov.b16 z, 0x8000; fma.rn.bf16 %0, %1, %2, z; }")
#define KF_INFF __int_as_float(0x7f800000)
#define KF_NANF __int_as_float(0x7fc00000)
#define KF_INFD __longlong_as_double(0x7ff0000000000000LL)
#define KF_NAND __longlong_as_double(0x7ff8000000000000LL)
// -0.0 read from constant memory, never an immediate: ptxas compiles a select between the
// immediates 1.0 (or -1.0) and -0.0 as FSET.BF, which gives +0.0 (docs/FUZZING.md bug 26)
__constant__ float kf_negzero_f = -0.0f;
__constant__ double kf_negzero_d = -0.0;
// NumPy's maximum/minimum: NaN propagates; equal operands (+0.0/-0.0) give the second one in the
// float32/float64 loops, the first one in the float16 loop (npy_half_ge/le): the _h forms
template <typename T> __device__ __forceinline__ T kf_maxnan(T a, T b) { return (a > b || a != a) ? a : b; }
template <typename T> __device__ __forceinline__ T kf_minnan(T a, T b) { return (a < b || a != a) ? a : b; }
template <typename T> __device__ __forceinline__ T kf_maxnan_h(T a, T b) { return (a >= b || a != a) ? a : b; }
template <typename T> __device__ __forceinline__ T kf_minnan_h(T a, T b) { return (a <= b || a != a) ? a : b; }
// A wrapped integer result narrowed to T. An 8- or 16-bit result is computed in 32 bits and narrowed
// by a bit-field extract inside asm, out of NVVM's sight: NVVM otherwise narrows the arithmetic to
// 16-bit PTX (neg.s16, add.s16), and ptxas treats a 16-bit result as already extended, so a wrapped
// value read back unwrapped by the next op (int16 -(-32768) // -32768 gave -1; fuzz seed 35 #3382)
template <typename T, typename U> __device__ __forceinline__ T kf_narrow(U v) {
  if constexpr (sizeof(T) >= 4) {
    return (T)v;
  } else {
    constexpr bool S = (T)-1 < (T)0;
    unsigned r;
    if constexpr (S) asm("bfe.s32 %0, %1, 0, %2;" : "=r"(r) : "r"((unsigned)v), "n"((int)(8 * sizeof(T))));
    else asm("bfe.u32 %0, %1, 0, %2;" : "=r"(r) : "r"((unsigned)v), "n"((int)(8 * sizeof(T))));
    return (T)r;
  }
}
template <typename T> __device__ __forceinline__ T kf_imax(T a, T b) { return a > b ? a : b; }
template <typename T> __device__ __forceinline__ T kf_imin(T a, T b) { return a < b ? a : b; }
// NumPy npy_divmod for floats
template <typename T> __device__ __forceinline__ T kf_fmod_py(T a, T b) {
  T m = fmod(a, b);
  if (b == (T)0) return m;
  if (m != (T)0) { if ((b < (T)0) != (m < (T)0)) m += b; } else { m = copysign((T)0, b); }
  return m;
}
template <typename T> __device__ __forceinline__ T kf_floordiv_f(T a, T b) {
  if (b == (T)0) return a / b;
  T m = fmod(a, b);
  T d = (a - m) / b;
  if (m != (T)0) { if ((b < (T)0) != (m < (T)0)) d -= (T)1; }
  T fd;
  if (d != (T)0) { fd = floor(d); if (d - fd > (T)0.5) fd += (T)1; } else { fd = copysign((T)0, a / b); }
  return fd;
}
template <typename T, typename U> __device__ __forceinline__ T kf_floordiv_i(T a, T b) {
  if (b == (T)0) return (T)0;
  if ((T)-1 < (T)0 && b == (T)-1) return kf_narrow<T>((U)0 - (U)a);     // MIN // -1 wraps
  T q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}
template <typename T> __device__ __forceinline__ T kf_mod_i(T a, T b) {
  if (b == (T)0) return (T)0;
  if ((T)-1 < (T)0 && b == (T)-1) return (T)0;
  T r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
// np.fmod for ints: C's truncating %, but 0 for a zero divisor and for MIN % -1 (C traps), as NumPy
template <typename T> __device__ __forceinline__ T kf_fmod_i(T a, T b) {
  if (b == (T)0) return (T)0;
  if ((T)-1 < (T)0 && b == (T)-1) return (T)0;
  return (T)(a % b);
}
// np.gcd/np.lcm/np.bitwise_count of a signed int work on its magnitude in the unsigned type U, where
// |MIN| is 2^(bits-1): gcd(MIN, 0) narrows back to MIN, as NumPy's npy_gcd does; lcm = |a| / gcd * |b|,
// wrapping, 0 when gcd is 0 (npy_lcm)
template <typename T, typename U> __device__ __forceinline__ U kf_uabs(T a) {
  if constexpr ((T)-1 < (T)0) return a < (T)0 ? (U)0 - (U)a : (U)a;
  else return (U)a;
}
template <typename U> __device__ __forceinline__ U kf_ugcd(U x, U y) {
  while (x != (U)0) { const U r = y % x; y = x; x = r; }
  return y;
}
template <typename T, typename U> __device__ __forceinline__ T kf_gcd(T a, T b) {
  return kf_narrow<T>(kf_ugcd<U>(kf_uabs<T, U>(a), kf_uabs<T, U>(b)));
}
template <typename T, typename U> __device__ __forceinline__ T kf_lcm(T a, T b) {
  const U x = kf_uabs<T, U>(a), y = kf_uabs<T, U>(b), g = kf_ugcd<U>(x, y);
  return g == (U)0 ? (T)0 : kf_narrow<T>(x / g * y);
}
template <typename T, typename U> __device__ __forceinline__ unsigned char kf_bitcount(T a) {
  if constexpr (sizeof(U) == 8) return (unsigned char)__popcll(kf_uabs<T, U>(a));
  else return (unsigned char)__popc(kf_uabs<T, U>(a));
}
// NumPy's npy_logaddexp/npy_logaddexp2 step by step: equal operands first (equal infinities give
// no inf - inf), then the larger plus log1p of the smaller's share; a NaN falls through as x - y.
// Constants: NPY_LOGE2, NPY_LOG2E (their float forms are these doubles rounded)
template <typename T> __device__ __forceinline__ T kf_logaddexp(T x, T y) {
  if (x == y) return x + (T)0.6931471805599453;
  const T d = x - y;
  if (d > (T)0) return x + log1p(exp(-d));
  if (d <= (T)0) return y + log1p(exp(d));
  return d;
}
template <typename T> __device__ __forceinline__ T kf_logaddexp2(T x, T y) {
  if (x == y) return x + (T)1;
  const T d = x - y;
  if (d > (T)0) return x + (T)1.4426950408889634 * log1p(exp2(-d));
  if (d <= (T)0) return y + (T)1.4426950408889634 * log1p(exp2(d));
  return d;
}
// log2, exact at powers of two as NumPy's libm: CUDA's double log2 is 1 ulp off at 362 of the
// 2098 (log2(8.0) = 3 - 4e-16; a probe at commit 1e78006, H200 2026-11-25); float32's is exact
__device__ __forceinline__ double kf_log2d(double x) {
  const double r = log2(x), k = rint(r);
  return (fabs(r) < 2000.0 && ldexp(1.0, (int)k) == x) ? k : r;
}
// x ** 3 rounded once from the exact cube, as libm's pow gives it (CUDA's pow is within 2 ulp; the
// product x * x * x rounds twice): float32 through the double cube p and its fma error e, moved to
// the float neighbour o on the exact value's side where p is a tie between two floats
__device__ __forceinline__ float kf_cubef(float a) {
  const double x = (double)a, xx = x * x, p = xx * x, e = fma(xx, x, -p);
  float f = (float)p;
  const double o = 2.0 * p - (double)f;
  if (e != 0.0 && isfinite(o) && o != (double)f && (double)(float)o == o && ((e > 0.0) == (p > (double)f)))
    f = (float)o;
  return f;
}
// float64: the cube as p + (its error terms), exact to 2^-105 relative, rounded once; near underflow
// or overflow, where the error terms are not exact, through pow
__device__ __forceinline__ double kf_cube(double x) {
  const double xx = x * x, p = xx * x;
  if (!isfinite(p) || fabs(p) < 0x1p-900) return pow(x, 3.0);
  return p + fma(fma(x, x, -xx), x, fma(xx, x, -p));
}
// x ** 1 and x ** 2 exactly, as NumPy's libm pow gives them (CUDA's pow is within 2 ulp: 3.0 ** 1.0
// came back below 3.0, fuzz seed 32 #1191), x ** 3 correctly rounded; any other exponent through pow
__device__ __forceinline__ float kf_powf(float a, float b) {
  return b == 1.0f ? a : (b == 2.0f ? a * a : (b == 3.0f ? kf_cubef(a) : powf(a, b)));
}
__device__ __forceinline__ double kf_pow(double a, double b) {
  return b == 1.0 ? a : (b == 2.0 ? a * a : (b == 3.0 ? kf_cube(a) : pow(a, b)));
}
template <typename T, typename U> __device__ __forceinline__ T kf_pow_i(T a, T b) {
  if ((T)-1 < (T)0 && b < (T)0) return (T)0;   // NumPy raises; unreachable on device
  U r = 1, x = (U)a; u64 e = (u64)b;
  while (e) { if (e & 1) r *= x; x *= x; e >>= 1; }
  return kf_narrow<T>(r);
}
// r / d for 0 <= r < 2^31, with (m, s) computed on the host for d (runtime.cuda.fast_divisor):
// (umulhi(r, m) + r) >> s, exact on that range (Granlund-Montgomery, as PyTorch's IntDivider)
__device__ __forceinline__ int kf_udiv(int r, unsigned m, unsigned s) {
  return (int)((__umulhi((unsigned)r, m) + (unsigned)r) >> s);
}
// A barrier across the whole grid (Variant.grid_sync: every block resident, a cooperative launch):
// the block's writes fenced, one arrival a block on a counter the launch zeroed, a spin until
// ``target`` blocks arrived (the k-th barrier waits for k x gridDim.x), then a fence before the
// block reads what other blocks wrote (as cooperative groups' grid.sync does)
__device__ __forceinline__ void kf_grid_sync(unsigned* bar, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(bar, 1u);
    unsigned seen;
    do { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(bar) : "memory"); } while (seen < target);
    __threadfence();
  }
  __syncthreads();
}
template <typename T> __device__ __forceinline__ T kf_shfl(T v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ bool kf_shfl(bool v, int m) { return __shfl_xor_sync(0xffffffffu, (int)v, m) != 0; }
__device__ __forceinline__ signed char kf_shfl(signed char v, int m) { return (signed char)__shfl_xor_sync(0xffffffffu, (int)v, m); }
__device__ __forceinline__ unsigned char kf_shfl(unsigned char v, int m) { return (unsigned char)__shfl_xor_sync(0xffffffffu, (int)v, m); }
__device__ __forceinline__ short kf_shfl(short v, int m) { return (short)__shfl_xor_sync(0xffffffffu, (int)v, m); }
__device__ __forceinline__ unsigned short kf_shfl(unsigned short v, int m) { return (unsigned short)__shfl_xor_sync(0xffffffffu, (int)v, m); }
// scan kernels: the value of the lane d below (up) or of lane s (idx) within segments of w lanes
template <typename T> __device__ __forceinline__ T kf_shfl_up(T v, int d, int w) { return __shfl_up_sync(0xffffffffu, v, d, w); }
template <typename T> __device__ __forceinline__ T kf_shfl_idx(T v, int s, int w) { return __shfl_sync(0xffffffffu, v, s, w); }
#define KF_SHFL_NARROW(T) \
  __device__ __forceinline__ T kf_shfl_up(T v, int d, int w) { return (T)__shfl_up_sync(0xffffffffu, (int)v, d, w); } \
  __device__ __forceinline__ T kf_shfl_idx(T v, int s, int w) { return (T)__shfl_sync(0xffffffffu, (int)v, s, w); }
KF_SHFL_NARROW(bool) KF_SHFL_NARROW(signed char) KF_SHFL_NARROW(unsigned char) KF_SHFL_NARROW(short)
KF_SHFL_NARROW(unsigned short)
// arg-reduction pair: (value, position); position < 0 marks "empty"
template <typename T> struct KfArg { T v; i64 i; };
template <typename T, bool MAX> __device__ __forceinline__ KfArg<T> kf_argcomb(KfArg<T> a, KfArg<T> b) {
  if (a.i < 0) return b;
  if (b.i < 0) return a;
  bool an = a.v != a.v, bn = b.v != b.v;
  if (an || bn) { if (an && bn) return a.i < b.i ? a : b; return an ? a : b; }
  if (MAX ? (a.v > b.v) : (a.v < b.v)) return a;
  if (MAX ? (b.v > a.v) : (b.v < a.v)) return b;
  return a.i < b.i ? a : b;
}
// maxsumexp (codegen.online_softmax): a running float32 maximum m and the sum of exp(y - m) at it;
// the sum is rescaled by exp(m_old - m_new) when the maximum grows (1 where they are equal, as for
// -inf before any finite value); NumPy's max rule (a NaN sticks). A row whose maximum is infinite
// is NaN at the end (NumPy's exp(inf - inf) term, or a row of -inf's), see kf_mse_sum.
// A term is exp(d), d = y - m <= 0, through the hardware's 2^x (ex2.approx: 2 ulp, a multiply and
// one MUFU op where expf is about ten instructions a term, a third of a 32000-wide cross-entropy's
// issue slots): rounding d * log2(e) costs |d| ulp of the term, and d e^d <= 1/e, so the sum, at
// least the maximum's term 1, is within a few float32 ulp (subnormal terms flush to 0).
template <typename T> struct KfMse { float m; T s; };
__device__ __forceinline__ float kf_mse_exp(float d) {
  float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d * 1.4426950408889634f)); return r;
}
__device__ __forceinline__ float kf_mse_scale(float old, float m) { return old == m ? 1.0f : kf_mse_exp(old - m); }
template <typename T> __device__ __forceinline__ void kf_mse_step(KfMse<T>& a, float y) {
  if (y > a.m || y != y) { a.s = a.s * (T)kf_mse_scale(a.m, y); a.m = y; }
  a.s += (T)(y == a.m ? 1.0f : kf_mse_exp(y - a.m));
}
template <typename T> __device__ __forceinline__ KfMse<T> kf_mse_comb(KfMse<T> a, KfMse<T> b) {
  if (b.m > a.m || b.m != b.m) { const KfMse<T> t = a; a = b; b = t; }   // a holds the maximum
  a.s += b.s * (T)kf_mse_scale(b.m, a.m);
  return a;
}
template <typename T> __device__ __forceinline__ T kf_mse_sum(KfMse<T> a) {
  return isinf(a.m) ? (T)__int_as_float(0x7fc00000) : a.s;
}
// GEMM kernels (codegen.gemm_cuda): 16-bit operands as their bits; the hardware tanh (MUFU, one
// instruction, max rel. error ~2^-11) for epilogues with 16-bit outputs, where it is below the rounding
typedef unsigned short u16;
__device__ __forceinline__ float kf_tanh_fast(float x) { float y; asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
""" + philox.CUDA_SOURCE


# ----------------------------------------------------------------------------- scalar code

def ctype(dt: str) -> str:
    return _CTYPE[dt]


def _is_f(dt):
    return dt.startswith("float") or dt == "bfloat16"


def round_lowp(e: str, dt: str) -> str:
    """Float32 register expression ``e`` rounded to 16-bit float ``dt`` (and widened back)."""
    widen, narrow, _ = LOWP[dt]
    return f"{widen}({narrow}({e}))"


def _fn(name: str, dt: str) -> str:
    """C math function for a register type: float16/float32 use the ``f`` versions."""
    return name if dt == "float64" else name + "f"


def const_literal(value, dt: str) -> str:
    if cx.is_complex(dt):
        return cx.literal(value, dt, const_literal)
    if dt == "bool":
        return "true" if value else "false"
    if _is_f(dt):
        v = float(np.dtype(dt).type(value))
        d = dt == "float64"
        if math.isnan(v):
            return "KF_NAND" if d else "KF_NANF"
        if math.isinf(v):
            return ("-" if v < 0 else "") + ("KF_INFD" if d else "KF_INFF")
        if v == 0.0 and math.copysign(1.0, v) < 0:
            return "kf_negzero_d" if d else "kf_negzero_f"
        return float.hex(v) + ("" if d else "f")
    v = int(value)
    bits = _BITS[dt]
    u = v & ((1 << bits) - 1)
    return f"(({ctype(dt)}){u}ULL)" if v < 0 else f"(({ctype(dt)}){v}ULL)"


def cast_expr(a: str, src: str, dst: str, rounded: bool = False) -> str:
    """An explicit CAST is a rounding point: float16/bfloat16 values (held unrounded in float32
    registers) are rounded before they are widened or converted, and a cast *to* them rounds once
    from the source (float64 directly, not through float32), as ``astype`` does. ``rounded``: ``a``
    is known to hold a value of ``src`` already (a 16-bit value with its bits beside it)."""
    if src == dst:
        return a
    if cx.is_complex(src) or cx.is_complex(dst):
        return cx.cast_expr(a, src, dst, cast_expr)
    if dst in LOWP:
        if src in ("bool", "int8", "uint8"):      # exact in float16 and bfloat16: nothing to round
            return f"((float){a})"
        return f"{LOWP[dst][0]}({cast_bits(a, src, dst, rounded)})"
    if src in LOWP:
        a = a if rounded else round_lowp(a, src)
        if dst == "float32":
            return a
    if dst == "bool":
        return f"({a} != 0)"
    if _BITS.get(dst, 32) < 32 and not _is_f(src):    # integer truncation: see kf_narrow
        return f"kf_narrow<{ctype(dst)}>({a})"
    return f"(({ctype(dst)}){a})"


def cast_bits(a: str, src: str, dst: str, rounded: bool = False) -> str:
    """The storage bits of ``a`` (a ``src`` register value) cast to 16-bit float ``dst``, rounded once."""
    _, narrow, narrow64 = LOWP[dst]
    if src == "float64":
        return f"{narrow64}({a})"
    if dst == "bfloat16" and src in ("int32", "uint32"):
        return f"{narrow64}((double){a})"       # exact in float64; float32 would round first
    if dst == "bfloat16" and src in ("int64", "uint64"):
        return f"kf_{'u' if src == 'uint64' else ''}ll2bf({a})"     # float64 would round first
    src_val = (a if rounded else round_lowp(a, src)) if src in LOWP else a if src == "float32" else f"((float){a})"
    return f"{narrow}({src_val})"


def op_expr(op: str, dt: str, args: list[str], adts: tuple) -> str:
    """A C expression with NumPy semantics for ufunc ``op`` on register values ``args``."""
    a = args[0]
    b = args[1] if len(args) > 1 else None
    t = adts[0] if adts else dt
    T = ctype(t)
    isf, isb = _is_f(t), t == "bool"
    U = _UTYPE.get(t)
    wrap = lambda e: f"kf_narrow<{T}>({e})"  # noqa: E731
    e = cx.op_expr(op, dt, args, adts, cast_expr)      # a complex operand or result
    if e is not None:
        return e
    if op in EXPANSIONS and op not in NATIVE:
        e = inline(op, dt, args, adts, lambda s, x: op_expr(s.op, s.dtype, x, s.arg_dtypes), const_literal)
        if e is not None:
            return e
    if op == "cast":
        return cast_expr(a, t, dt)
    if op == "where":
        return f"({a} ? {b} : {args[2]})"
    if op == philox.OP:         # a random op's bits (the prelude's device function)
        return philox.call(philox.CUDA_FN, args)
    if op in ("add", "subtract", "multiply") and not isf:
        if isb:
            return f"({a} || {b})" if op == "add" else f"({a} && {b})" if op == "multiply" else f"({a} != {b})"
        sym = {"add": "+", "subtract": "-", "multiply": "*"}[op]
        return wrap(f"({U}){a} {sym} ({U}){b}")
    simple = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
    if op in simple:
        return f"({a} {simple[op]} {b})"
    cmp = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">="}
    if op in cmp:
        return f"({a} {cmp[op]} {b})"
    if op == "logical_and":
        return f"(({a} != 0) && ({b} != 0))"
    if op == "logical_or":
        return f"(({a} != 0) || ({b} != 0))"
    if op == "logical_xor":
        return f"(({a} != 0) != ({b} != 0))"
    if op == "logical_not":
        return f"(!({a} != 0))"
    if op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        sym = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}[op]
        return f"(({a} {sym} {b}) != 0)" if isb else wrap(f"{a} {sym} {b}")
    if op == "invert":
        return f"(!{a})" if isb else wrap(f"~{a}")
    if op == "left_shift":
        return f"((u64){b} < {_BITS[t]} ? {wrap(f'({U}){a} << {b}')} : ({T})0)"
    if op == "right_shift":
        neg = f"({a} < 0 ? ({T})-1 : ({T})0)" if t.startswith("int") else f"({T})0"
        return f"((u64){b} < {_BITS[t]} ? {wrap(f'{a} >> {b}')} : {neg})"
    if op in ("maximum", "minimum", "fmax", "fmin"):
        hi = op in ("maximum", "fmax")
        if isb:
            return f"({a} || {b})" if hi else f"({a} && {b})"
        if not isf:
            return f"kf_i{'max' if hi else 'min'}<{T}>({a}, {b})"
        if op in ("fmax", "fmin"):
            return f"{_fn(op, t)}({a}, {b})"
        h = "_h" if t == "float16" else ""     # NumPy's float16 loop keeps the first on ties
        return f"kf_{'max' if hi else 'min'}nan{h}<{T}>({a}, {b})"
    if op == "floor_divide":
        return f"kf_floordiv_f<{T}>({a}, {b})" if isf else f"kf_floordiv_i<{T}, {U}>({a}, {b})"
    if op == "remainder":
        return f"kf_fmod_py<{T}>({a}, {b})" if isf else f"kf_mod_i<{T}>({a}, {b})"
    if op == "power":
        return f"{_fn('kf_pow', t)}({a}, {b})" if isf else f"kf_pow_i<{T}, {U}>({a}, {b})"
    if op in ("arctan2", "hypot", "copysign"):
        return f"{_fn({'arctan2': 'atan2'}.get(op, op), t)}({a}, {b})"
    if op == "fmod":            # floats: C's fmod (exact, sign of a)
        return f"{_fn('fmod', t)}({a}, {b})" if isf else f"kf_fmod_i<{T}>({a}, {b})"
    if op in ("logaddexp", "logaddexp2"):
        return f"kf_{op}<{T}>({a}, {b})"
    if op in ("gcd", "lcm", "bitwise_count") and U:
        return f"kf_{'bitcount' if op == 'bitwise_count' else op}<{T}, {U}>({', '.join(args)})"
    if op == "ldexp" and isf:   # exact: libdevice scales in steps that round once
        # an int64 exponent saturates to int's range, as NumPy's int64 loop does
        e = b if adts[1] == "int32" else f"(int)kf_imax<i64>(kf_imin<i64>({b}, 2147483647LL), -2147483648LL)"
        return f"{_fn('ldexp', t)}({a}, {e})"
    # unary
    if op == "negative":
        return f"(-{a})" if isf else wrap(f"({U})0 - ({U}){a}")
    if op == "positive":
        return a
    if op == "absolute":
        if isf:
            return f"{_fn('fabs', t)}({a})"
        if isb or t.startswith("uint"):
            return a
        return f"({a} < 0 ? {wrap(f'({U})0 - ({U}){a}')} : {a})"
    if op == "square":
        return f"({a} * {a})" if isf else (f"({a})" if isb else wrap(f"({U}){a} * ({U}){a}"))
    if op == "reciprocal":
        if isf:
            return f"(({T})1 / {a})"
        return f"({a} == 0 ? ({T})0 : ({T})(1 / {a}))"
    if op == "isnan":
        return f"({a} != {a})" if isf else "false"
    if op == "signbit":         # the sign bit, NaNs' too (float loops only: the tracer casts ints)
        return f"(__double_as_longlong({a}) < 0)" if t == "float64" else f"(__float_as_int({a}) < 0)"
    if op == "isinf":
        return f"({_fn('fabs', t)}({a}) == {'KF_INFD' if t == 'float64' else 'KF_INFF'})" if isf else "false"
    if op == "isfinite":
        return f"({_fn('fabs', t)}({a}) < {'KF_INFD' if t == 'float64' else 'KF_INFF'})" if isf else "true"
    if op in ("floor", "ceil", "trunc", "rint") and not isf:
        return a
    math1 = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "log10": "log10",
             "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt", "cbrt": "cbrt", "sin": "sin",
             "cos": "cos", "tan": "tan", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
             "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh",
             "arctanh": "atanh", "floor": "floor", "ceil": "ceil", "trunc": "trunc", "rint": "rint"}
    if op == "log2" and t == "float64":
        return f"kf_log2d({a})"
    if op in math1 and isf:
        return f"{_fn(math1[op], t)}({a})"
    raise UnsupportedError(f"kfuse: the CUDA backend has no rule for {op}({', '.join(adts)})")


def load_expr(ptr: str, off: str, dt: str) -> str:
    if dt in LOWP:
        return f"{LOWP[dt][0]}({ptr}[{off}])"
    if dt == "bool":
        return f"({ptr}[{off}] != 0)"
    return f"{ptr}[{off}]"


def store_value(v: str, vdt: str, dt: str) -> str:
    """The storage value of register ``v`` (of dtype ``vdt``) stored as ``dt``."""
    if dt in LOWP:
        return f"{LOWP[dt][2]}({v})" if vdt == "float64" else f"{LOWP[dt][1]}({v})"
    if cx.is_complex(dt) or cx.is_complex(vdt):
        return cast_expr(v, vdt, dt)
    if dt == "bool":
        return f"(unsigned char)({v} != 0)"
    return f"({_STYPE[dt]})({v})"


def index_c(e: K.Expr, divide=None) -> str:
    """C of index expression ``e``; ``divide(e, lhs_c)``, where given, may render a ``//`` or ``%``
    (its C, or None for the plain operator)."""
    if isinstance(e, K.ILit):
        return f"(IDX){e.value}"
    if isinstance(e, K.IVar):
        return e.name
    if isinstance(e, K.IVal):
        return f"(IDX){e.name}"
    lhs = index_c(e.lhs, divide)
    fast = divide(e, lhs) if divide is not None and e.op in ("//", "%") else None
    if fast is not None:
        return fast
    op = {"//": "/"}.get(e.op, e.op)
    return f"({lhs} {op} {index_c(e.rhs, divide)})"
