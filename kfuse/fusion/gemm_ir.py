"""The description of a generated GEMM, shared by the GEMM emitter and the runtime: the epilogue
(``GemmEpilogue``: SSA ``EpStep``s over the f32 accumulator, extra ``EpInput`` arrays, run-time
scalars, output dtype, validated on construction), ``GemmSpec`` (what a kernel is specialised on),
and ``epilogue_from_group``, which translates a fusion plan's ``"matmul"`` group into an epilogue
(or None when the generated GEMM cannot apply it in registers)."""
from __future__ import annotations

import dataclasses

from ..ir.ops import Op

DTYPES = ("f16", "bf16", "f32")

# ---------------------------------------------------------------- epilogue description
UNARY_OPS = ("relu", "gelu_tanh", "gelu_erf", "silu", "sigmoid", "tanh", "exp", "log", "sqrt",
             "neg", "abs", "square", "recip", "round_f16", "round_bf16", "erf")
BINARY_OPS = ("add", "sub", "mul", "div", "max", "min", "fmax", "fmin", "pow",
              "gt", "ge", "lt", "le", "eq", "ne")
TERNARY_OPS = ("where",)
INPUT_KINDS = ("row", "col", "full", "scalar")   # row: indexed by n (bias of a Linear); col: by m


@dataclasses.dataclass(frozen=True)
class EpInput:
    """An extra array read by the epilogue. ``kind`` picks the index math: ``row`` = a vector
    along N broadcast over rows (shape (N,)), ``col`` = along M (shape (M, 1)), ``full`` = the
    output's shape (residual), ``scalar`` = one element. Strides come at run time."""
    dtype: str = "f16"
    kind: str = "row"


@dataclasses.dataclass(frozen=True)
class EpStep:
    """One SSA step: ``op`` applied to ``args``; its value is ``("v", k+1)`` for the k-th step.
    An arg is ``("v", j)`` (``("v", 0)`` = the accumulator), ``("in", i)`` (epilogue input i at
    this element), ``("c", x)`` (a constant) or ``("p", j)`` (run-time f32 scalar j)."""
    op: str
    args: tuple = ()


@dataclasses.dataclass(frozen=True)
class GemmEpilogue:
    """Steps applied in f32 to each accumulator element; the last step's value is rounded once to
    ``out_dtype`` (the output cast) and stored."""
    steps: tuple[EpStep, ...] = ()
    inputs: tuple[EpInput, ...] = ()
    n_params: int = 0
    out_dtype: str = "f16"

    def __post_init__(self):
        if self.out_dtype not in DTYPES:
            raise ValueError(f"epilogue out_dtype {self.out_dtype!r} not in {DTYPES}")
        for k, s in enumerate(self.steps):
            arity = 1 if s.op in UNARY_OPS else 2 if s.op in BINARY_OPS else 3 if s.op in TERNARY_OPS else -1
            if arity < 0 or len(s.args) != arity:
                raise ValueError(f"epilogue step {k}: bad op/arity {s}")
            for a in s.args:
                tag, v = a
                ok = ((tag == "v" and 0 <= v <= k) or (tag == "in" and 0 <= v < len(self.inputs))
                      or (tag == "p" and 0 <= v < self.n_params) or tag == "c")
                if not ok:
                    raise ValueError(f"epilogue step {k}: bad argument {a}")
        for i in self.inputs:
            if i.dtype not in DTYPES or i.kind not in INPUT_KINDS:
                raise ValueError(f"bad epilogue input {i}")

    @staticmethod
    def chain(*ops, out_dtype: str = "f16", inputs: tuple = (), n_params: int = 0) -> "GemmEpilogue":
        """A linear chain, each item applied to the previous value: ``"relu"``, ``"gelu_tanh"``,
        ``("add", ("in", 0))`` (bias/residual), ``("mul", ("p", 0))`` (run-time scale),
        ``("mul", ("c", 0.5))``. Example: ``chain(("add", ("in", 0)), "gelu_tanh",
        inputs=(EpInput("f16", "row"),))`` is bias + GELU."""
        steps = []
        for k, item in enumerate(ops):
            op, extra = (item, ()) if isinstance(item, str) else (item[0], tuple(item[1:]))
            steps.append(EpStep(op, (("v", k),) + extra))
        return GemmEpilogue(tuple(steps), tuple(inputs), n_params, out_dtype)

    def describe(self) -> str:
        return "/".join(s.op for s in self.steps) + f"->{self.out_dtype}" if self.steps else f"store->{self.out_dtype}"


@dataclasses.dataclass(frozen=True)
class GemmSpec:
    """What a generated GEMM kernel is specialised on (never sizes).

    ``a_kmajor``: A's unit-stride dim is K (row-major M x K); else M (column-major).
    ``b_kmajor``: B's unit-stride dim is K (column-major K x N, e.g. a transposed row-major
    weight); else N (row-major K x N). ``aligned``: inner stride 1, outer/batch strides multiples
    of 8 elements and 16-byte-aligned bases, so tiles load with 16-byte ``cp.async``; otherwise
    elements load one by one through arbitrary strides (any view works, slower)."""
    dtype: str = "f16"                      # A and B
    epilogue: GemmEpilogue = GemmEpilogue()
    a_kmajor: bool = True
    b_kmajor: bool = False
    aligned: bool = True
    allow_tf32: bool = False                # f32: the cuBLAS candidate may use TF32; the generated kernel stays FMA

    @property
    def out_dtype(self) -> str:
        return self.epilogue.out_dtype

    @property
    def tensor_core(self) -> bool:
        return self.dtype in ("f16", "bf16")

    def key(self) -> str:
        return (f"{self.dtype}_{'k' if self.a_kmajor else 'm'}{'k' if self.b_kmajor else 'n'}"
                f"_{'al' if self.aligned else 'gen'}_{self.epilogue.describe()}")


# ---------------------------------------------------------------- IR -> epilogue
_IR_UNARY = {"negative": "neg", "absolute": "abs", "exp": "exp", "log": "log", "sqrt": "sqrt",
             "square": "square", "reciprocal": "recip", "tanh": "tanh"}
_IR_BINARY = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div",
              "maximum": "max", "minimum": "min", "fmax": "fmax", "fmin": "fmin", "power": "pow",
              "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
              "equal": "eq", "not_equal": "ne"}
_IR_DT = {"float16": "f16", "float32": "f32"}


def epilogue_from_group(group):
    """Translate a fusion plan's ``"matmul"`` group into ``(GemmEpilogue, input_nodes)``, or None
    when the epilogue holds something the generated GEMM cannot apply in registers.

    ``input_nodes[i]`` is the node whose array feeds epilogue input ``i`` (a group input; the
    runtime broadcasts it to the output shape and passes its strides). Operand-side ``CAST``s are
    skipped (the runtime casts operands); bool/int intermediates, f64, several outputs -> None."""
    mm = group.anchor
    if mm is None or mm.op is not Op.MATMUL or len(group.outputs) != 1:
        return None
    out = group.outputs[0]
    if out.shape != mm.shape or out.dtype.name not in _IR_DT:
        return None
    vals, steps, inputs, in_nodes = {mm: ("v", 0)}, [], [], []
    rank = len(mm.shape)

    def leaf(n):                                   # a value not computed from the matmul
        if n.op is Op.CONST:
            return ("c", float(n.attr("value")))
        src = n
        while src.op in (Op.BROADCAST, Op.RESHAPE) or (src.op is Op.CAST and src.dtype.kind == "f"):
            if src.op is Op.RESHAPE and _squeeze_lead(src.shape) != _squeeze_lead(src.inputs[0].shape):
                return None        # a reshape that moves dims ((N,) -> (N, 1)): not plain broadcasting
            src = src.inputs[0]
        if src.op is Op.CONST:
            return ("c", float(src.attr("value")))
        if src not in group.inputs or src.dtype.name not in _IR_DT:
            return None
        shp = (1,) * (rank - src.ndim) + tuple(src.shape)
        if len(shp) != rank:
            return None
        m_b, n_b = shp[-2] == 1, shp[-1] == 1
        kind = ("scalar" if src.size == 1 else "row" if m_b and not n_b else "col" if n_b and not m_b
                else "full")
        if src in in_nodes:
            return ("in", in_nodes.index(src))
        inputs.append(EpInput(_IR_DT[src.dtype.name], kind))
        in_nodes.append(src)
        return ("in", len(in_nodes) - 1)

    def emit(op, args):
        steps.append(EpStep(op, tuple(args)))
        return ("v", len(steps))

    if mm.dtype.name == "float16":
        # NumPy's float16 product is rounded to float16 before anything reads it (an entry past
        # 65504 is inf there: v - v is nan, not 0); the steps after it stay in float32
        vals[mm] = emit("round_f16", [("v", 0)])
    for n in group.nodes:
        if n is mm or n in vals or not _depends_on(n, mm):
            continue
        if n.shape != mm.shape or n.dtype.kind != "f" or n.dtype.name not in _IR_DT:
            return None
        args = []
        for x in n.inputs:
            a = vals.get(x) if _depends_on(x, mm) else leaf(x)
            if a is None:
                return None
            args.append(a)
        name = n.op.value
        if n.op is Op.CAST:
            vals[n] = emit("round_f16", args) if n.dtype.name == "float16" and n is not out else args[0]
        elif name in _IR_UNARY and len(args) == 1:
            vals[n] = emit(_IR_UNARY[name], args)
        elif name in _IR_BINARY and len(args) == 2:
            vals[n] = emit(_IR_BINARY[name], args)
        elif n.op is Op.POSITIVE:
            vals[n] = args[0]
        else:
            return None
    if out not in vals:
        return None
    if vals[out] != ("v", len(steps)):            # the output must be the last value
        emit("add", [vals[out], ("c", 0.0)])
    return GemmEpilogue(tuple(steps), tuple(inputs), 0, _IR_DT[out.dtype.name]), tuple(in_nodes)


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
