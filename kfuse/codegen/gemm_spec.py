"""What a generated GEMM kernel is specialised on, shared by the GEMM emitter and the runtime.

``GemmEpilogue``: the elementwise work applied to each accumulator element before its single
store, as kernel-IR statements (``Load`` of an extra input, ``Const``, ``Op``): the statements a
matmul group's KernelIR holds after its contraction, rendered by the CUDA C rules every kernel
uses (``codegen.cuda_ops``). :func:`epilogue_of_kernel` takes them from a matmul group's
KernelIR (``codegen.lower``); :meth:`GemmEpilogue.chain` writes them by hand (``run_gemm``, tests,
benchmarks). ``GemmSpec``: operand dtypes, epilogue, layout and alignment class (never sizes).
Operands are f16/bf16 (tensor cores, float32 accumulators), f32 (FMA) or int8/uint8 (``s8``/``u8``:
int8 tensor cores, int32 accumulators that wrap as NumPy's int32 sums do).
"""
from __future__ import annotations

import dataclasses

from ..ir.ops import ELEMENTWISE
from . import kernel_ir as K

DTYPES = ("f16", "bf16", "f32", "s8", "u8")            # operands
INT8 = ("s8", "u8")
OUT_DTYPES = ("f16", "bf16", "f32", "f64", "i16", "i32")  # what the epilogue stores
IN_DTYPES = ("f16", "bf16", "f32", "f64", "i16", "i32")   # epilogue inputs
NP_DTYPE = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64", "s8": "int8",
            "u8": "uint8", "i16": "int16", "i32": "int32"}
_SHORT = {v: k for k, v in NP_DTYPE.items()}
INPUT_KINDS = ("row", "col", "full", "scalar")
# an epilogue input's index in the output's (batch, m, n) coordinates, by kind
_KIND_INDEX = {"row": ("b", None, "n"), "col": ("b", "m", None), "full": ("b", "m", "n"),
               "scalar": (None, None, None)}
_OPS = frozenset(o.value for o in ELEMENTWISE)


@dataclasses.dataclass(frozen=True)
class EpInput:
    """An extra array read by the epilogue, seen broadcast to the output's (batch, M, N) shape
    (its strides come at run time). ``kind``: ``row`` = varies along N (a Linear's bias, (N,)),
    ``col`` = along M ((M, 1)), ``full`` = along both (a residual), ``scalar`` = one element.
    ``dims``: per dim of the array, the output coordinate it runs along (``"b"``, ``"m"``, ``"n"``)
    or ``"1"`` (a size-1 dim): ``"m"`` is a (M,) scale read as ``s[:, None]``. None: the array
    broadcasts to (batch, M, N) by NumPy's rules."""
    dtype: str = "f16"
    kind: str = "row"
    dims: str | None = None

    @property
    def index(self) -> tuple:
        """Its (batch, m, n) index in the epilogue's statements (``b``, ``m``, ``n`` variables)."""
        return tuple(K.lit(0) if c is None else K.IVar(c) for c in _KIND_INDEX[self.kind])


@dataclasses.dataclass(frozen=True)
class GemmEpilogue:
    """``body``: SSA statements in registers, reading ``product`` (the accumulator, rounded to
    ``product_dtype`` first as NumPy's product is), epilogue input ``k`` by ``Load(buf=k)`` at its
    ``EpInput.index``, and the run-time float32 scalars ``p0``, ``p1``... (``n_params``). The
    ``result`` variable is rounded once to ``out_dtype`` and stored."""
    body: tuple = ()
    result: str = "acc"
    inputs: tuple[EpInput, ...] = ()
    n_params: int = 0
    out_dtype: str = "f16"
    product: str = "acc"
    product_dtype: str = "float32"

    def __post_init__(self):
        if self.out_dtype not in OUT_DTYPES:
            raise ValueError(f"epilogue out_dtype {self.out_dtype!r} not in {OUT_DTYPES}")
        for i in self.inputs:
            if i.dtype not in IN_DTYPES or i.kind not in INPUT_KINDS:
                raise ValueError(f"bad epilogue input {i}")
        self.result_dtype       # checks every statement

    @property
    def result_dtype(self) -> str:
        """The NumPy dtype name of the stored value (before its rounding to ``out_dtype``);
        raises ValueError on a statement that reads an undefined value or is not an epilogue's."""
        dtypes = {self.product: self.product_dtype, **{f"p{j}": "float32" for j in range(self.n_params)}}
        for k, s in enumerate(self.body):
            if isinstance(s, K.Load):
                ok = 0 <= s.buf < len(self.inputs) and s.dtype == NP_DTYPE[self.inputs[s.buf].dtype]
            elif isinstance(s, K.Op):
                ok = s.op in _OPS and all(a in dtypes for a in s.args)
            else:
                ok = isinstance(s, K.Const)
            if not ok or s.dst in dtypes:
                raise ValueError(f"epilogue statement {k}: {s}")
            dtypes[s.dst] = s.dtype
        dt = dtypes.get(self.result)
        if _SHORT.get(dt) not in OUT_DTYPES:
            raise ValueError(f"epilogue result {self.result!r} is not a value of {OUT_DTYPES}")
        return dt

    @property
    def int_product(self) -> bool:
        """Whether the accumulator is an integer (an int8 GEMM's int32 sums)."""
        return not self.product_dtype.startswith(("float", "bfloat"))

    @staticmethod
    def chain(*ops, out_dtype: str = "f16", inputs: tuple = (), n_params: int = 0,
              product_dtype: str = "float32", dtype: str = "float32") -> "GemmEpilogue":
        """A linear chain in ``dtype`` on the accumulator, each item applied to the previous value:
        a NumPy ufunc name (``"tanh"``), ``("add", ("in", 0))`` (epilogue input 0),
        ``("multiply", ("p", 0))`` (run-time scalar 0), ``("multiply", ("c", 0.5))`` (a constant),
        ``("cast", "float16")`` (round to float16), or a composite of ufuncs: ``"relu"``,
        ``"gelu_tanh"``, ``"silu"``, ``"sigmoid"``. Example: ``chain(("add", ("in", 0)),
        "gelu_tanh", inputs=(EpInput("f16", "row"),))`` is bias + GELU. ``dtype``: the chain's
        arithmetic (the product and inputs are cast to it first): an int8 GEMM's dequantisation
        as NumPy computes it is ``chain(("multiply", ("in", 0)), ("multiply", ("in", 1)),
        product_dtype="int32", dtype="float64", ...)``."""
        w = _Writer(tuple(inputs), dtype)
        v = "acc" if product_dtype == dtype else w.op("cast", "acc", src=product_dtype)
        for item in ops:
            op, extra = (item, ()) if isinstance(item, str) else (item[0], tuple(item[1:]))
            if op in _COMPOSITES:
                v = _COMPOSITES[op](w, v)
            elif op == "cast":
                v = w.op("cast", w.op("cast", v, dtype=extra[0]), src=extra[0])
            else:
                v = w.op(op, v, *(w.arg(a) for a in extra))
        return GemmEpilogue(tuple(w.body), v, tuple(inputs), n_params, out_dtype, "acc", product_dtype)

    def describe(self) -> str:
        ops = [s.op for s in self.body if isinstance(s, K.Op)]
        return "/".join(ops) + f"->{self.out_dtype}" if ops else f"store->{self.out_dtype}"


class _Writer:
    """Statements in one float dtype (``dt``) for :meth:`GemmEpilogue.chain`."""

    def __init__(self, inputs, dt: str = "float32"):
        self.inputs, self.body, self.dt = inputs, [], dt

    def emit(self, make) -> str:
        v = f"v{len(self.body)}"
        self.body.append(make(v))
        return v

    def op(self, name: str, *args, dtype: str | None = None, src: str | None = None) -> str:
        dtype, src = dtype or self.dt, src or self.dt
        return self.emit(lambda v: K.Op(v, name, dtype, args, (src,) * len(args)))

    def const(self, x) -> str:
        return self.emit(lambda v: K.Const(v, self.dt, float(x)))

    def arg(self, a) -> str:
        tag, x = a
        if tag == "c":
            return self.const(x)
        if tag == "p":         # run-time scalars are float32
            return f"p{x}" if self.dt == "float32" else self.op("cast", f"p{x}", src="float32")
        dt = NP_DTYPE[self.inputs[x].dtype]
        v = self.emit(lambda v: K.Load(v, dt, x, self.inputs[x].index))
        return v if dt == self.dt else self.op("cast", v, src=dt)


def _gelu_tanh(w: _Writer, x: str) -> str:
    # 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
    half = w.op("multiply", w.const(0.5), x)
    cube = w.op("multiply", w.op("multiply", w.op("multiply", w.const(0.044715), x), x), x)
    t = w.op("tanh", w.op("multiply", w.const(0.7978845608028654), w.op("add", x, cube)))
    return w.op("multiply", half, w.op("add", w.const(1.0), t))


def _sigmoid_of(w: _Writer, num: str, x: str) -> str:
    return w.op("divide", num, w.op("add", w.const(1.0), w.op("exp", w.op("negative", x))))


_COMPOSITES = {
    "relu": lambda w, x: w.op("maximum", x, w.const(0.0)),
    "gelu_tanh": _gelu_tanh,
    "silu": lambda w, x: _sigmoid_of(w, x, x),
    "sigmoid": lambda w, x: _sigmoid_of(w, w.const(1.0), x),
}


@dataclasses.dataclass(frozen=True)
class GemmSpec:
    """What a generated GEMM kernel is specialised on (never sizes).

    ``a_kmajor``: A's unit-stride dim is K (row-major M x K); else M (column-major).
    ``b_kmajor``: B's unit-stride dim is K (column-major K x N, e.g. a transposed row-major
    weight); else N (row-major K x N). ``aligned``: inner stride 1, outer/batch strides multiples
    of 8 elements and 16-byte-aligned bases, so tiles load with 16-byte ``cp.async``; otherwise
    elements load one by one through arbitrary strides (any view works, slower). int8 operands
    (``s8``/``u8``; ``b_dtype`` may differ from ``dtype`` in sign) take only K-major aligned tiles:
    int8 has no ``ldmatrix.trans``, so the runtime packs any other layout K-major first."""
    dtype: str = "f16"                      # A (and B unless b_dtype)
    epilogue: GemmEpilogue = GemmEpilogue()
    a_kmajor: bool = True
    b_kmajor: bool = False
    aligned: bool = True
    allow_tf32: bool = False                # f32: the cuBLAS candidate may use TF32; the generated kernel stays FMA
    b_dtype: str | None = None              # int8 only: B's signedness when it differs from A's

    @property
    def out_dtype(self) -> str:
        return self.epilogue.out_dtype

    @property
    def int8(self) -> bool:
        return self.dtype in INT8

    @property
    def tensor_core(self) -> bool:
        return self.dtype in ("f16", "bf16") or self.int8

    @property
    def elem_bytes(self) -> int:
        return 1 if self.int8 else 4 if self.dtype == "f32" else 2

    def key(self) -> str:
        b = f"x{self.b_dtype}" if self.b_dtype not in (None, self.dtype) else ""
        return (f"{self.dtype}{b}_{'k' if self.a_kmajor else 'm'}{'k' if self.b_kmajor else 'n'}"
                f"_{'al' if self.aligned else 'gen'}_{self.epilogue.describe()}")


@dataclasses.dataclass(frozen=True)
class GemmTile:
    """A tensor-core kernel's blocking: ``block_k`` in elements (a multiple of the mma's K: 16 for
    16-bit operands, 32 for int8), ``stages`` of the cp.async pipeline, ``group_m`` tile rows
    rasterised together for L2 reuse."""
    block_m: int = 128
    block_n: int = 128
    block_k: int = 32
    warps_m: int = 2
    warps_n: int = 2
    stages: int = 4
    group_m: int = 8

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    def smem_bytes(self, spec: GemmSpec) -> int:
        if not spec.tensor_core:
            return 0                         # the FMA kernel uses static shared memory
        bm, bn, bk, pad = self.block_m, self.block_n, self.block_k, 16 // spec.elem_bytes
        a = bm * (bk + pad) if spec.a_kmajor or spec.int8 else bk * (bm + pad)
        b = bn * (bk + pad) if spec.b_kmajor or spec.int8 else bk * (bn + pad)
        return spec.elem_bytes * self.stages * (a + b)

    def check(self, spec: GemmSpec) -> None:
        if not spec.tensor_core:
            return
        wtm, wtn = self.block_m // self.warps_m, self.block_n // self.warps_n
        mk, ch = (32, 16) if spec.int8 else (16, 8)      # the mma's K; elements a 16-byte chunk
        if wtm % 16 or wtn % 16 or self.block_k % mk or self.stages < 2:
            raise ValueError(f"bad tile {self}: warp tile {wtm}x{wtn} must be multiples of 16, "
                             f"block_k of {mk}")
        for rows, cols in ((self.block_m, self.block_k), (self.block_n, self.block_k)):
            if (rows * cols // ch) % self.threads:
                raise ValueError(f"bad tile {self}: {rows}x{cols} chunks not divisible by threads")
        for cols in ((self.block_k if spec.a_kmajor or spec.int8 else self.block_m),
                     (self.block_k if spec.b_kmajor or spec.int8 else self.block_n)):
            if self.threads % (cols // ch):
                raise ValueError(f"bad tile {self}: {cols // ch} chunks a row vs {self.threads} threads")
        if self.smem_bytes(spec) > 227 * 1024:
            raise ValueError(f"tile {self} needs {self.smem_bytes(spec)} B of shared memory")

    def name(self) -> str:
        return (f"{self.block_m}x{self.block_n}x{self.block_k}_w{self.warps_m}x{self.warps_n}"
                f"_s{self.stages}")


def epilogue_of_kernel(kir: K.KernelIR) -> tuple[GemmEpilogue, tuple[int, ...]] | None:
    """A matmul group's epilogue: its KernelIR's statements after the contraction, the product's
    load becoming the accumulator, and per epilogue input the kernel input slot feeding it. None
    unless the kernel is one phase storing one output (of ``OUT_DTYPES``) at the element's own
    index of a 2-D/3-D product, reading the product there and every other input (of
    ``IN_DTYPES``) broadcast to the output as NumPy broadcasts (what the runtime passes strides for)."""
    c, rank = kir.contraction, len(kir.domain)
    if c is None or rank not in (2, 3) or len(kir.outputs) != 1 or len(kir.phases) != 1:
        return None
    ph = kir.phases[0]
    if ph.accs or ph.body or _SHORT.get(kir.outputs[0].dtype) not in OUT_DTYPES:
        return None
    own = tuple(K.lit(0) if isinstance(e, K.ILit) else K.IVar(f"i{d}") for d, e in enumerate(kir.domain))
    body, inputs, slots, product, result = [], [], [], None, None
    for s in ph.pre:
        if isinstance(s, K.Load) and s.buf == c.result and tuple(s.index) == own:
            product = s
        elif isinstance(s, K.Load) and s.buf != c.result:
            dims = _input_dims(s.index, kir.inputs[s.buf].shape, rank)
            if dims is None or _SHORT.get(s.dtype) not in IN_DTYPES:
                return None
            inputs.append(EpInput(_SHORT[s.dtype], _kind(dims), None if _numpy_broadcast(dims, rank) else dims))
            slots.append(s.buf)
            body.append(K.Load(s.dst, s.dtype, len(inputs) - 1, inputs[-1].index))
        elif isinstance(s, (K.Const, K.Op)):
            body.append(s)
        elif isinstance(s, K.Store) and not s.combine and result is None and tuple(s.index) == own:
            result = s.src
        else:
            return None
    if product is None or result is None:
        return None
    return (GemmEpilogue(tuple(body), result, tuple(inputs), 0, _SHORT[kir.outputs[0].dtype],
                         product.dst, product.dtype), tuple(slots))


def _input_dims(index, shape, rank: int) -> str | None:
    """``EpInput.dims`` of an input read at ``index`` (over the domain's ``i<d>``): each of its
    dims runs along one output coordinate (once) or is a size-1 dim read at 0; else None."""
    dims = ""
    for j, e in enumerate(index):
        d = int(e.name[1:]) if isinstance(e, K.IVar) and e.name[1:].isdigit() else None
        if d is not None and d < rank:
            dims += "bmn"[3 - rank + d]
        elif isinstance(e, K.ILit) and e.value == 0 and shape[j] == 1:
            dims += "1"
        else:
            return None
    used = dims.replace("1", "")
    return dims if len(set(used)) == len(used) else None


def _numpy_broadcast(dims: str, rank: int) -> bool:
    """Whether an input of ``dims`` is read as NumPy broadcasts it to the output (trailing dims
    aligned): ``EpInput.dims`` is then left None."""
    lead = rank - len(dims)
    return lead >= 0 and all(c in ("1", "bmn"[3 - rank + lead + j]) for j, c in enumerate(dims))


def _kind(dims: str) -> str:
    used = set(dims) - {"1"}
    if "m" in used and "n" in used or used == {"b"}:
        return "full"
    return "row" if "n" in used else "col" if "m" in used else "scalar"
