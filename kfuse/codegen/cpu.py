"""CPU emitter: KernelIR -> readable Python source of a Numba kernel.

The source defines ``kfuse_kernel(inputs..., outputs..., sizes...)`` (plain Python over scalars
and array indexing; the name is fixed so that equal kernels have equal source) and two compiled
forms: ``kfuse_kernel_seq = numba.njit(...)(kfuse_kernel)`` and ``kfuse_kernel_par`` (``parallel=True``: the first outer loop is a ``prange``). Numba compiles lazily,
so only the form the runtime calls is compiled. Helpers the kernel needs are emitted into the same
source, so the source text alone determines the compiled code (it is the memo/cache key).

Semantics follow NumPy's loops: every op result is cast back to the node dtype (Numba promotes
small ints to int64), integer helpers give NumPy's floor-division/remainder/shift/power results,
``maximum``/``minimum`` propagate NaN, ``fmax``/``fmin`` don't. float16 (which Numba lacks on
the CPU) travels as uint16 bits; values are float32 in registers, rounded to float16 after every
op exactly as NumPy's float16 loops do. float32 ``tanh`` is a branch-free rational
approximation (Numba's scalar ``tanhf`` is a slow libm call that also blocks vectorisation); an
elementwise loop whose float32 helpers feed one another runs in chunks, a loop a link (``_CHAIN``).
Float sums over one inner dim add through ``_radd`` (``fastmath={"reassoc"}`` on that add alone), so
LLVM vectorises them in a summation order fixed by the compiled code; float max/min over one inner
dim run over order-preserving integer keys (see the comments below). Helper sources:
:mod:`kfuse.codegen.cpu_helpers`. The loop layout follows a :class:`CpuSchedule` the runtime picks
from the arguments' strides (:mod:`kfuse.codegen.cpu_schedule`; the ``cols`` order of a reduction
over non-contiguous axes is rendered by :mod:`kfuse.codegen.cpu_cols`), printed in the kernel's
docstring.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import kernel_ir as K
from ..fusion.cpu_cost import WIDE_POWER
from ..fusion.kinds import GroupKind
from . import cpu_argblocks, cpu_blocks, cpu_chunks, cpu_cols, cpu_complex, cpu_interleave, cpu_merge, cpu_pieces, cpu_vecmath
from .cpu_helpers import HELPERS as _HELPERS
from .cpu_hoist import split_invariant
from .accs import combine_expr
from .decompose import decompose
from .cpu_schedule import ROWS, TILE, CpuSchedule, flat_index, loop_order
from .py_ops import PyOps, literal as _literal

NJIT_OPTS = 'error_model="numpy", nogil=True'
FN_NAME = "kfuse_kernel"    # one name for every kernel: equal kernels have equal source
# A floating-point sum over one inner dim adds its summands with ``_radd``, compiled with
# ``fastmath={"reassoc"}`` alone: inlined, it makes the running sum a reduction LLVM's loop
# vectoriser may reassociate (vector partial sums, then a fixed shuffle tree), while every other op
# in the kernel keeps strict IEEE semantics (no nnan/ninf/nsz: NaN, inf and -0.0 behave as before).
# The summation order is fixed by the compiled code: the same result on every call and at any
# thread count (a row is summed by one thread), but it depends on the vector width LLVM picks for
# the host CPU (a cached kernel is host-specific anyway). Float32 summands accumulate in float64
# (as before), so the order barely shows; float64 sums round differently from the former order, as
# close to NumPy's pairwise sum (tests/codegen/test_cpu_rowreduce.py). It replaces 8 interleaved
# scalar lanes that LLVM left scalar (Numba turns the SLP vectoriser off); 4096x4096 f32, 2 threads,
# side by side: row L2 norm 2.42 -> 1.71 ms, layernorm 9.5 -> 5.3 ms, softmax 13.8 -> 12.7 ms.
# A float32/float64 max/min over one inner dim runs as an integer max/min over ``_fkey`` keys
# (the float's bits, negative ones' magnitude bits flipped: signed integer order = float order) and
# an integer NaN flag; LLVM vectorises both without fast-math flags (a float compare-and-select
# it would only take with nnan/nsz). Any NaN gives NaN (NumPy's value, a canonical payload); a
# +0.0/-0.0 tie gives +0.0 for max and -0.0 for min (the strict running value kept the first zero,
# NumPy's choice varies with its loop). A 4096x4096 f32 row max alone: 8.9 -> 1.6 ms.
# A sum whose summand is a float32 helper's value (_STAGED_OPS) that a later phase's loop over
# the same dim computes again (softmax's exp(x - max) in the output loop) also stores the summands
# in a scratch row as it sums, and that loop reads them back (_Emitter.reused): one exp per
# element instead of two (P2 softmax 21.9 -> 17.3 ms when the scratch was introduced; a row
# standardisation of log1p(x): one log1p instead of three).
_STAGED_OPS = ("exp", "tanh", "log", "log1p")      # (the float32 helpers: _F32_HELPERS)
# An elementwise loop whose float32 helpers (_STAGED_OPS) feed one another (mish's exp -> log1p ->
# tanh) runs in chunks of _CHAIN elements, one loop a link (_Emitter.chain_levels): a link's result
# goes to a chunk row that stays in L1 and the next loop reads it. The fused loop vectorises, but
# its one long dependent chain of ~150 vector instructions a step leaves the out-of-order core
# waiting on latencies (mish, 512x4096 f32, one thread: 13.0 ms fused, 6.1 ms in three loops).
_CHAIN = 1024
_CHAIN_BLOCK = 16                   # chunks a parallel trip when the chunked dim is the prange one
# float32 ops rendered by branch-free helpers LLVM vectorises (cpu_helpers), not Numba's libm call
_F32_HELPERS = {"exp": "_expf", "tanh": "_tanhf", "log": "_logf", "log1p": "_log1pf", "hypot": "_hypotf"}
# dtypes whose every value float32 holds exactly: rounded to float16 from float32 (one rounding)
_EXACT_IN_F32 = ("bool", "int8", "uint8", "int16", "uint16", "float16", "float32")
# Helpers are called from the kernel only: without the CPython and C wrappers Numba would build
# for a Python caller, each compiles with less LLVM work (64x512 softmax, first compile: -8% CPU).
_HELPER_JIT = "@numba.njit(no_cpython_wrapper=True, no_cfunc_wrapper=True, "

# --------------------------------------------------------------------------- expressions


def _ctor(dtype: str) -> str:
    return "np.bool_" if dtype == "bool" else f"np.{dtype}"


def _math_helper(op: str, dtype: str) -> tuple[str, bool] | None:
    """(name, whether it takes float64) of the helper rendering ``op`` of ``dtype``: a float32 one
    of its own (``_F32_HELPERS``) or ``cpu_vecmath``'s (float32 and float16 values widened to
    float64, its ``WIDENED`` helper before its float64 one, the result rounded once); None: a libm
    call or no transcendental."""
    vt = _vt(dtype)
    if vt == "float32" and op in _F32_HELPERS:
        return _F32_HELPERS[op], False
    name = (cpu_vecmath.WIDENED.get(op) if vt == "float32" else None) or cpu_vecmath.FLOAT64.get(op)
    return (name, True) if name and vt in ("float32", "float64") else None


def vectorised_helper(op: str, dtype: str) -> bool:
    """Whether the emitter renders ``op`` of ``dtype`` by a vectorisable helper (not a libm call)."""
    return _math_helper(op, dtype) is not None


def helper_work(op: str, dtype: str) -> int:
    """A transcendental's work units for the thread rule (``runtime.cpu.kernel_work``; simple op
    1): a float32 helper 1, a float64 one 4 (the float32 power 12), a scalar libm call 16
    (``fusion.cpu_cost``'s)."""
    helper = _math_helper(op, dtype)
    return 16 if helper is None else (4 * (WIDE_POWER if op == "power" else 1) if helper[1] else 1)


def _complex_product(op: str, dtype: str) -> bool:
    """A complex cumprod: NumPy's accumulate starts from the first factor (1 * x is not x where x
    has an infinite part), its prod reduction from 1 + 0j (the accumulator's init)."""
    return op == "multiply" and dtype.startswith("complex")


def _vt(dtype: str) -> str:
    """The Numba value type of a dtype (float16 values live in float32)."""
    return "float32" if dtype == "float16" else dtype


class CpuOps(PyOps):
    """The CPU dialect of :class:`~kfuse.codegen.py_ops.PyOps`: NumPy's functions as Numba compiles
    them, float16 as float32 values rounded after every op (``_rf16f``), the float32 helpers LLVM
    vectorises (``_F32_HELPERS``)."""

    backend = "cpu"
    FN, ISINF, SIGNBIT = "np.{np}", "np.{op}({a})", "np.signbit({a})"
    POPCOUNT, POPCOUNT_HELPER = "_popcount({m})", "_popcount"

    def cast(self, a: str, src: str, dst: str) -> str:
        if src == dst:
            return a
        if src.startswith("complex") and not dst.startswith("complex"):
            if dst == "bool":
                return f"{a} != 0"
            return self.cast(f"{a}.real", "float32" if src == "complex64" else "float64", dst)
        if dst == "float16":        # one rounding: from float32 where it holds every value of src
            exact = src in _EXACT_IN_F32
            return f"{self.use('_rf16f' if exact else '_rf16')}(np.float{32 if exact else 64}({a}))"
        if dst == "bool":
            return f"{a} != 0"
        return f"{_ctor(dst)}(1 if {a} else 0)" if src == "bool" else f"{_ctor(dst)}({a})"

    def float_result(self, expr: str, dt: str) -> str:
        if dt == "float16":
            return f"{self.use('_rf16f')}(np.float32({expr}))"
        return expr if dt == "bool" else f"{_ctor(dt)}({expr})"

    def int_result(self, expr: str, dt: str) -> str:
        return f"{_ctor(dt)}({expr})"

    def complex_expr(self, op: str, t: str, dt: str, a) -> str:
        e = cpu_complex.expr(op, t, dt, a, self.use)
        if e is None:
            raise self.error(op, t)
        return e

    def __init__(self, use, int_consts: frozenset = frozenset()):
        super().__init__(use)
        self.int_consts = int_consts    # constants holding an integer (a power's exponent: libm's pow)

    def special(self, op: str, t: str, a) -> str | None:
        helper = _math_helper(op, t)
        if op == "power" and a[1] in self.int_consts:
            helper = None               # float x ** 3 is libm's bit for bit (tests/codegen/test_power_policy.py)
        if helper is not None:          # (float_result rounds a widened float32 value)
            name, wide = helper
            args = [f"np.float64({x})" for x in a] if wide and _vt(t) != "float64" else a
            return f"{self.use(name)}({', '.join(args)})"
        if op == "cbrt":
            return f"{self.use('_cbrt')}({a[0]})"
        if op == "complex":     # (real, imag) parts, float32/float64 (float_result: the complex dtype)
            return f"complex({a[0]}, {a[1]})"
        if op == "power":       # libm's pow (float32: _powf_d above but for integer constants); codegen.decompose
            return f"np.power({a[0]}, {a[1]})"
        if op == "fmax":
            return f"{a[0]} if ({a[0]} > {a[1]} or {a[1]} != {a[1]}) else {a[1]}"
        if op == "fmin":
            return f"{a[0]} if ({a[0]} < {a[1]} or {a[1]} != {a[1]}) else {a[1]}"
        return None


class _Emitter:
    def __init__(self, kir: K.KernelIR, sched: CpuSchedule = ROWS):
        self.kir = kir
        self.sched = sched
        self.flat = flat_index(kir, sched)      # load dst -> its index into a collapsed buffer
        pats = cpu_pieces.patterns(kir, sched.split, self.flat) if sched.split >= 0 else []
        self.pieces = [p for k, p in enumerate(pats) if k in sched.pieces]
        self.units = [p for k, p in enumerate(pats) if k in sched.units]
        self.piece = None                       # the piece loop being rendered (piece_loop)
        self.hoisted: set = set()               # phase 0's statements computed before the loops
        self.inter = {dst: (g, step, off) for dst, g, step, off in sched.inter}
        self.inter_rows = {g: cpu_interleave.row_view(s, cpu_pieces.affine(s.index[-1], f"i{sched.split}")[1])
                           for ph in kir.phases for s in ph.pre + ph.body
                           if isinstance(s, K.Load) and self.inter.get(s.dst, (0, 0, 1))[2] == 0
                           for g in (self.inter[s.dst][0],)}
        self.used: set[str] = set()
        self.vtype: dict[str, str] = {}
        self.scratch: dict[tuple, str] = {}     # (inner dim, value key) -> staged scratch row
        self.chunked = ""                       # the loop variable of a chained loop (chain_loop)
        self.ops = CpuOps(self.use, frozenset(
            s.dst for ph in kir.phases for s in ph.pre + ph.body if isinstance(s, K.Const)
            and not isinstance(s.value, complex) and math.isfinite(s.value) and float(s.value).is_integer()))

    def use(self, name: str) -> str:
        stack = [name]
        while stack:
            n = stack.pop()
            if n not in self.used:
                self.used.add(n)
                stack.extend(_HELPERS[n][1])
        return name

    @staticmethod
    def vector_helper(op: str, dtype: str) -> bool:
        """(:func:`vectorised_helper`, for the schedules' modules)"""
        return vectorised_helper(op, dtype)

    # -- one op ------------------------------------------------------------------------------
    def op_expr(self, st: K.Op) -> str:
        return self.ops.op_expr(st, list(st.args))

    def cast_expr(self, a: str, src: str, dst: str) -> str:
        return self.ops.cast(a, src, dst)

    # -- statements --------------------------------------------------------------------------
    def index(self, idx) -> str:
        return ", ".join(self.subscript(e) for e in idx) if idx else "()"

    def subscript(self, e) -> str:
        """One subscript of a load or store. A computed index (``s3 + i1``, a flat ``i0 * s1 + i1``)
        is cast to uint64: Numba wraps a signed index that might be negative with a compare and
        select, which keeps LLVM from vectorising the loop (a 5-point stencil through slices: 2.1 ms
        against 0.27 ms unsigned); KernelIR's index values are never negative."""
        s = self.iexpr(e)
        plain = (s.isidentifier() and s != self.chunked) or s.isdigit()   # (chunk + j: not known >= 0)
        return s if plain else f"np.uint64({s})"

    def iexpr(self, e) -> str:
        return self.piece.expr(e) if self.piece is not None else str(e)

    def scalar_reads(self) -> list[str]:
        """A 0-d input's element, read once before the loops: inside a ``prange`` Numba's parallel
        lowering passes a 0-d array to the loop body as its element, and ``a[()]`` of it fails to
        type (adafactor's ``g / np.mean(v)``)."""
        return [f"    in{k}_0 = in{k}[()]" for k, b in enumerate(self.kir.inputs) if b.ndim == 0]

    def stmt(self, st) -> str:
        if isinstance(st, K.Load):
            ref = (f"in{st.buf}_0" if self.kir.inputs[st.buf].ndim == 0 else
                   f"in{st.buf}[{self.index(self.flat.get(st.dst, st.index))}]")
            if self.piece is not None and st.dst in self.inter:    # (cpu_interleave; one piece)
                g, step, off = self.inter[st.dst]
                self.piece.rows[g] = self.inter_rows[g]
                ref = f"prw{g}[{self.piece.j} * {step} + {off}]"
            return f"{st.dst} = {self.use('_h2f')}({ref})" if st.dtype == "float16" else f"{st.dst} = {ref}"
        if isinstance(st, K.Const):
            return f"{st.dst} = {_literal(st.value, st.dtype)}"
        if isinstance(st, K.Index):
            return f"{st.dst} = np.int64({self.iexpr(st.expr)})"
        if isinstance(st, K.Search):
            return f"{st.dst} = {self.use('_search_' + st.side)}(in{st.buf}, {st.n}, 1, {st.key})"
        if isinstance(st, K.Op):
            return f"{st.dst} = {self.op_expr(st)}"
        if isinstance(st, K.Scan):              # the running value is dst itself (set before the loop)
            if _complex_product(st.op, st.dtype):
                return f"{st.dst} = {self.use('_cprodstep_' + st.dtype)}({st.dst}, {st.src})"
            return f"{st.dst} = {self.op_expr(st.step(st.dst))}"
        if isinstance(st, K.Store):
            dt = self.kir.outputs[st.buf].dtype
            ref = f"out{st.buf}[{self.index(st.index)}]"     # (in the loop order: emit)
            if not st.combine:
                v = f"{self.use('_f2hf')}({st.src})" if dt == "float16" else st.src   # (a float16 value)
                return f"{ref} = {v}"
            # a ufunc.at element: read, combine in the loop dtype, write back (the loop is serial)
            old, new = f"o_{st.src}", f"n_{st.src}"
            lines = [f"{old} = {self.use('_h2f')}({ref})" if dt == "float16" else f"{old} = {ref}"]
            lines += [self.stmt(op) for op in st.combine_ops(dt, old, new)]
            lines.append(f"{ref} = {self.use('_f2hf')}({new})" if dt == "float16" else f"{ref} = {new}")
            return "; ".join(lines)
        raise TypeError(st)

    def acc_lines(self, acc: K.Acc, where: str, vector: bool = False):
        """An accumulator's lines: ``init`` before the loop, ``combine`` in it, ``result`` after it.
        In a ``vector`` loop (one inner dim) a float sum adds through ``_radd`` and a float32/64
        max/min runs over integer keys (:meth:`key_lines`); see the module comment."""
        a, vt = f"acc_{acc.dst}", _vt(acc.acc_dtype)
        if vector and acc.kind in ("max", "min") and acc.acc_dtype in ("float32", "float64"):
            return self.key_lines(acc, where)
        if where == "init":
            lines = [f"{a} = {_literal(acc.init, acc.acc_dtype)}"]
            if acc.kind in ("argmax", "argmin"):
                lines.append(f"pos_{acc.dst} = np.int64(0)")
            return lines
        s = acc.src
        if where == "combine":
            if acc.kind == "sum" and vector and vt in ("float32", "float64"):
                return [f"{a} = {self.use('_radd')}({a}, np.{vt}({s}))"]
            if acc.kind not in ("argmax", "argmin"):     # codegen.accs (integers wrap in uint64)
                line = f"{a} = {combine_expr(acc, a, s, acc.src_dtype, self.ops.op_expr, _literal)}"
                return [f"if {acc.mask}:", "    " + line] if acc.mask else [line]
            cmp = ">" if acc.kind == "argmax" else "<"
            if acc.src_dtype.startswith("complex"):     # NumPy's: lexicographic, the first NaN wins
                nan = self.use("_cisnan")
                return [f"if (({s}.real {cmp} {a}.real or ({s}.real == {a}.real and {s}.imag {cmp} {a}.imag))"
                        f" or {nan}({s})) and not {nan}({a}):",
                        f"    {a} = {s}", f"    pos_{acc.dst} = np.int64({acc.pos})"]
            return [f"if {s} {cmp} {a} or ({s} != {s} and {a} == {a}):",
                    f"    {a} = {s}", f"    pos_{acc.dst} = np.int64({acc.pos})"]
        # result
        if acc.kind in ("argmax", "argmin"):
            return [f"{acc.dst} = pos_{acc.dst}"]
        if acc.dtype == "float16":
            return [f"{acc.dst} = {self.use('_rf16')}({a})"]
        if acc.dtype == "bool":
            return [f"{acc.dst} = {a}"]
        return [f"{acc.dst} = {_ctor(_vt(acc.dtype))}({a})"]

    def key_lines(self, acc: K.Acc, where: str) -> list[str]:
        """A float max/min as an integer max/min over ``_fkey`` keys (signed integers in the float
        order), which LLVM vectorises without fast-math flags, and a flag for NaN (any NaN gives
        NaN, as NumPy). On a +0.0/-0.0 tie max gives +0.0 and min -0.0 (IEEE maximum/minimum)
        where the strict running value kept the first; NumPy's own choice varies with its loop."""
        a, dt = f"acc_{acc.dst}", acc.acc_dtype
        it = "int32" if dt == "float32" else "int64"
        if where == "init":
            init = float(acc.init)
            key = int(np.array(init, dt).view(it))
            key ^= (key >> (np.dtype(it).itemsize * 8 - 1)) & ((1 << (np.dtype(it).itemsize * 8 - 1)) - 1)
            return [f"{a} = np.{it}({key})", f"nan_{acc.dst} = np.int32({int(math.isnan(init))})"]
        if where == "combine":
            cmp = ">" if acc.kind == "max" else "<"
            k, s = f"key_{acc.dst}", acc.src
            return [f"{k} = {self.use('_fkey_' + dt)}({s})", f"{a} = {k} if {k} {cmp} {a} else {a}",
                    f"nan_{acc.dst} = np.int32(nan_{acc.dst} | np.int32({s} != {s}))"]
        return [f"{acc.dst} = np.{dt}(np.nan) if nan_{acc.dst} else {self.use('_fval_' + dt)}({a})"]

    # -- the function ------------------------------------------------------------------------
    def docstring(self, sched: CpuSchedule) -> str:
        kir = self.kir
        flat = dict(sched.flat)
        ins = ", ".join(f"in{k}: {b.dtype}[{flat[k] + 1 if k in flat else b.ndim}d]"
                        for k, b in enumerate(kir.inputs))
        outs = ", ".join(f"out{k}: {b.dtype}[{b.ndim}d]" for k, b in enumerate(kir.outputs))
        return (f'    """{kir.kind}: ({ins}) -> ({outs}); outer={list(kir.outer)} '
                f'inner={list(kir.inner)}; schedule: {sched}"""')

    def function(self) -> list[str]:
        kir = self.kir
        if self.sched.order == "cols":
            return (cpu_chunks if self.sched.chunks else cpu_cols).function(self, self.sched)
        if self.sched.order == "blocks":
            return cpu_blocks.function(self)
        params = [f"in{k}" for k in range(len(kir.inputs))] + \
                 [f"out{k}" for k in range(len(kir.outputs))] + [p.name for p in kir.sizes]
        lines = [f"def {FN_NAME}({', '.join(params)}):", self.docstring(self.sched)] + self.scalar_reads()
        if self.sched.order == "tiles":
            return lines + self.tiled(self.sched.col)
        hoisted, _ = split_invariant([self.stmt(s) for s in kir.phases[0].pre] if kir.phases else [],
                                     {p.name for p in kir.sizes})
        self.hoisted = {line.partition(" = ")[0] for line in hoisted}
        lines += ["    " + x for x in hoisted]
        ind, split = 1, self.sched.split
        order = loop_order(kir, self.sched.perm)
        chain = self.chain_levels(order)
        for n, d in enumerate(order):
            if d == split:                  # (the last outer loop: an elementwise kernel's)
                lines += self.piece_loop(d, ind, self.phase_lines)
                break
            if chain and d == order[-1]:
                lines += self.chain_loop(d, ind, n == 0, chain)
                break
            # a scatter runs in C order (the last write to a position wins, as in NumPy)
            rng = "numba.prange" if n == 0 and kir.kind != GroupKind.SCATTER else "range"
            lines.append("    " * ind + f"for i{d} in {rng}({kir.domain[d]}):")
            ind += 1
            lines += ["    " * ind + x for x in self.chain_rows(chain)] if chain and n == 0 else []
        else:
            lines += self.phase_lines(ind)
        if len(lines) == 2 or lines[-1].rstrip().endswith(":"):
            lines.append("    " * ind + "pass")
        return lines

    def chain_levels(self, order) -> dict | None:
        """The loop (level) of each statement of an elementwise kernel whose float32 helpers feed
        one another (see ``_CHAIN``), or None: a helper that a later one reads ends its level, the
        other statements go in the last level they can (a store in the last), so few values cross
        a level. A value that does is kept in a chunk row (``chain_rows``) unless it is a load
        (read again: L1) or an index. Rows order, no pieces or interleaved loads, one phase."""
        kir, sched = self.kir, self.sched
        if (kir.kind != GroupKind.ELEMENTWISE or sched.order != "rows" or sched.split >= 0 or sched.inter
                or len(kir.phases) != 1 or kir.phases[0].has_loop or not order):
            return None
        stmts = [s for s in kir.phases[0].pre if getattr(s, "dst", None) not in self.hoisted]
        defs = {s.dst: s for s in stmts if not isinstance(s, K.Store)}
        helper = {n for n, s in defs.items() if isinstance(s, K.Op) and s.op in _STAGED_OPS and s.dtype == "float32"}
        users: dict = {}
        for s in stmts:
            for a in K.stmt_reads(s):
                users.setdefault(a, []).append(s)
        feeds: set = set()                  # values a helper reads, directly or through others
        for s in reversed(stmts):
            if getattr(s, "dst", None) in defs and any(u.dst in helper | feeds for u in users.get(s.dst, ())
                                                        if not isinstance(u, K.Store)):
                feeds.add(s.dst)
        cut = helper & feeds
        if not cut:
            return None
        first: dict = {}                    # the earliest level a statement can go in
        for s in stmts:
            first[id(s)] = max((first[id(defs[a])] + (a in cut) for a in K.stmt_reads(s) if a in defs), default=0)
        last = max(first.values())
        level: dict = {}
        for s in reversed(stmts):
            if isinstance(s, K.Store):
                level[id(s)] = last
            elif s.dst in cut:
                level[id(s)] = first[id(s)]
            else:
                level[id(s)] = min((level[id(u)] for u in users.get(s.dst, ())), default=last)
        # the values a later level reads from an earlier one, kept in rows (real ops only)
        rows = {a: defs[a] for s in stmts for a in K.stmt_reads(s)
                if a in defs and level[id(defs[a])] < level[id(s)] and not self.reread(defs[a])}
        if any(not isinstance(d, K.Op) or d.dtype.startswith("complex") for d in rows.values()):
            return None
        return {"stmts": stmts, "level": level, "defs": defs, "last": last, "rows": rows}

    @staticmethod
    def reread(st) -> bool:
        """Whether a chained loop computes ``st`` again rather than keeping it in a row."""
        return isinstance(st, K.Index) or (isinstance(st, K.Load) and not K.gathers(st.index))

    @staticmethod
    def chain_rows(chain) -> list[str]:
        """A chained loop's chunk rows (``chain["rows"]``), allocated once a parallel trip."""
        return [f"ch_{n} = np.empty({_CHAIN}, {_ctor(_vt(st.dtype))})" for n, st in chain["rows"].items()]

    def chain_loop(self, d: int, ind: int, parallel: bool, chain) -> list[str]:
        """Loop ``i<d>`` (the innermost) in chunks of ``_CHAIN``, a loop a level of ``chain``
        inside each (:meth:`chain_levels`); ``parallel``: it is the prange loop too, which then
        runs over blocks of ``_CHAIN_BLOCK`` chunks."""
        ext, B = self.kir.domain[d], _CHAIN * _CHAIN_BLOCK
        lines = []
        if parallel:
            lines += [f"for b{d} in numba.prange(({ext} + {B - 1}) // {B}):"]
            lines += ["    " + x for x in self.chain_rows(chain)]
            lines += [f"    for c{d} in range(b{d} * {B}, min(b{d} * {B} + {B}, {ext}), {_CHAIN}):"]
            lvl = 2
        else:
            lines += [f"for c{d} in range(0, {ext}, {_CHAIN}):"]
            lvl = 1
        lines.append("    " * lvl + f"n{d} = min({_CHAIN}, {ext} - c{d})")
        level, defs, rows = chain["level"], chain["defs"], chain["rows"]
        self.chunked = f"i{d}"
        try:
            for k in range(chain["last"] + 1):
                body, have = [], set()
                for s in chain["stmts"]:
                    if level[id(s)] != k:
                        continue
                    for a in K.stmt_reads(s):       # values of earlier levels: a row, or again
                        if a in defs and level[id(defs[a])] < k and a not in have:
                            have.add(a)
                            body.append(f"{a} = ch_{a}[j{d}]" if a in rows else self.stmt(defs[a]))
                    body.append(self.stmt(s))
                    if getattr(s, "dst", None) in rows and level[id(s)] == k:
                        body.append(f"ch_{s.dst}[j{d}] = {s.dst}")
                lines.append("    " * lvl + f"for j{d} in range(n{d}):")
                lines.append("    " * (lvl + 1) + f"i{d} = c{d} + j{d}")
                lines += ["    " * (lvl + 1) + x for x in body]
        finally:
            self.chunked = ""
        return ["    " * ind + x for x in lines]

    def phase_lines(self, ind: int) -> list[str]:
        """The phases' lines inside the outer loops (at level ``ind``)."""
        kir, lines = self.kir, []
        inner = kir.loop_dims(kir.inner)
        vector = bool(inner)                # acc_lines: the vectorisable forms (per element: any loop nest)
        for n, ph in enumerate(kir.phases):
            lines += ["    " * ind + self.stmt(s) for s in ph.pre     # (phase 0's invariant ones: before the loops)
                      if n or getattr(s, "dst", None) not in self.hoisted]
            if not ph.has_loop:
                continue
            for acc in ph.accs:
                lines += ["    " * ind + x for x in self.acc_lines(acc, "init", vector=vector)]
            lines += ["    " * ind + f"{sc.dst} = {self.scan_init(sc)}" for sc in K.scans(ph.body)]
            keys = K.value_keys(ph.body)
            staged = self.staged(ph, inner, keys, kir.phases[n + 1:])
            wide = self.wide_sums(ph, inner, keys)
            rows = dict(staged, **{a.src: f"sw_{a.dst}" for a in wide if a.src not in staged})
            lines += ["    " * ind + f"{row} = np.empty({kir.domain[inner[-1]]}, np.float32)"
                      for row in dict.fromkeys(rows.values())]

            def body(j, ph=ph, keys=keys, rows=rows, wide=wide):
                out = [self.reused(s, inner, keys) or self.stmt(s) for s in ph.body]
                out += [f"{row}[i{inner[-1]}] = {src}" for src, row in rows.items()]
                for acc in ph.accs:
                    out += self.acc_lines(acc, "combine", vector=vector) if acc not in wide else []
                return ["    " * j + x for x in out] or ["    " * j + "pass"]
            j = ind
            if not rows and cpu_argblocks.eligible(ph, inner, self.sched):
                lines += cpu_argblocks.loop_lines(self, ph, inner[0], kir.domain[inner[0]], ind,
                                                  lambda s, keys=keys: self.reused(s, inner, keys) or self.stmt(s))
            else:
                for d in inner:
                    if d == self.sched.split:   # (the last inner loop)
                        lines += self.piece_loop(d, j, body)
                        break
                    lines.append("    " * j + f"for i{d} in range({kir.domain[d]}):")
                    j += 1
                else:
                    lines += body(j)
            if wide:                        # the float64 additions over the summands' row
                d = inner[-1]
                lines += self.row_sums(wide, rows, f"for i{d} in range({kir.domain[d]}):", f"i{d}", j - 1)
            for acc in ph.accs:
                lines += ["    " * ind + x for x in self.acc_lines(acc, "result", vector=vector)]
            for src, row in staged.items():     # later phases of this outer trip read the rows
                self.scratch.setdefault((inner[0], keys[src]), row)
        return lines

    def piece_loop(self, d: int, level: int, body) -> list[str]:
        """Loop ``i<d>`` split into pieces (:mod:`kfuse.codegen.cpu_pieces`) at ``level``,
        around ``body(level)``'s lines (rendered with the piece's index forms)."""
        self.piece = cpu_pieces.Piece(d, self.pieces, self.units)
        try:
            inside = body(level + 2)
        finally:
            piece, self.piece = self.piece, None
        if not piece.used:                  # (a statistics pass that reads no pattern: one piece)
            self.piece = cpu_pieces.Piece(d, [], self.units)
            try:
                inside = body(level + 1)
            finally:
                piece, self.piece = self.piece, None
            return ["    " * level + x for x in piece.whole(self.kir.domain[d])] + inside
        head = ["    " * level + x for x in piece.head(self.kir.domain[d])]
        return head + inside + ["    " * (level + 1) + piece.tail()]

    def tiled(self, t: int) -> list[str]:
        """An elementwise kernel's loops in the ``tiles`` order: the other dims outside, then
        TILE x TILE tiles of (``t``, the last dim), the last dim innermost (the output's
        contiguous axis); an operand running along ``t`` is read a tile at a time from L1."""
        kir, B = self.kir, TILE
        dims = kir.loop_dims(range(len(kir.domain)))
        last = dims[-1]
        lines, ind = [], 1
        others = [d for d in dims if d not in (t, last)]
        staged = {s.dst: (f"st{n}", s) for n, s in enumerate(
            s for s in kir.phases[0].pre if isinstance(s, K.Load) and s.dst in self.sched.staged)}
        # a scratch tile per staged load and thread (allocated in the parallel loop's body; one
        # column of padding: its rows are not a power of two bytes apart, so they share no L1 set)
        scratch = [f"{st} = np.empty(({B}, {B + 1}), np.{np.dtype(kir.inputs[s.buf].dtype).type.__name__})"
                   for st, s in staged.values()]
        for n, d in enumerate(others):
            lines.append("    " * ind + f"for i{d} in {'numba.prange' if n == 0 else 'range'}({kir.domain[d]}):")
            ind += 1
            lines += ["    " * ind + x for x in scratch] if n == 0 else []
        et, el = kir.domain[t], kir.domain[last]
        lines.append("    " * ind + f"for tt in {'range' if others else 'numba.prange'}(({et} + {B - 1}) // {B}):")
        lines += [] if others else ["    " * (ind + 1) + x for x in scratch]
        lines.append("    " * (ind + 1) + f"for tl in range(({el} + {B - 1}) // {B}):")
        body = [(f"{s.dst} = {staged[s.dst][0]}[jt, jl]" if getattr(s, "dst", None) in staged
                 else self.stmt(s)) for s in kir.phases[0].pre]
        if not staged:
            lines.append("    " * (ind + 2) + f"for i{t} in range(tt * {B}, min(tt * {B} + {B}, {et})):")
            lines.append("    " * (ind + 3) + f"for i{last} in range(tl * {B}, min(tl * {B} + {B}, {el})):")
            return lines + ["    " * (ind + 4) + x for x in body]
        # the tile's own indices count from 0 (the scratch's, which Numba then knows are not
        # negative: no wraparound test per element, and the loops vectorise)
        lines += ["    " * (ind + 2) + f"nt = min({B}, {et} - tt * {B})",
                  "    " * (ind + 2) + f"nl = min({B}, {el} - tl * {B})"]
        lt = ["for jt in range(nt):", f"    i{t} = tt * {B} + jt"]
        ll = ["for jl in range(nl):", f"    i{last} = tl * {B} + jl"]
        read = [f"{st}[jt, jl] = {self.stmt(s).partition(' = ')[2]}" for st, s in staged.values()]
        for a, b, inner in ((ll, lt, read), (lt, ll, body)):    # the staged tiles read along t
            lines += ["    " * (ind + 2) + x for x in a] + ["    " * (ind + 3) + x for x in b]
            lines += ["    " * (ind + 4) + x for x in inner]
        return lines

    def scan_init(self, sc: K.Scan) -> str:
        if _complex_product(sc.op, sc.dtype):
            return f"{self.use('_cunit_' + sc.dtype)}()"
        return _literal(sc.init, sc.dtype)

    def reused(self, st, inner, keys) -> str | None:
        """``st`` as a read of a scratch row that an earlier phase of this outer trip filled with
        the same value at every index of the same (only) inner dim (:meth:`staged`), else None.
        The same key is the same op over the same dtypes and argument values, so the same code and
        rounding; the row has the value's own type, so the store and load are exact."""
        if not (isinstance(st, K.Op) and len(inner) == 1):
            return None
        row = self.scratch.get((inner[0], keys[st.dst]))
        return f"{st.dst} = {row}[i{inner[0]}]" if row else None

    def row_sums(self, wide, rows, loop: str, at: str, level: int) -> list[str]:
        """``loop`` (a ``for`` line) adding the ``wide`` sums' summands from their rows (read at
        index ``at``), at ``level``."""
        lines = ["    " * level + loop]
        for acc in wide:
            read = dataclasses.replace(acc, src=f"{rows[acc.src]}[{at}]")
            lines += ["    " * (level + 1) + x for x in self.acc_lines(read, "combine", vector=True)]
        return lines

    def wide_sums(self, ph, inner, keys) -> list:
        """The float64 sums of float32 summands in a loop over the last inner dim that calls a
        vectorised float32 helper (``exp``...): the loop stores the summands in a row and the
        additions run in a loop of their own over it, so that the helper's loop vectorises at
        float32 width (a 32x65536 f32 exp-sum: 1.23 -> 0.86 ms on one thread; the additions
        and their order are the same). Not in a loop split into pieces."""
        if not inner or inner[-1] == self.sched.split or not any(
                isinstance(s, K.Op) and vectorised_helper(s.op, s.dtype) and not self.reused(s, inner, keys)
                for s in ph.body):
            return []
        return [a for a in ph.accs if a.kind == "sum" and a.mask is None and a.acc_dtype == "float64"
                and a.src_dtype in ("float32", "float16")]

    @staticmethod
    def staged(ph, inner, keys, later) -> dict:
        """The summands of the phase's float sums over one inner dim that go to a scratch row
        (summand variable -> row name): a float32 op result, in a loop that calls an expensive
        float32 helper (_STAGED_OPS), which a ``later`` phase's loop computes again."""
        if len(inner) != 1 or not any(isinstance(s, K.Op) and s.op in _STAGED_OPS and
                                      s.dtype == "float32" for s in ph.body):
            return {}
        ops = {s.dst: s for s in ph.body if isinstance(s, K.Op)}
        again = {k for p in later if p.has_loop for k in K.value_keys(p.body).values()}
        return {a.src: f"sb_{a.dst}" for a in ph.accs
                if a.kind == "sum" and a.src in ops and ops[a.src].dtype == "float32" == a.src_dtype
                and keys[a.src] in again}

    def source(self) -> str:
        fn = self.function()
        helpers = []
        for name in _HELPERS:                   # definition order respects dependencies
            if name in self.used:
                helpers += [_HELPERS[name][0].replace("@numba.njit(", _HELPER_JIT), ""]
        name = FN_NAME
        head = [f'"""kfuse CPU kernel ({self.kir.kind}), generated by kfuse.codegen.cpu."""',
                "import math", "import numpy as np", "import numba", ""]
        tail = ["", f"{name}_seq = numba.njit({NJIT_OPTS})({name})",
                f"{name}_par = numba.njit({NJIT_OPTS}, parallel=True)({name})", ""]
        return "\n".join(head + helpers + fn + tail)


def emit(kir: K.KernelIR, schedule: CpuSchedule = ROWS) -> str:
    """Python source defining ``kfuse_kernel``, ``kfuse_kernel_seq`` and ``kfuse_kernel_par``,
    its loops laid out by ``schedule`` (:mod:`kfuse.codegen.cpu_schedule`; ``cols`` takes the
    column block ``cb`` as a last argument, ``flat`` buffers come collapsed)."""
    K.refuse_bfloat16(kir, "the CPU backend")
    # the stores in the loop order of ``perm`` (the outputs' C-ordered buffers: cpu_layout), then
    # the schedule's merged loops (cpu_merge)
    kir = cpu_merge.apply(cpu_merge.permuted_stores(decompose(kir), schedule.perm), schedule.merge)
    return _Emitter(kir, schedule).source()
