"""Source of the CPU kernels' float16 conversions (registered in :mod:`kfuse.codegen.cpu_helpers`).

float16 travels as uint16 bits; values compute in float32. The conversions are LLVM's own
(``_h2f_ir``/``_f2h_ir``: a Numba intrinsic that bitcasts the uint16 to ``half`` and ``fpext``s it,
or ``fptrunc``s a float32 to ``half`` and bitcasts it back), which LLVM lowers to F16C's
``vcvtph2ps``/``vcvtps2ph`` and vectorises, 8 or 16 lanes an instruction. Both round as NumPy's
casts do (exact widening; round to nearest even, overflow to inf, subnormals kept), so results
are NumPy's bit for bit, but for a NaN's payload (hardware keeps its top bits and sets the quiet
bit; NumPy's float16 ufunc loops do not define one either). They replace branch-free integer
helpers of about 8 vector instructions a conversion (kept in ``SOFTWARE`` for a CPU without F16C):
``geglu_f16_halves`` 1024x2048 4.6 -> 0.6 ms, ``f16_scale_shift_mixed`` 2.0 -> 0.4 (Xeon VM;
jax.jit 0.75 and 0.45 in the same runs).

float64 has no hardware conversion to float16 on x86 without AVX512-FP16, and float64 -> float32
-> float16 rounds twice where NumPy rounds once. ``_f2h`` rounds float64 to float32 *to odd* first
(the float32 nearest below in magnitude, its last bit set where the value was inexact), which
keeps every tie and overflow decision of a single rounding (float32 has 13 more bits than
float16 needs: Boldo and Melquiond's round-to-odd), then converts that in hardware.
"""
from __future__ import annotations

import os

# the intrinsics; their codegen imports llvmlite when Numba compiles (Numba has imported it then)
_INTRINSICS = '''
import numba.extending


@numba.extending.intrinsic
def _h2f_ir(typingctx, h):
    """float16 bits (uint16) -> float32: LLVM's fpext of the bits as half (F16C vcvtph2ps)."""
    def codegen(context, builder, sig, args):
        from llvmlite import ir
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())
    return numba.types.float32(numba.types.uint16), codegen


@numba.extending.intrinsic
def _f2h_ir(typingctx, x):
    """float32 -> float16 bits, rounded to nearest even: LLVM's fptrunc to half (F16C vcvtps2ph)."""
    def codegen(context, builder, sig, args):
        from llvmlite import ir
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
    return numba.types.uint16(numba.types.float32), codegen
'''

_H2F = '''
@numba.njit(error_model="numpy")
def _h2f(h):
    """float16 bits -> float32 value (exact)."""
    return _h2f_ir(np.uint16(h))
'''

_F2HF = '''
@numba.njit(error_model="numpy")
def _f2hf(x):
    """float32 -> float16 bits, rounded once to nearest even (NumPy's astype)."""
    return _f2h_ir(np.float32(x))
'''

_F2H = '''
@numba.njit(error_model="numpy")
def _f2h(x):
    """any float -> float16 bits, rounded once to nearest even (as NumPy's astype rounds a
    float64): rounded to float32 to odd (truncated toward zero, the last bit set where inexact),
    then to float16 in hardware; branch-free, so loops over it vectorise. NaN keeps its sign."""
    d = np.float64(x)
    t = np.float32(d)
    back = np.float64(t)
    away = np.uint32(abs(back) > abs(d))                    # rounded up in magnitude: step back
    inexact = np.uint32(np.uint32(back != d) & np.uint32(d == d))
    b = np.uint32(np.uint32(np.float32(t).view(np.uint32) - away) | inexact)
    return _f2h_ir(b.view(np.float32))
'''

_RF16 = '''
@numba.njit(error_model="numpy")
def {name}(x):
    """round {what} to float16 precision, returned as float32."""
    return {conv}({bits}(x))
'''

# name -> (source, helpers it calls), in definition order
HARDWARE: dict[str, tuple] = {
    "_f16_ir": (_INTRINSICS, ()),
    "_h2f": (_H2F, ("_f16_ir",)),
    "_f2hf": (_F2HF, ("_f16_ir",)),
    "_f2h": (_F2H, ("_f16_ir",)),
    "_rf16f": (_RF16.format(name="_rf16f", what="a float32", conv="_h2f_ir", bits="_f2hf"), ("_f16_ir", "_f2hf")),
    "_rf16": (_RF16.format(name="_rf16", what="a float", conv="_h2f_ir", bits="_f2h"), ("_f16_ir", "_f2h")),
}

# The integer versions, for a CPU without F16C (LLVM would call compiler-rt's __extendhfsf2 and
# __truncsfhf2 there, which Numba's JIT does not link): branch-free too; 4 Mi-element chains of
# float32 ops rounded to float16 on the Xeon VM: 0.95 ms, against 52 ms for the former _f2h.
_SOFT_H2F = '''
@numba.njit(error_model="numpy")
def _h2f(h):
    """float16 bits -> float32 value (exact), branch-free so loops over it vectorise: the bits
    shifted into a float32's exponent and significand, scaled by 2**112 (subnormals come out
    normal, exactly); infinity and NaN get the float32 exponent of all ones."""
    b = np.uint32(h)
    em = np.uint32(b & np.uint32(0x7fff))
    f = np.float32(np.uint32(em << np.uint32(13)).view(np.float32) * np.float32(5.192296858534828e+33))
    bits = np.float32(f).view(np.uint32)
    bits = np.uint32(bits | np.uint32(0x7f800000)) if em >= np.uint32(0x7c00) else bits
    return np.uint32(bits | np.uint32((b & np.uint32(0x8000)) << np.uint32(16))).view(np.float32)
'''

_SOFT_F2HF = '''
@numba.njit(error_model="numpy")
def _f2hf(x):
    """float32 -> float16 bits, rounded once to nearest even (NumPy's astype), branch-free: a
    normal result rounds in the integer bits (half a step plus the kept bit's parity), a
    subnormal one by a float add that aligns float16's step with float32's last bit; NaN
    keeps its sign (np.signbit sees it). 4 Mi-element chains: 0.95 ms vs 52 ms for _f2h."""
    u = np.float32(x).view(np.uint32)
    sign = np.uint32(np.uint32(u >> np.uint32(16)) & np.uint32(0x8000))
    u = np.uint32(u & np.uint32(0x7fffffff))
    sub = np.uint32(np.float32(u.view(np.float32) + np.float32(0.5)).view(np.uint32) - np.uint32(0x3f000000))
    odd = np.uint32(np.uint32(u >> np.uint32(13)) & np.uint32(1))
    nrm = np.uint32(np.uint32(np.uint32(u + np.uint32(0xc8000fff)) + odd) >> np.uint32(13))
    r = (np.uint32(0x7e00) if u > np.uint32(0x7f800000) else np.uint32(0x7c00) if u >= np.uint32(0x47800000)
         else sub if u < np.uint32(0x38800000) else nrm)
    return np.uint16(np.uint32(r | sign))
'''

_SOFT_F2H = '''
@numba.njit(error_model="numpy")
def _f2h(x):
    """any float -> float16 bits, rounded once to nearest even (as NumPy's astype): for values
    float32 does not hold exactly (float64, wide ints), where _f2hf would round twice."""
    x = np.float64(x)
    sign = 32768 if np.copysign(1.0, x) < 0 else 0
    if x != x:
        return np.uint16(sign | 32256)      # a NaN keeps its sign (np.signbit, np.copysign see it)
    a = abs(x)
    if a >= 65520.0:
        return np.uint16(sign | 31744)
    if a < 6.103515625e-05:
        return np.uint16(sign | np.int64(np.rint(a * 16777216.0)))
    m, e = math.frexp(a)
    bits = ((e + 14) << 10) + (np.int64(np.rint(m * 2048.0)) - 1024)
    return np.uint16(sign | bits)
'''

SOFTWARE: dict[str, tuple] = {
    "_h2f": (_SOFT_H2F, ()),
    "_f2hf": (_SOFT_F2HF, ()),
    "_f2h": (_SOFT_F2H, ()),
    "_rf16f": (_RF16.format(name="_rf16f", what="a float32", conv="_h2f", bits="_f2hf"), ("_h2f", "_f2hf")),
    "_rf16": (_RF16.format(name="_rf16", what="a float", conv="_h2f", bits="_f2h"), ("_h2f", "_f2h")),
}


def hardware_conversions() -> bool:
    """Whether this host converts float16 in hardware: x86-64 with F16C (its /proc/cpuinfo flags;
    read without llvmlite, which a warm-cache call does not import), or AArch64 (FCVT)."""
    machine = os.uname().machine
    if machine in ("aarch64", "arm64"):
        return True
    if machine not in ("x86_64", "AMD64"):
        return False
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return "f16c" in line.split(":", 1)[1].split()
    except OSError:
        pass
    return False


# what cpu_helpers registers (sources without their surrounding blank lines, as its own)
SOURCES = {name: (src.strip("\n"), deps) for name, (src, deps)
           in (HARDWARE if hardware_conversions() else SOFTWARE).items()}
