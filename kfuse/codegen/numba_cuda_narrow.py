"""Numba-CUDA intrinsics that narrow a wrapped integer result to int8/int16/uint8/uint16.

Imported only by the kernels :mod:`kfuse.codegen.numba_cuda` generates (so only where numba-cuda
imports). Each takes any integer, keeps its low 8 or 16 bits by a bit-field extract in inline PTX
(``bfe.s32``/``bfe.u32``) and returns the narrow type. Hidden inside asm, the arithmetic that
produced the value stays 32- or 64-bit: a plain ``np.int16(np.uint64(0) - x)`` lets NVVM narrow the
subtraction to ``neg.s16``, and ptxas treats a 16-bit result as already sign-extended, so a wrapped
value was read back unwrapped by the next op (int16 ``-(-32768) // -32768`` gave -1, not 1; fuzz
seed 35 #3382). The CUDA C emitter does the same through ``kf_narrow``."""
from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.cuda.extending import intrinsic


def _narrower(bits: int, signed: bool):
    result = types.Integer.from_bitwidth(bits, signed)
    i32 = ir.IntType(32)
    asm = f"bfe.{'s' if signed else 'u'}32 $0, $1, 0, {bits};"

    def narrow(typingctx, v):
        if not isinstance(v, (types.Integer, types.Boolean)):
            return None

        def codegen(context, builder, sig, args):
            x = args[0]
            w = x.type.width
            if w > 32:
                x = builder.trunc(x, i32)
            elif w < 32:
                x = builder.sext(x, i32) if getattr(sig.args[0], "signed", False) else builder.zext(x, i32)
            r = builder.asm(ir.FunctionType(i32, [i32]), asm, "=r,r", [x], False)
            return builder.trunc(r, ir.IntType(bits))
        return result(v), codegen
    narrow.__name__ = f"narrow_{result.name}"
    return intrinsic(narrow)


narrow_int8 = _narrower(8, True)
narrow_int16 = _narrower(16, True)
narrow_uint8 = _narrower(8, False)
narrow_uint16 = _narrower(16, False)
