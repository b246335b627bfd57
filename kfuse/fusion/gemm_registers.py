"""Which "matmul" groups' epilogues the generated GEMM kernel applies to its accumulators in
registers: the cost model offers that kernel only for them, and the runtime's GEMM paths
(``runtime.gemm``) take the epilogue from the group's KernelIR only for them."""
from __future__ import annotations

from ..ir.ops import Op

# Ops the generated GEMM applies to its accumulators in registers (codegen.gemm_spec renders the
# group's own kernel-IR statements of them); comparisons are out (their values are bool).
EPILOGUE_OPS = frozenset({
    Op.NEGATIVE, Op.POSITIVE, Op.ABSOLUTE, Op.EXP, Op.LOG, Op.SQRT, Op.SQUARE, Op.RECIPROCAL,
    Op.TANH, Op.ADD, Op.SUBTRACT, Op.MULTIPLY, Op.TRUE_DIVIDE, Op.MAXIMUM, Op.MINIMUM, Op.FMAX,
    Op.FMIN, Op.POWER, Op.CAST,
})
_FLOATS = ("float16", "float32")


def epilogue_in_registers(group) -> bool:
    """Whether the generated GEMM can apply a ``"matmul"`` group's epilogue to its accumulators
    in registers: one output, of the product's shape and float16/float32; every node computed from
    the product of that shape and dtype kind, an op of ``EPILOGUE_OPS``; every other value it reads
    a constant or a float16/float32 group input broadcast to the product (through BROADCAST,
    leading-1 RESHAPE and float CAST nodes: the runtime passes its broadcast strides)."""
    mm = group.anchor
    if mm is None or mm.op is not Op.MATMUL or len(group.outputs) != 1:
        return False
    out = group.outputs[0]
    if out.shape != mm.shape or out.dtype.name not in _FLOATS:
        return False
    for n in group.nodes:
        if n is mm or not _depends_on(n, mm):
            continue
        if n.shape != mm.shape or n.dtype.name not in _FLOATS or n.op not in EPILOGUE_OPS:
            return False
        if not all(_depends_on(x, mm) or _broadcast_leaf(x, group, mm.ndim) for x in n.inputs):
            return False
    return out is mm or (out in group.nodes and _depends_on(out, mm))


def _broadcast_leaf(x, group, rank: int) -> bool:
    """A constant, or a float16/float32 group input of rank <= ``rank``, under BROADCAST,
    leading-1 RESHAPE and float CAST nodes (a reshape that moves dims, (N,) -> (N, 1), is not
    plain broadcasting)."""
    while x.op in (Op.BROADCAST, Op.RESHAPE) or (x.op is Op.CAST and x.dtype.kind == "f"):
        if x.op is Op.RESHAPE and _squeeze_lead(x.shape) != _squeeze_lead(x.inputs[0].shape):
            return False
        x = x.inputs[0]
    return x.op is Op.CONST or (x in group.inputs and x.dtype.name in _FLOATS and x.ndim <= rank)


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
