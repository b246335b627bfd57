"""KernelIR: a small, frozen, printable description of one kernel, shared by every emitter.

A kernel iterates a loop *domain* (one loop variable ``i<d>`` per domain dim ``d``; dims of
extent 1 have no loop and index 0). The domain dims split into ``outer`` dims (looped outside,
the first one parallel) and ``inner`` dims (the reduced dims, looped inside each phase).

Per outer index the kernel runs its ``phases`` in order. A :class:`Phase` is
  * ``pre``: statements at outer level (no inner loop variable), run once per outer index;
  * ``accs``: accumulators initialised before the inner loop (:class:`Acc`);
  * ``body``: statements run for every inner index (inner loops over ``inner`` dims, extent > 1);
    after the body each accumulator combines its ``src`` value; after the loop ``acc.dst`` holds
    the result (at outer level, visible to later phases).
An elementwise kernel is one phase whose ``pre`` computes and stores everything (``inner == ()``).

Statements are SSA over scalar variables ``v<k>`` (names are unique in a kernel):
:class:`Load` (input buffer at an index; a GATHER's index holds an int64 variable, :class:`IVal`),
:class:`Const`, :class:`Index` (an index expression as an int64 value), :class:`Op` (a NumPy ufunc name, or
``"cast"``/``"where"``, computed with the NumPy loop dtypes ``arg_dtypes -> dtype``),
:class:`Store` (output buffer at an index). Index expressions (:class:`IVar`, :class:`ILit`,
:class:`IBin`) use loop variables and run-time int64 *size parameters* (:class:`SizeParam`):
generated code never embeds a concrete extent, start or shape; ``SizeParam.value`` is the value for
the plan this IR was lowered from, passed at launch. All index values are non-negative, so ``//``
and ``%`` mean the same in Python and C.

A complex64/complex128 value is one variable of that dtype (a :class:`Const`'s value a Python
``complex``); ops keep their ufunc names (``real``, ``imag``, ``angle``, ``conjugate`` among them:
``kfuse/ir/ops.py``), and each emitter decides how to hold it (the CPU: Numba's complex scalars,
``codegen.cpu_complex``). A complex cumprod :class:`Scan` starts from its first element (its
``init`` is ``1+0j`` in the IR; ``1 * x`` is not ``x`` where ``x`` has an infinite part).

``kind == "matmul"``: ``contraction`` says which inputs to multiply (with optional operand casts /
permutes), and the product is read by the phase statements as input buffer ``contraction.result``.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Union

from ..errors import CompileError
from ..records import record

# --------------------------------------------------------------------------- index expressions


@record
class IVar:
    """A loop variable (``i0``...) or a size parameter (``s0``...)."""
    name: str

    def __str__(self) -> str:
        return self.name


@record
class ILit:
    """An integer literal of an index expression."""
    value: int

    def __str__(self) -> str:
        return str(self.value)


@record
class IBin:
    """``lhs op rhs`` with op one of ``+ - * // %`` (operands non-negative)."""
    op: str
    lhs: "Expr"
    rhs: "Expr"

    def __str__(self) -> str:
        return f"({self.lhs} {self.op} {self.rhs})"


@record
class IVal:
    """An int64 statement variable used as an index (a GATHER's position, read from an index
    array, always in range). ``deps``: the loop and size variables its value depends on, so every
    analysis asking which loop variables an access uses (:func:`expr_vars`) sees through it."""
    name: str
    deps: frozenset = frozenset()

    def __str__(self) -> str:
        return self.name


Expr = Union[IVar, ILit, IBin, IVal]


def lit(v: int) -> ILit:
    return ILit(int(v))


def add(a: Expr, b: Expr) -> Expr:
    if isinstance(a, ILit) and isinstance(b, ILit):
        return lit(a.value + b.value)
    if isinstance(a, ILit) and a.value == 0:
        return b
    if isinstance(b, ILit) and b.value == 0:
        return a
    return IBin("+", a, b)


def sub(a: Expr, b: Expr) -> Expr:
    if isinstance(a, ILit) and isinstance(b, ILit):
        return lit(a.value - b.value)
    if isinstance(b, ILit) and b.value == 0:
        return a
    return IBin("-", a, b)


def mul(a: Expr, b: Expr) -> Expr:
    if isinstance(a, ILit) and isinstance(b, ILit):
        return lit(a.value * b.value)
    for x, y in ((a, b), (b, a)):
        if isinstance(x, ILit):
            if x.value == 0:
                return lit(0)
            if x.value == 1:
                return y
    return IBin("*", a, b)


def _divide(op: str, a: Expr, b: Expr, by_one: Expr) -> Expr:
    """``a op b`` for ``//`` and ``%``: ``by_one`` when ``b`` is 1, 0 when ``a`` is 0."""
    if isinstance(b, ILit) and b.value == 1:
        return by_one
    if isinstance(a, ILit) and a.value == 0:
        return a
    return IBin(op, a, b)


def floordiv(a: Expr, b: Expr) -> Expr:
    return _divide("//", a, b, a)


def mod(a: Expr, b: Expr) -> Expr:
    return _divide("%", a, b, lit(0))


def expr_vars(e: Expr) -> set[str]:
    if isinstance(e, IVar):
        return {e.name}
    if isinstance(e, IVal):
        return set(e.deps)
    if isinstance(e, IBin):
        return expr_vars(e.lhs) | expr_vars(e.rhs)
    return set()


def eval_expr(e: Expr, env: dict) -> int:
    """The value of an index expression whose variables all have values in ``env`` (name -> int)."""
    if isinstance(e, ILit):
        return e.value
    if isinstance(e, (IVar, IVal)):
        return int(env[e.name])
    a, b = eval_expr(e.lhs, env), eval_expr(e.rhs, env)
    return {"+": a + b, "-": a - b, "*": a * b, "//": a // b if b else 0, "%": a % b if b else 0}[e.op]


def unit_offset(e: Expr, var: str):
    """``e`` as ``var + offset`` with ``offset`` free of ``var``: the offset (``ILit(0)`` for ``var``
    itself), or None (a slice's start along a vector: ``x[:, n:]``'s ``i1 + s2``)."""
    if isinstance(e, IVar) and e.name == var:
        return ILit(0)
    if isinstance(e, IBin) and e.op == "+":
        for a, b in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(a, IVar) and a.name == var and var not in expr_vars(b) and not isinstance(b, IVal):
                return b
    return None


def stmt_index(s) -> tuple:
    """The index expressions a statement reads (a Load's or Store's index, an Index's expression,
    a Search's table length)."""
    if isinstance(s, Search):
        return (s.n,)
    return (s.expr,) if isinstance(s, Index) else tuple(getattr(s, "index", ()))


def stmt_reads(s) -> list[str]:
    """The statement variables ``s`` reads: an op's arguments, a scan's or store's source, and
    the positions (:class:`IVal`) in its index."""
    def ivals(e):
        if isinstance(e, IVal):
            return [e.name]
        return ivals(e.lhs) + ivals(e.rhs) if isinstance(e, IBin) else []
    out = list(getattr(s, "args", ())) + ([s.src] if isinstance(s, (Scan, Store)) else [])
    out += [s.key] if isinstance(s, Search) else []
    return out + [n for e in stmt_index(s) for n in ivals(e)]


def dependencies(stmts, names) -> set[str]:
    """The variables of ``stmts`` that ``names`` read, directly or through each other (``names``
    themselves where ``stmts`` define them)."""
    defs = {s.dst: s for s in stmts if hasattr(s, "dst")}
    need, stack = set(), list(names)
    while stack:
        v = stack.pop()
        if v in need or v not in defs:
            continue
        need.add(v)
        stack += stmt_reads(defs[v])
    return need


def gathers(index) -> bool:
    """Whether an access's index reads a statement variable (:class:`IVal`): a data-dependent
    position, computed before the access in statement order (no emitter may hoist the access
    above it, nor treat it as contiguous)."""
    def has(e):
        return isinstance(e, IVal) or (isinstance(e, IBin) and (has(e.lhs) or has(e.rhs)))
    return any(has(e) for e in index)


# --------------------------------------------------------------------------- parameters


@record
class Buffer:
    """An array argument: ``name`` in the kernel, dtype name (NumPy), rank, and (informational)
    the shape in the plan it was lowered from. ``host``: a 0-d value the caller passes on the host
    (a Python or NumPy scalar argument): the GPU kernels take it by value, as a parameter of its
    dtype, not as a pointer to device memory (``codegen.lower.host_scalar``); the CPU ignores it."""
    name: str
    dtype: str
    ndim: int
    shape: tuple[int, ...] = ()
    host: bool = False

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}[{','.join(map(str, self.shape))}]" + (" (host scalar)" if self.host else "")


@record
class SizeParam:
    """A run-time int64 argument: ``name``, its ``value`` for this plan, and what it is (an extent,
    a stride...: printed with the kernel IR). Extents are arguments, never compiled in."""
    name: str
    value: int
    what: str = ""

    def __str__(self) -> str:
        return f"{self.name}={self.value}" + (f" ({self.what})" if self.what else "")


# --------------------------------------------------------------------------- statements


@record
class Load:
    """``dst = in<buf>[index]``: one element of an input buffer, at one index expression per dim."""
    dst: str
    dtype: str
    buf: int                        # index into KernelIR.inputs
    index: tuple[Expr, ...]         # one expression per dim of the buffer

    def __str__(self) -> str:
        return f"{self.dst}: {self.dtype} = load in{self.buf}[{', '.join(map(str, self.index))}]"


@record
class Const:
    """``dst`` = a constant of ``dtype``: ``value`` is a Python bool, int, float or complex, printed
    by its repr (which keeps -0.0, nan and inf apart)."""
    dst: str
    dtype: str
    value: Any

    def __str__(self) -> str:
        return f"{self.dst}: {self.dtype} = const {self.value!r}"

    # equal where the code is: by the value's repr, so -0.0 is not 0.0 (x / -0.0 is -inf) and nan
    # is nan (compiled kernels are memoised by their IR: runtime.cuda.emitted_kernel)
    def __eq__(self, other) -> bool:
        return type(other) is Const and (self.dst, self.dtype, repr(self.value)) == (other.dst, other.dtype, repr(other.value))

    def __hash__(self) -> int:
        return hash((self.dst, self.dtype, repr(self.value)))


@record
class Op:
    """``dst = op(args)``: ``op`` is a NumPy ufunc name (``"add"``, ``"tanh"``...), ``"cast"``
    (``ndarray.astype`` semantics from ``arg_dtypes[0]`` to ``dtype``) or ``"where"``."""
    dst: str
    op: str
    dtype: str
    args: tuple[str, ...]
    arg_dtypes: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.dst}: {self.dtype} = {self.op}({', '.join(self.args)})"


@record
class Search:
    """``dst`` (int64) = ``np.searchsorted(in<buf>[:n], key, side)``: a binary search of the 1-D
    input buffer ``buf`` (sorted, of ``dtype``, the key's dtype too), comparing as NumPy sorts
    (NaN after every number): ``left`` counts the elements below ``key``, ``right`` those not
    above it."""
    dst: str
    buf: int
    n: "Expr"
    key: str
    dtype: str
    side: str

    def __str__(self) -> str:
        table = f"in{self.buf}[:{self.n}]"
        return f"{self.dst}: int64 = searchsorted_{self.side}({table}, {self.key})"


@record
class Index:
    """``dst: int64 = expr``: an index expression as a value (a PAD's bounds test)."""
    dst: str
    expr: Expr
    dtype: str = "int64"

    def __str__(self) -> str:
        return f"{self.dst}: int64 = index {self.expr}"


@record
class Store:
    """``out[index] = src``; with ``combine`` (a binary NumPy ufunc name, a scatter's
    ``ufunc.at``): ``out[index] = op(out[index] as loop, src)`` cast back to the buffer's dtype,
    ``src`` being of dtype ``loop``, one element at a time (atomically where threads may collide)."""
    buf: int                        # index into KernelIR.outputs
    index: tuple[Expr, ...]
    src: str
    combine: str = ""
    loop: str = ""

    def __str__(self) -> str:
        ref = f"out{self.buf}[{', '.join(map(str, self.index))}]"
        if self.combine:
            return f"store {ref} = {self.combine}({ref}, {self.src}) in {self.loop}"
        return f"store {ref} = {self.src}"

    def combine_ops(self, out_dtype: str, old: str, dst: str) -> list["Op"]:
        """The combine as :class:`Op` statements: ``old`` (the element read, of ``out_dtype``) to
        ``dst`` (the value to write back); intermediate names are ``dst`` with suffixes."""
        ops, cur = [], old
        if self.loop != out_dtype:
            ops.append(Op(f"{dst}_o", "cast", self.loop, (old,), (out_dtype,)))
            cur = f"{dst}_o"
        r = dst if self.loop == out_dtype else f"{dst}_r"
        ops.append(Op(r, self.combine, self.loop, (cur, self.src), (self.loop, self.loop)))
        if self.loop != out_dtype:
            ops.append(Op(dst, "cast", out_dtype, (r,), (self.loop,)))
        return ops


@record
class Scan:
    """A running reduction along the inner dim (NumPy's ``ufunc.accumulate``): each outer trip
    starts a running value at ``init`` before the phase's loop; each inner iteration sets it to
    ``op(running, src)`` (a NumPy ufunc name: add, multiply, maximum, minimum, computed with the
    loop dtypes ``(dtype, dtype) -> dtype``, as an :class:`Op` would) and ``dst`` to it. The inner
    loop must run in order, in one thread (a scan kernel's variant is serial along the row)."""
    dst: str
    op: str
    dtype: str
    src: str
    init: Any

    def __str__(self) -> str:
        return f"{self.dst}: {self.dtype} = {self.op}-scan({self.src}) [init {self.init!r}]"

    def step(self, running: str) -> "Op":
        """The running value's update as an :class:`Op` on ``running`` (for the emitters)."""
        return Op(running, self.op, self.dtype, (running, self.src), (self.dtype, self.dtype))


Stmt = Union[Load, Const, Index, Op, Store, Scan]


_HANDLER = {Load: "on_load", Const: "on_const", Index: "on_index", Op: "on_op", Search: "on_search",
            Scan: "on_scan", Store: "on_store"}


class StatementRenderer:
    """The statement dispatch the GPU emitters share. :meth:`statement` records the dtype of a
    loaded, indexed, computed or searched value in ``self.dt`` (what a later store converts from)
    and returns ``self.on_<class>(s)``: ``on_load``, ``on_const``, ``on_index``, ``on_op``,
    ``on_search``, ``on_scan``, ``on_store``, and ``on_combine`` for a scatter's combining store."""
    dt: dict

    def statement(self, s) -> str:
        handler = _HANDLER.get(type(s))
        if handler is None:
            raise CompileError(f"kfuse: unknown KernelIR statement {s!r}")
        if isinstance(s, (Load, Index, Op)):
            self.dt[s.dst] = s.dtype
        elif isinstance(s, Search):
            self.dt[s.dst] = "int64"
        elif isinstance(s, Store) and s.combine:
            handler = "on_combine"
        return getattr(self, handler)(s)

    def cached_load(self, s: Load, slot: str, filled: set, newly: set) -> list[str]:
        """A load of a row kept in registers: ``slot`` (the cache entry of ``s``'s buffer and
        index) is read once it is filled, else ``s`` loads and fills it (``newly`` records it).
        The emitter spells the two assignments: ``slot_read(s, slot)``, ``slot_write(slot, s)``."""
        self.dt[s.dst] = s.dtype
        if (s.buf, s.index) in filled:
            return [self.slot_read(s, slot)]
        newly.add((s.buf, s.index))
        return [self.statement(s), self.slot_write(slot, s)]


def scans(stmts) -> list[Scan]:
    """The :class:`Scan` statements of ``stmts`` (their running values start before the loop)."""
    return [s for s in stmts if isinstance(s, Scan)]


def value_keys(body) -> dict:
    """Each body variable's value as a structural key: a load by buffer, dtype and index text, a
    constant by dtype and repr, an op by op, dtypes and its arguments' keys; a name defined outside
    the body (SSA: an outer-level value, fixed for the outer trip) stands for itself. In one outer
    trip, equal keys in two loops over the same inner dim mean the same computation, same value."""
    keys: dict = {}
    for s in body:
        if isinstance(s, Load):
            keys[s.dst] = ("load", s.buf, s.dtype, tuple(map(str, s.index)))
        elif isinstance(s, Const):
            keys[s.dst] = ("const", s.dtype, repr(s.value))
        elif isinstance(s, Index):
            keys[s.dst] = ("index", str(s.expr))
        elif isinstance(s, Op):
            keys[s.dst] = (s.op, s.dtype, s.arg_dtypes, tuple(keys.get(a, ("var", a)) for a in s.args))
    return keys


def has_scan(kir: "KernelIR") -> bool:
    """Whether ``kir`` scans (its inner loop must run in order, one thread a row)."""
    return any(scans(ph.body) for ph in kir.phases)

# Reduction kinds and their combine rules (emitters implement exactly these):
#   sum/prod: acc op= src (ints wrap; float16/float32 accumulate in acc_dtype = float64; the CUDA
#             emitter's Variant.reload rows sum float32 in float32, see codegen.cuda)
#   max/min: NaN propagates (once NaN, stays NaN); init -inf/+inf or the int limits
#   any/all: logical or/and of (src != 0)
#   argmax/argmin: first occurrence of the extreme value; the first NaN wins (NumPy rules);
#                  the result is the position ``pos`` (int64) over the inner dims.
#   maxsumexp: a row's float32 maximum ``peer`` and the sum of exp(src - peer) in one pass
#              (codegen.online_softmax; row kernels that re-read their rows only, both GPU emitters)
ACC_KINDS = ("sum", "prod", "max", "min", "any", "all", "argmax", "argmin", "maxsumexp")


@record
class Acc:
    """A reduction accumulator: ``src`` combined into ``dst`` over the phase's inner loop."""
    dst: str                        # outer-level variable holding the result after the loop
    kind: str                       # one of ACC_KINDS
    dtype: str                      # result dtype (node dtype)
    acc_dtype: str                  # dtype of the running accumulator
    src: str                        # the body variable combined each inner iteration
    src_dtype: str
    init: Any                       # initial accumulator value (Python scalar)
    pos: Expr | None = None         # argmax/argmin: linear position over the inner dims
    mask: str | None = None         # a bool body variable: where False the element is skipped (where=)
    peer: str | None = None         # maxsumexp: the variable holding the row's maximum (float32)

    def __str__(self) -> str:
        extra = f", pos={self.pos}" if self.pos is not None else ""
        extra += f", where={self.mask}" if self.mask is not None else ""
        extra += f", max={self.peer}" if self.peer is not None else ""
        return (f"{self.dst}: {self.dtype} = {self.kind}-reduce({self.src}) "
                f"[acc {self.acc_dtype} init {self.init!r}{extra}]")


@record
class Phase:
    """One pass of a kernel: statements before its loop, its accumulators, its loop body."""
    pre: tuple[Stmt, ...] = ()
    accs: tuple[Acc, ...] = ()
    body: tuple[Stmt, ...] = ()

    @property
    def has_loop(self) -> bool:
        return bool(self.accs or self.body)


@record
class Contraction:
    """``result = matmul(op(in[lhs]), op(in[rhs]))`` computed before the phases.
    ``lhs_steps``/``rhs_steps``: ``("cast", dtype)`` / ``("permute", perm)`` applied in order."""
    lhs: int
    rhs: int
    dtype: str
    result: int                     # input slot (index into KernelIR.inputs) receiving the product
    lhs_steps: tuple = ()
    rhs_steps: tuple = ()

    def __str__(self) -> str:
        def side(i, steps):
            s = f"in{i}"
            for st in steps:
                s = f"{st[0]}({s}, {st[1]})"
            return s
        return (f"in{self.result}: {self.dtype} = matmul({side(self.lhs, self.lhs_steps)}, "
                f"{side(self.rhs, self.rhs_steps)})")


@record
class KernelIR:
    """One kernel: its buffers, run-time sizes, loop domain and phases (the module docstring)."""
    name: str
    kind: str                       # a fusion.kinds.GroupKind: "elementwise" | "reduce" | "scan" | "matmul" | "scatter"
    inputs: tuple[Buffer, ...]
    outputs: tuple[Buffer, ...]
    sizes: tuple[SizeParam, ...]    # run-time int64 arguments, in argument order
    domain: tuple[Expr, ...]        # extent of loop variable i<d> (ILit(1) = no loop)
    outer: tuple[int, ...]          # domain dims looped outside (in order; first is parallel)
    inner: tuple[int, ...]          # reduced domain dims, looped inside each phase
    phases: tuple[Phase, ...]
    contraction: Contraction | None = None
    tile: Any = None                # emitter-specific tiling (CUDA); ignored on the CPU
    init_from: tuple = ()           # (output, input) pairs: the runtime copies the input into the
                                    # output buffer before the kernel runs (a scatter's base)
    attention: Any = None           # an attention group's kernel (codegen.attention_lower.AttentionIR)
    in_place: tuple = ()            # (output, input) pairs: the runtime may pass the input's own
                                    # buffer as the output (an argument written in place); the
                                    # kernel reads it only at the element it writes, and emitters
                                    # must not assume the two do not alias (no __restrict__)

    def extent(self, d: int) -> int:
        """Domain dim ``d``'s extent in the plan this IR was lowered from."""
        e = self.domain[d]
        if isinstance(e, ILit):
            return e.value
        if isinstance(e, IVar):
            return next(s.value for s in self.sizes if s.name == e.name)
        return eval_expr(e, {s.name: s.value for s in self.sizes})     # (merged dims: codegen.cpu_merge)

    def loop_dims(self, dims) -> list[int]:
        """The dims of ``dims`` that need a loop (extent not the literal 1)."""
        return [d for d in dims if not (isinstance(self.domain[d], ILit) and self.domain[d].value == 1)]

    def as_text(self) -> str:
        lines = [f"kernel {self.name} [{self.kind}]"]
        lines.append("  inputs: " + (", ".join(map(str, self.inputs)) or "-"))
        lines.append("  outputs: " + (", ".join(map(str, self.outputs)) or "-"))
        if self.sizes:
            lines.append("  sizes: " + ", ".join(map(str, self.sizes)))
        dom = ", ".join(f"i{d}<{e}" for d, e in enumerate(self.domain))
        lines.append(f"  domain: [{dom}] outer={list(self.outer)} inner={list(self.inner)}")
        if self.contraction is not None:
            lines.append(f"  {self.contraction}")
        if self.attention is not None:
            lines.append("  " + str(self.attention).replace("\n", "\n  "))
        for o, i in self.init_from:
            lines.append(f"  out{o} starts as a copy of in{i}")
        for o, i in self.in_place:
            lines.append(f"  out{o} may be in{i}'s own buffer (written in place)")
        for p, ph in enumerate(self.phases):
            lines.append(f"  phase {p}:")
            lines += [f"    {s}" for s in ph.pre]
            if ph.has_loop:
                lines.append(f"    loop {', '.join(f'i{d}' for d in self.inner) or '-'}:")
                lines += [f"      {s}" for s in ph.body]
                lines += [f"      {a}" for a in ph.accs]
        return "\n".join(lines)

    __str__ = as_text
# KERNEL_IR_READY


_CMP_FLIP = {"less": "greater", "less_equal": "greater_equal", "greater": "less",
             "greater_equal": "less_equal", "equal": "equal", "not_equal": "not_equal"}


def phases_fixpoint(kir: KernelIR, step) -> KernelIR:
    """``kir`` with ``step(kir)`` (its next phases, None when nothing is left to rewrite) applied
    until it returns None: the phase rewrites' driver (``codegen.variance``, ``online_softmax``)."""
    while True:
        phases = step(kir)
        if phases is None:
            return kir
        kir = dataclasses.replace(kir, phases=phases)


def uses_dtype(kir: KernelIR, name: str) -> bool:
    """Whether a buffer, statement or accumulator of ``kir`` has dtype ``name``."""
    if any(b.dtype == name for b in kir.inputs + kir.outputs):
        return True
    for ph in kir.phases:
        for s in ph.pre + ph.body + ph.accs:
            if name in (getattr(s, "dtype", None), getattr(s, "acc_dtype", None), getattr(s, "src_dtype", None)) \
                    or name in getattr(s, "arg_dtypes", ()):
                return True
    return False


def refuse_bfloat16(kir: KernelIR, backend: str) -> None:
    """The CPU and Numba-CUDA emitters have no bfloat16 arithmetic: a clear error, not a crash."""
    if uses_dtype(kir, "bfloat16"):
        from ..errors import UnsupportedError
        raise UnsupportedError(f"kfuse: bfloat16 runs on the CUDA C backend only (torch CUDA tensors), not "
                               f"on {backend}: cast to float32 first")


def mixed_sign_compare(op: str, args, dtypes) -> tuple[str, bool] | None:
    """NumPy compares int64 with uint64 exactly (no float64 detour). For such a comparison,
    ``(signed operand, result when it is negative)``: a negative signed value is below every
    unsigned one; otherwise both operands compare as uint64. None for any other comparison."""
    if op not in _CMP_FLIP or len(dtypes) != 2:
        return None
    kinds = [str(d)[0] for d in dtypes]
    if sorted(kinds) != ["i", "u"]:
        return None
    s = 0 if kinds[0] == "i" else 1
    eff = op if s == 0 else _CMP_FLIP[op]          # as "signed OP unsigned"
    return args[s], eff in ("less", "less_equal", "not_equal")
