"""16-bit float values in the CUDA emitter: each value known to hold a float16/bfloat16 number is
declared with its storage bits beside it (``v_h``), so the ops the hardware computes on the bits
(``cuda_ops.NATIVE_LOWP``: add, subtract, multiply), stores of the value and casts from it take the
bits without a conversion each way. NumPy rounds every float16 op's result (computed in float32):
a chain of them in float32 registers costs an op and two conversions a step, and float16 GEGLU ran
compute-bound on them.

A value's bits exist only where its declaration put them, in that declaration's scope. So every
declaration of a statement value goes through :meth:`LowpValues.decl` or :meth:`LowpValues.decl_bits`
(``self.bits`` holds the values declared with bits; a declaration without them takes the name out),
and an op takes the bits path only where all its arguments hold bits: values whose definition is
known to round (loads, constants, rounded op results, casts), never an accumulator's or an index's.
Bits nobody reads cost nothing (the compiler drops them)."""
from __future__ import annotations

import numpy as np

from . import kernel_ir as K
from .cuda_ops import LOWP, cast_bits, cast_expr, ctype, store_value

# 16-bit float ops computed on the bits (the prelude's KF_H16OP): exactly NumPy's rounding
NATIVE_LOWP = {("float16", "add"): "kf_hadd", ("float16", "subtract"): "kf_hsub", ("float16", "multiply"): "kf_hmul",
               ("bfloat16", "add"): "kf_bfadd", ("bfloat16", "subtract"): "kf_bfsub",
               ("bfloat16", "multiply"): "kf_bfmul"}


def lowp_literal_bits(value, dt: str) -> str:
    """The storage bits of constant ``value`` in 16-bit float ``dt``, as a C literal."""
    if dt == "float16":
        bits = int(np.float16(value).view(np.uint16))
    else:                                       # bfloat16: the top half of the float32 it rounds to
        f = np.array(float(np.dtype(dt).type(value)), np.float32)
        bits = int(f.view(np.uint32)) >> 16
    return f"((unsigned short){bits:#06x}u)"


class LowpValues:
    """Mixin of the CUDA emitter (``codegen.cuda._Gen``): needs ``self.bits`` (a set), ``self.op_raw``
    (an op's C value before NumPy's 16-bit rounding) and ``self.op_value`` (after it)."""
    bits: set

    def decl(self, dt: str, name: str, expr: str, rounded: bool = False) -> str:
        """``const T name = expr;``: with ``rounded`` (``expr`` is a value of 16-bit ``dt``), its
        bits beside it."""
        if dt in LOWP and rounded:
            self.bits.add(name)
            return f"const float {name} = {expr}; const unsigned short {name}_h = {LOWP[dt][1]}({name});"
        self.bits.discard(name)
        return f"const {ctype(dt)} {name} = {expr};"

    def decl_bits(self, dt: str, name: str, bits: str) -> str:
        """A 16-bit ``dt`` value declared from its storage bits ``bits``."""
        self.bits.add(name)
        return f"const unsigned short {name}_h = {bits}; const float {name} = {LOWP[dt][0]}({name}_h);"

    def forget(self, name: str) -> None:
        """``name`` is (re)assigned without its bits (a scan's running value, a branch's result)."""
        self.bits.discard(name)

    def loaded(self, s: K.Load, value: str) -> str:
        """Load ``s`` declared as ``value`` (``cuda_ops.load_expr``'s form, or a register already read)."""
        bits = _widened(value, s.dtype) if s.dtype in LOWP else None
        if bits is not None:
            return self.decl_bits(s.dtype, s.dst, bits)
        return self.decl(s.dtype, s.dst, value, rounded=True)

    def const_decl(self, s: K.Const, literal: str) -> str:
        """Constant ``s`` declared (``literal``: its C literal; a 16-bit one from its bits)."""
        if s.dtype in LOWP:
            return self.decl_bits(s.dtype, s.dst, lowp_literal_bits(s.value, s.dtype))
        return self.decl(s.dtype, s.dst, literal)

    def op_decl(self, s: K.Op) -> str:
        """Op ``s`` declared: a 16-bit result from the bits where it can be, else as ``op_value``."""
        dt, args = s.dtype, s.args
        if dt in LOWP:
            bits = self._lowp_bits(s)
            if bits is not None:
                return self.decl_bits(dt, s.dst, bits)
            exact = s.op != "where" and not (s.op == "cast" and s.arg_dtypes[0] == dt)
            return self.decl(dt, s.dst, self.op_value(s), rounded=exact)
        if s.op == "cast" and s.arg_dtypes[0] in LOWP and args[0] in self.bits:
            return self.decl(dt, s.dst, cast_expr(args[0], s.arg_dtypes[0], dt, rounded=True))
        return self.decl(dt, s.dst, self.op_value(s))

    def _lowp_bits(self, s: K.Op) -> str | None:
        dt, args = s.dtype, s.args
        native = NATIVE_LOWP.get((dt, s.op))
        if native and s.arg_dtypes == (dt, dt) and all(a in self.bits for a in args):
            return f"{native}({args[0]}_h, {args[1]}_h)"
        if s.op == "where":
            return f"({args[0]} ? {args[1]}_h : {args[2]}_h)" if args[1] in self.bits and args[2] in self.bits else None
        if s.op == "cast":
            src = s.arg_dtypes[0]
            if src == dt:
                return f"{args[0]}_h" if args[0] in self.bits else None
            if src in ("bool", "int8", "uint8") or src.startswith("complex"):   # exact, or cast_expr's own rule
                return None
            return cast_bits(args[0], src, dt, rounded=args[0] in self.bits)
        return f"{LOWP[dt][1]}({self.op_raw(s)})"

    def stored(self, v: str, vdt: str, dt: str) -> str:
        """The storage value of register ``v`` (of ``vdt``) stored as ``dt``: its bits where it has them."""
        if dt in LOWP and vdt == dt and v in self.bits:
            return f"{v}_h"
        return store_value(v, vdt, dt)


def _widened(expr: str, dt: str) -> str | None:
    """``x`` where ``expr`` is ``widen(x)``, 16-bit ``dt``'s widening of the bits ``x`` (``load_expr``'s form)."""
    head = LOWP[dt][0] + "("
    if not (expr.startswith(head) and expr.endswith(")")):
        return None
    depth = 0
    for i in range(len(head) - 1, len(expr)):
        depth += {"(": 1, ")": -1}.get(expr[i], 0)
        if depth == 0:
            return expr[len(head):-1] if i == len(expr) - 1 else None
    return None
