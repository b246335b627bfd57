"""The fuzzer's program representation: :class:`InputSpec` (an input array and the view taken of
it), :class:`Step` (``vK = expr`` plus statements writing into ``vK``) and :class:`Program` (inputs,
steps, outputs), which prints itself as a Python function and builds its inputs; and
:func:`_evaluate`, NumPy's value of an expression over named arrays (warnings off)."""
from __future__ import annotations

import dataclasses
import math
import re
import warnings

import numpy as np

from .compare import CONTRACTIONS

NAME_RE = re.compile(r"\b([av]\d+)\b")
# ends a write whose result depends on the order of writes to a repeated position (``x[[0, 0]] =
# [1, 2]``: NumPy's, and the CPU backend's, last write lands; a GPU lands any one): such a program
# is compared on the CPU backend only (``Program.cpu_only``)
CPU_ORDER = "# repeated positions: C order, CPU only"
_AT_RE = re.compile(r"np\.([a-z_0-9]+)\.at\(")


def _fmt_float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(float(x))


def _fmt_value(x) -> str:
    if isinstance(x, complex):
        return f"complex({_fmt_float(x.real)}, {_fmt_float(x.imag)})"
    return _fmt_float(x) if isinstance(x, float) else repr(x)


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """One array argument: literal values of a base array, then ``base[slices].transpose(perm)``."""

    name: str
    dtype: str
    base_shape: tuple[int, ...]
    values: tuple                      # flat, C order, Python scalars
    slices: tuple | None = None        # per base dim: (start, step); start None for negative steps
    perm: tuple[int, ...] | None = None

    def view_suffix(self) -> str:
        s = ""
        if self.slices is not None:
            parts = []
            for start, step in self.slices:
                parts.append(f"{'' if start is None else start}::{step}")
            s += "[" + ", ".join(parts) + "]"
        if self.perm is not None:
            s += f".transpose({self.perm!r})"
        return s

    def source(self) -> str:
        vals = "[" + ", ".join(_fmt_value(v) for v in self.values) + "]"
        return (f"np.array({vals}, dtype=np.{self.dtype}).reshape({self.base_shape!r})"
                f"{self.view_suffix()}")

    def build(self, xp=np) -> np.ndarray:
        a = np.array(list(self.values), dtype=self.dtype).reshape(self.base_shape)
        if xp is not np:      # (not xp.asarray: CuPy's 0-d copy drops the sign of -0.0)
            a = xp.asarray(a.reshape(-1)).reshape(a.shape)
        if self.slices is not None:
            a = a[tuple(slice(st, None, sp) for st, sp in self.slices)]
        if self.perm is not None:
            a = a.transpose(self.perm)
        return a


@dataclasses.dataclass(frozen=True)
class Step:
    """``out = expr``, then ``writes``: statements writing into ``out`` (``out[1:] = 0``)."""
    out: str
    expr: str
    writes: tuple[str, ...] = ()

    @property
    def in_place(self) -> bool:
        """Whether the step writes into an earlier name's memory (``v3 = a0`` then ``v3[i] = 1``:
        an argument's or an earlier value's), a side effect that later reads of that name see."""
        return bool(self.writes) and NAME_RE.fullmatch(self.expr) is not None

    def uses(self) -> list[str]:
        return [n for n in NAME_RE.findall(" ".join((self.expr,) + self.writes)) if n != self.out]

    def lines(self) -> list[str]:
        return [f"{self.out} = {self.expr}", *self.writes]

    def run(self, env: dict):
        """The step's value in ``env`` (NumPy), writes included."""
        if not self.writes:
            return _evaluate(self.expr, env)
        scope = dict(env)
        scope[self.out] = _evaluate(self.expr, env)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                exec("\n".join(self.writes), {"np": np, "nan": float("nan"), "inf": float("inf")}, scope)
        return scope[self.out]


@dataclasses.dataclass(frozen=True)
class Program:
    seed: int
    index: int
    inputs: tuple[InputSpec, ...]
    steps: tuple[Step, ...]
    outputs: tuple[str, ...]
    tuple_out: bool = True
    fn_name: str = "fuzz_fn"

    def source(self) -> str:
        lines = [f"def {self.fn_name}({', '.join(i.name for i in self.inputs)}):"]
        lines += [f"    {line}" for s in self.steps for line in s.lines()]
        if self.tuple_out or len(self.outputs) != 1:
            lines.append(f"    return ({', '.join(self.outputs)},)")
        else:
            lines.append(f"    return {self.outputs[0]}")
        return "\n".join(lines) + "\n"

    def function(self):
        """The program as a Python function (its source registered with linecache)."""
        import linecache
        src = self.source()
        filename = f"<kfuse-fuzz seed={self.seed} program={self.index} {abs(hash(src)) & 0xffffffff:08x}>"
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        ns = {"np": np, "nan": float("nan"), "inf": float("inf")}
        exec(compile(src, filename, "exec"), ns)
        return ns[self.fn_name]

    def inputs_arrays(self, xp=np) -> list[np.ndarray]:
        return [i.build(xp) for i in self.inputs]

    def ops(self) -> set[str]:
        """Names of the NumPy functions/methods the program calls (for reports)."""
        names = set()
        for s in self.steps:
            text = " ".join(s.lines())
            names.update(re.findall(r"np\.([a-z_0-9]+)\(", text))
            names.update(re.findall(r"\.([a-z_]+)\(", text))
            names.update(f"{u}.at" for u in _AT_RE.findall(text))     # np.add.at -> "add.at"
            if "@" in text:
                names.add("matmul")
            if s.writes:
                names.add("setitem")
        return names - {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                        "uint64", "float16", "float32", "float64", "bool", "complex64", "complex128"}

    def has_reduction(self) -> bool:
        # float scans: CUDA C adds a row's elements as a tree (kfuse/testing.py), as a sum's order
        return bool(self.ops() & (CONTRACTIONS | {"sum", "mean", "prod", "var", "std", "cumsum", "cumprod",
                                                  "nancumsum", "nancumprod", "cumulative_sum", "cumulative_prod",
                                                  "accumulate"}))

    def cpu_only(self) -> bool:
        """Whether a write's result depends on the order of writes to a repeated position (a
        line ending in ``CPU_ORDER``): defined on the CPU backend only, which writes in C order."""
        return any(w.endswith(CPU_ORDER) for s in self.steps for w in s.writes)

    def describe(self) -> str:
        head = [f"# seed={self.seed} index={self.index}"]
        head += [f"{i.name} = {i.source()}" for i in self.inputs]
        return "\n".join(head) + "\n" + self.source()


def _evaluate(expr: str, env: dict):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return eval(expr, {"np": np, "nan": float("nan"), "inf": float("inf")}, dict(env))
