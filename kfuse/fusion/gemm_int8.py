"""The int8 GEMM pattern: a MATMUL whose two operands are int8/uint8 arrays cast to a wider
integer, ``a.astype(np.int32) @ b.astype(np.int32)`` (NumPy's exact spelling of an int8 product
with int32 sums), possibly through transposes (``x @ w.T``) on either side of the cast.

The int8 tensor cores compute that product exactly: each int8 x int8 product is exact in int32
and the int32 sums wrap modulo 2^32 as NumPy's int32 matmul loop does (in any order). An int16
product (``astype(np.int16)``) is the int32 sum's low 16 bits, as NumPy's int16 loop wraps. An
int64 product is not taken: its sums may pass int32's range, where int32 accumulators would wrap
and NumPy's would not.
"""
from __future__ import annotations

from ..ir.ops import Op

SOURCES = {"int8": "s8", "uint8": "u8"}     # operand dtype -> the mma's type
PRODUCTS = ("int16", "int32")


def _under_permutes(x):
    while x.op is Op.PERMUTE:
        x = x.inputs[0]
    return x


def _source(x):
    """The int8/uint8 value an operand casts (transposes either side of the cast), or None."""
    x = _under_permutes(x)
    if x.op is not Op.CAST:
        return None
    s = _under_permutes(x.inputs[0])
    return s if s.dtype.name in SOURCES else None


def int8_operands(mm) -> tuple[str, str] | None:
    """The mma types (``"s8"``/``"u8"``) of A and B when ``mm`` is the int8 pattern, else None."""
    if mm is None or mm.op is not Op.MATMUL or mm.dtype.name not in PRODUCTS:
        return None
    srcs = [_source(x) for x in mm.inputs]
    if any(s is None for s in srcs):
        return None
    return tuple(SOURCES[s.dtype.name] for s in srcs)


def describe(mm, arch: str | None = None) -> str:
    """The explain note of an int8 product on ``arch``: the instruction and its types."""
    a, b = int8_operands(mm)
    inst = "wgmma m64nNk32" if (arch or "").startswith("sm_90") else "mma.sync m16n8k32"
    return f"int8 tensor cores ({inst} {a} x {b} -> int32 sums, {mm.dtype.name} product)"
