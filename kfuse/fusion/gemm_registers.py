"""Which "matmul" groups' epilogues the generated GEMM kernel applies to its accumulators in
registers: the cost model offers that kernel only for them, and the runtime's GEMM paths
(``runtime.gemm``) take the epilogue from the group's KernelIR only for them."""
from __future__ import annotations

from ..ir.ops import Op
from .gemm_int8 import int8_operands

# Ops the generated GEMM applies to its accumulators in registers (codegen.gemm_spec renders the
# group's own kernel-IR statements of them); comparisons are out (their values are bool).
EPILOGUE_OPS = frozenset({
    Op.NEGATIVE, Op.POSITIVE, Op.ABSOLUTE, Op.EXP, Op.LOG, Op.SQRT, Op.SQUARE, Op.RECIPROCAL,
    Op.TANH, Op.ADD, Op.SUBTRACT, Op.MULTIPLY, Op.TRUE_DIVIDE, Op.MAXIMUM, Op.MINIMUM, Op.FMAX,
    Op.FMIN, Op.POWER, Op.CAST,
})
_FLOATS = ("float16", "float32")
# an int8 GEMM's epilogue works on its int32 sums: NumPy promotes them with float32 scales to
# float64 (and its integer ops stay integers), all of which the kernel computes in registers
_INT8_VALUES = _FLOATS + ("float64", "int16", "int32")


def epilogue_in_registers(group) -> bool:
    """Whether the generated GEMM can apply a ``"matmul"`` group's epilogue to its accumulators
    in registers: one output, of the product's shape and float16/float32 (an int8 product's:
    also float64, int16, int32); every node computed from the product of that shape and one of
    those dtypes, an op of ``EPILOGUE_OPS``; every other value it reads a constant or a group input
    of those dtypes broadcast to the product (``_broadcast_leaf``: the runtime passes its strides)."""
    mm = group.anchor
    if mm is None or mm.op is not Op.MATMUL or len(group.outputs) != 1:
        return False
    values = _INT8_VALUES if int8_operands(mm) else _FLOATS
    out = group.outputs[0]
    if out.shape != mm.shape or out.dtype.name not in values:
        return False
    for n in group.nodes:
        if n is mm or not _depends_on(n, mm):
            continue
        if n.shape != mm.shape or n.dtype.name not in values or n.op not in EPILOGUE_OPS:
            return False
        if not all(_depends_on(x, mm) or _broadcast_leaf(x, group, mm.ndim, values) for x in n.inputs):
            return False
    return out is mm or (out in group.nodes and _depends_on(out, mm))


def _broadcast_leaf(x, group, rank: int, values=_FLOATS) -> bool:
    """A constant, or a group input of ``values`` dtypes of rank <= ``rank``, under BROADCAST,
    leading-1 RESHAPE and float CAST nodes. An int8 product's epilogue also takes RESHAPEs that
    insert or drop size-1 dims anywhere (a dequantising ``s[:, None]``: the runtime reads such an
    input through its own strides, ``gemm_spec.EpInput.dims``); a float product's does not yet
    (not run on a GPU: its cuBLAS path's epilogue kernel stays the group's own)."""
    squeeze = _squeeze if values is _INT8_VALUES else _squeeze_lead
    while x.op in (Op.BROADCAST, Op.RESHAPE) or (x.op is Op.CAST and x.dtype.kind == "f"):
        if x.op is Op.RESHAPE and squeeze(x.shape) != squeeze(x.inputs[0].shape):
            return False
        x = x.inputs[0]
    return x.op is Op.CONST or (x in group.inputs and x.dtype.name in values and x.ndim <= rank)


def _squeeze(shape) -> tuple:
    return tuple(d for d in shape if d != 1)


def _squeeze_lead(shape) -> tuple:
    shape = tuple(shape)
    while shape and shape[0] == 1:
        shape = shape[1:]
    return shape


def _depends_on(n, root) -> bool:
    stack, seen = [n], set()
    while stack:
        x = stack.pop()
        if x is root:
            return True
        if id(x) in seen:
            continue
        seen.add(id(x))
        stack.extend(x.inputs)
    return False
