"""KernelIR -> CUDA C (compiled by :mod:`kfuse.codegen.nvrtc`, launched by :mod:`kfuse.runtime.cuda`).

Kernel parameters, in order: output pointers, input pointers (a host scalar, ``Buffer.host``, by
value instead: a ``KfHost<T>`` of its storage type, read as a 0-d buffer), the KernelIR's int64 size
parameters, then the strides (in elements) of every input buffer dim, then of every output dim,
then the 32-bit index divisors, and for two-stage reductions the workspace. Of the scalars a kernel
declares only those its body reads (``CudaKernel.scalars``; a contiguous kernel reads no stride):
a smaller parameter block is a shorter launch, on the host and on the device.
No extent, stride or shape is embedded, so a new size reuses the compiled module.

A :class:`Variant` picks the code shape for a call (chosen on the host from the run-time strides):
* elementwise: grid-stride over ``V``-element units of the flattened domain; loads/stores whose
  last index is the innermost loop variable use ``V``-wide vector accesses (16 bytes), loads that
  do not depend on it are read once per unit (broadcast); 32- or 64-bit index math, with no
  stride multiply along the vector (the runtime vectorizes only unit-stride accesses).
  A scatter kernel: this loop, ``V == 1``, its ``ufunc.at`` store atomic (``cuda_scatter``).
* row (reduce, reduced dims contiguous): one block per outer index, threads stride over the
  reduced dims; warp shuffles + a shared-memory block combine (fixed order: deterministic);
  with ``cache_k > 0`` every body load is kept in registers (``cache_k`` slots a thread), so each
  row is read from memory once across all phases (softmax, layernorm); with ``reload`` too, each
  reduction pass loads the row again (all its loads issued up front) with L1/L2 evict-last hints,
  evict-first at its last read, so re-reads come from the SM's L1 while registers stay free for
  occupancy, and float32 sums accumulate in float32 (a thread's few terms, then pairwise trees over
  the warp and the warps: within the error bound of NumPy's pairwise float32 sum), as Triton's best
  layernorm does (``reload_pays`` says where the runtime picks it). In every row kernel a float32
  division by a row-level value is computed as
  ``(float)((double)a * (1.0 / (double)b))`` with the reciprocal once a row: correctly rounded
  (the product is within 2^-52 of a / b, which is never within 2^-49 of a float midpoint), and free
  of the IEEE division's slow path; so is a float32 division by a finite nonzero constant in any
  kernel (the reciprocal computed on the host). With ``peel`` (rows not all starting 16-byte
  aligned: odd lengths, views) each row's vector units start at its first aligned element,
  found in the kernel from the pointer, and its head and tail run element by element
  (:mod:`kfuse.codegen.cuda_peel`).
* col (reduce, outer dims contiguous): one thread per outer index, a serial loop over the reduced
  dims; neighbouring threads read neighbouring addresses (coalesced column reductions).
* scan (scan kernels, rows contiguous): lanes of a warp a row, a shuffle-up tree a segment
  (:mod:`kfuse.codegen.cuda_scan`); a column scan is ``col``, its running value in order.
* two-stage (``split``, reduce kernels of one pass over the row, too few rows or columns to fill
  the GPU: ``x.sum()``, a few long rows, a few long columns): stage 1 reduces each (row, chunk) as
  a row block or a column thread would, and writes the chunk's accumulators to a workspace (the
  last kernel parameter, ``SPLIT_SLOT`` bytes an accumulator); stage 2, a block a row, combines
  the row's chunks with the accumulator's own combine (NaN and argmax tie rules included): each
  thread every block-th chunk in order, then the block's fixed warp/shared-memory tree; then it
  finishes the row. No atomics: the result is the same bit for bit on every run (it depends on the
  chunk count, which the runtime derives from the shape and the SM count).
float16 values live in float32 registers; every float16 op result is rounded to float16, as NumPy's
float16 loops do (so a chain overflows to inf where NumPy's does); bfloat16 likewise (as ml_dtypes'
loops and torch's eager ops do: computed in float32, each result rounded to bfloat16); a value known
to hold a 16-bit number carries its storage bits too, and add, subtract and multiply of such values
run on the bits (:mod:`kfuse.codegen.cuda_lowp`).
Scalar rules (C types, literals, casts, op expressions) and the prelude: :mod:`kfuse.codegen.cuda_ops`;
the reduction accumulators: :mod:`kfuse.codegen.cuda_accs`; the row and column reduce kernels:
:mod:`kfuse.codegen.cuda_rows`;
the Variant and the launch-shape rules: :mod:`kfuse.codegen.cuda_shapes`.
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..errors import CompileError
from . import kernel_ir as K
from ..fusion.kinds import ROW_KINDS, GroupKind
from .cuda_accs import AccEmitter
from .cuda_lowp import LowpValues
from .cuda_branches import render, sink
from .cuda_peel import PRELUDE as PEEL_PRELUDE, PeelEmitter
from .cuda_rows import RowEmitter
from .cuda_complex import PRELUDE as COMPLEX_PRELUDE, unit_scans, uses_complex
from .cuda_scan import ScanEmitter
from .cuda_scatter import ScatterEmitter
from .cuda_tile2d import Tile2dEmitter, load_axes, tile_loads
from .decompose import decompose
from .cuda_ops import LOWP, PRELUDE, _STYPE, const_literal, ctype, index_c, load_expr, op_expr, round_lowp
from .cuda_shapes import (CudaKernel, GRID_SYNC_HEAD, HEAVY_FLOPS_PER_BYTE, SPLIT_SLOT, Variant, flops_per_byte, blockwise_divisors, blockwise_fits, grid_combine_groups, grid_sync_ok, multiple_of, default_variant, recomputed_values, lane_invariant, lane_itemsize, max_itemsize,
                          pads_along, peel_fits, reload_pays, rereads_rows, reloaded_buffers, row_shape, scan_shape, scan_split_ok, split_ok,
                          vector_access, vector_accesses, vector_offset, vector_ok, writes_rows)

__all__ = ["Variant", "CudaKernel", "emit_kernel", "emit", "default_variant", "grid_combine_groups", "blockwise_divisors", "blockwise_fits", "multiple_of", "lane_itemsize",
           "max_itemsize", "flops_per_byte", "HEAVY_FLOPS_PER_BYTE", "peel_fits", "SPLIT_SLOT", "GRID_SYNC_HEAD", "grid_sync_ok", "reload_pays", "rereads_rows", "reloaded_buffers", "row_shape", "scan_shape", "scan_split_ok", "split_ok", "vector_access", "vector_accesses", "vector_offset", "load_axes", "tile_loads",
           "vector_ok", "writes_rows", "recomputed_values"]


# ----------------------------------------------------------------------------- kernel shapes

class _Gen(K.StatementRenderer, LowpValues, AccEmitter, RowEmitter, PeelEmitter, ScanEmitter, ScatterEmitter, Tile2dEmitter):
    def __init__(self, kir: K.KernelIR, variant: Variant):
        self.kir, self.v = kir, variant
        self.dt = {}                    # var -> dtype name
        self.consts = {}                # var -> constant value
        self.bits: set[str] = set()     # 16-bit float values declared with their bits (cuda_lowp)
        self.name = f"kfuse_{kir.name}_{variant.tag}"
        self.divisors: list = []        # (dim, vec) of each fast division (CudaKernel.divisors)
        self.scalars: tuple = ()        # the scalar parameters the body reads (CudaKernel.scalars)
        # the vector loop variable: with vec > 1 the runtime launches only where every access
        # along it has unit stride (runtime.cuda._vector_aligned), so its stride is left out of
        # the index math (a constant offset a register tile, as in a contiguous kernel)
        va = vector_accesses(kir) if variant.vec > 1 and variant.mode != "scan" else None   # scan: strides kept
        self.unit_var = va[0] if va else None

    # -- signature
    def scalar_params(self) -> list[tuple[str, str]]:
        """Every conventional scalar parameter as (C type, name), in launch order."""
        kir = self.kir
        ps = [("i64", f"{s.name}_") for s in kir.sizes]
        ps += [("i64", f"st_in{k}_{d}") for k, b in enumerate(kir.inputs) for d in range(b.ndim)]
        ps += [("i64", f"st_out{k}_{d}") for k, b in enumerate(kir.outputs) for d in range(b.ndim)]
        ps += [("unsigned", f"dv{k}_{p}") for k in range(len(self.divisors)) for p in ("m", "s")]
        return ps

    def signature(self) -> str:
        kir = self.kir
        # an output that may be an input's own buffer (written in place): neither is __restrict__,
        # so their loads are coherent (ld.global, not .nc) and stay ordered before the stores
        shared = {f"out{o}" for o, _ in kir.in_place} | {f"in{i}" for _, i in kir.in_place}

        def ptr(ctype, name):
            return f"{ctype}*{'' if name in shared else ' __restrict__'} {name}"
        ps = [ptr(_STYPE[b.dtype], f"out{k}") for k, b in enumerate(kir.outputs)]
        ps += [f"const KfHost<{_STYPE[b.dtype]}> in{k}" if b.host else ptr(f"const {_STYPE[b.dtype]}", f"in{k}")
               for k, b in enumerate(kir.inputs)]
        ps += [f"{t} {n}" for (t, n), keep in zip(self.scalar_params(), self.scalars) if keep]
        ps += ["unsigned char* __restrict__ ws_"] if self.v.split else []     # two-stage: the chunks' accumulators
        bounds = f"{self.v.block}, {self.v.min_blocks}" if self.v.min_blocks else f"{self.v.block}"
        return (f'extern "C" __global__ void __launch_bounds__({bounds}) {self.name}(\n    '
                + ",\n    ".join(ps) + ")")

    def setup(self) -> list[str]:
        kir = self.kir
        lines = [f"typedef {'long long' if self.v.idx64 else 'int'} IDX;"]
        lines += [f"const IDX {s.name} = (IDX){s.name}_;" for s in kir.sizes]
        return lines

    def offset(self, kind: str, k: int, index) -> str:
        terms = []
        unit = self.unit_var is not None and vector_access(index, self.unit_var)
        for d, e in enumerate(index):
            if isinstance(e, K.ILit) and e.value == 0:
                continue
            terms.append(self.ix(e) if unit and d == len(index) - 1 else f"{self.ix(e)} * (IDX)st_{kind}{k}_{d}")
        return " + ".join(terms) if terms else "(IDX)0"

    # -- statements (scalar): K.StatementRenderer dispatches to on_<statement>
    def stmt(self, s, loads=None) -> str:
        """A statement's C line; ``loads`` maps a load's value to an expression already read (a
        vector lane, a shared-memory tile)."""
        if loads is not None and isinstance(s, K.Load) and s.dst in loads:
            self.dt[s.dst] = s.dtype
            return self.loaded(s, loads[s.dst])
        return self.statement(s)

    def slot_read(self, s: K.Load, slot: str) -> str:
        return self.decl(s.dtype, s.dst, slot, rounded=True)

    def slot_write(self, slot: str, s: K.Load) -> str:
        return f"{slot} = {s.dst};"

    def on_load(self, s: K.Load) -> str:
        return self.loaded(s, load_expr(f"in{s.buf}", self.offset("in", s.buf, s.index), s.dtype))

    def on_const(self, s: K.Const) -> str:
        self.dt[s.dst] = s.dtype
        self.consts[s.dst] = s.value
        return self.const_decl(s, const_literal(s.value, s.dtype))

    def on_index(self, s: K.Index) -> str:
        return self.decl(s.dtype, s.dst, f"({ctype(s.dtype)}){self.ix(s.expr)}")

    def on_op(self, s: K.Op) -> str:
        return self.op_decl(s)

    def on_search(self, s: K.Search) -> str:        # a binary search of the table (cuda_ops.PRELUDE)
        right = "true" if s.side == "right" else "false"
        return (f"const long long {s.dst} = kf_search<{right}>(in{s.buf}, (long long){index_c(s.n)}, "
                f"(long long)st_in{s.buf}_0, ({_STYPE[s.dtype]}){s.key});")

    def on_scan(self, s: K.Scan) -> str:            # the running value is dst itself, declared before the loop
        self.forget(s.dst)
        return f"{s.dst} = {self.op_value(s.step(s.dst))};"

    def on_combine(self, s: K.Store) -> str:        # a scatter's ufunc.at: atomic (codegen.cuda_scatter)
        return self.combine_store(s)

    def on_store(self, s: K.Store) -> str:
        b = self.kir.outputs[s.buf]
        return (f"out{s.buf}[{self.offset('out', s.buf, s.index)}] = "
                f"{self.stored(s.src, self.dt.get(s.src, b.dtype), b.dtype)};")

    def op_value(self, s: K.Op) -> str:
        """The C expression of an op statement's value."""
        ex = self.op_raw(s)
        if s.dtype in LOWP and s.op not in ("cast", "where"):
            ex = round_lowp(ex, s.dtype)     # NumPy's float16 loops round every op's result
        return ex

    def op_raw(self, s: K.Op) -> str:
        """An op statement's value before a 16-bit result's rounding."""
        rd = self.const_reciprocal(s)
        return f"(float)((double){s.args[0]} * {rd})" if rd else op_expr(s.op, s.dtype, list(s.args), s.arg_dtypes)

    def const_reciprocal(self, s) -> str | None:
        """A float32 division by a finite nonzero constant: the literal of the constant's float64
        reciprocal, which the quotient is computed through as a row-level divisor's is (correctly
        rounded, see the module docstring; no IEEE division sequence a element); else None."""
        if not (s.op == "divide" and s.dtype == "float32" and s.arg_dtypes == ("float32", "float32")):
            return None
        c = self.consts.get(s.args[1])
        if c is None or not math.isfinite(c) or c == 0:
            return None
        return const_literal(1.0 / float(np.float32(c)), "float64")

    def ix(self, e: K.Expr) -> str:
        """C of index expression ``e``: with 32-bit index math, a division or remainder by a size
        is a multiply-high by the host's constant (``kf_udiv``), as the domain's unravelling is
        (a concatenation's piece tests and offsets, a roll's wrap: rotary embedding of
        (B, S, D) f32 ran 5 integer divisions an element)."""
        return index_c(e, None if self.v.idx64 else self._size_division)

    def _size_division(self, e: K.IBin, lhs: str) -> str | None:
        if not (isinstance(e.rhs, K.IVar) and e.rhs.name in {s.name for s in self.kir.sizes}):
            return None
        key = (e.rhs.name, 1)
        if key not in self.divisors:
            self.divisors.append(key)
        k = self.divisors.index(key)
        q = f"kf_udiv({lhs}, dv{k}_m, dv{k}_s)"
        return f"({q})" if e.op == "//" else f"({lhs} - {q} * {e.rhs.name})"

    def decompose(self, lin: str, dims: list[int], out: list[str], vec_last: int = 1) -> None:
        """Unravel linear index ``lin`` over loop dims ``dims`` (C order) into ``i<d>``."""
        kir = self.kir
        if not dims:
            return
        out.append(f"IDX r_ = {lin};")
        for pos in range(len(dims) - 1, -1, -1):
            d = dims[pos]
            ext = index_c(kir.domain[d])
            if pos == len(dims) - 1 and vec_last > 1:
                ext = f"({ext} / {vec_last})"
            scale = f" * {vec_last}" if (pos == len(dims) - 1 and vec_last > 1) else ""
            if pos == 0:
                out.append(f"const IDX i{d} = r_{scale};")
            elif self.v.idx64:
                out.append(f"const IDX i{d} = (r_ % {ext}){scale}; r_ /= {ext};")
            else:
                # 32-bit index math: a multiply-high by a host-computed constant, not a division
                key = (d, vec_last if pos == len(dims) - 1 else 1)
                if key not in self.divisors:
                    self.divisors.append(key)
                k = self.divisors.index(key)
                out.append(f"const IDX q{d}_ = kf_udiv(r_, dv{k}_m, dv{k}_s); "
                           f"const IDX i{d} = (r_ - q{d}_ * {ext}){scale}; r_ = q{d}_;")

    def vload(self, s, V: int, off: str, dims) -> str:
        """A ``V``-wide vector load expression; streaming when the access walks every loop dim."""
        st, ptr = _STYPE[s.dtype], f"in{s.buf} + ({off})"
        if self.v.stream and {f"i{d}" for d in dims} <= set().union(*map(K.expr_vars, s.index)):
            return self.peeled(s, f"kf_ldcs<{st}, {V}>({ptr})", ptr)
        return self.peeled(s, f"*reinterpret_cast<const KfVec<{st}, {V}>*>({ptr})", ptr)

    def vstore(self, s, st: str, V: int, val: str) -> str:
        ptr = f"out{s.buf} + ({self.offset('out', s.buf, s.index)})"
        if self.v.stream:
            return self.peeled_store(s, f"kf_stcs<{st}, {V}>({ptr}, {val});", ptr, val)
        return self.peeled_store(s, f"*reinterpret_cast<KfVec<{st}, {V}>*>({ptr}) = {val};", ptr, val)

    def zero_dims(self, dims, out):
        for d in dims:
            if isinstance(self.kir.domain[d], K.ILit):
                out.append(f"const IDX i{d} = 0; (void)i{d};")

    # -- elementwise
    def elementwise(self) -> str:
        kir, V = self.kir, self.v.vec
        ph = kir.phases[0]
        dims = kir.loop_dims(range(len(kir.domain)))
        body = self.setup()
        total = " * ".join(index_c(kir.domain[d]) for d in dims) or "(IDX)1"
        body.append(f"const IDX n_units = ({total}) / {V};")
        U = self.v.ept
        exact = self.v.exact
        unit = [] if exact else ["if (u < n_units) {"]
        end_unit = [] if exact else ["}"]
        if U > 1:
            # U units a thread, blockDim apart (coalesced): every unit's loads are issued before
            # the first unit's arithmetic (its IEEE slow-path calls would otherwise keep the
            # compiler from hoisting the next unit's loads above them: half the bytes in flight)
            body += [] if exact else [f"const IDX step = (IDX)gridDim.x * blockDim.x * {U};"]
            start = f"(IDX)blockIdx.x * blockDim.x * {U} + threadIdx.x"
            body.append(f"{{ const IDX t_ = {start};" if exact else
                        f"for (IDX t_ = {start}; t_ < n_units; t_ += step) {{")
            per_unit = "const IDX u = t_ + (IDX)k_ * blockDim.x;"
        else:
            body += [] if exact else ["const IDX step = (IDX)gridDim.x * blockDim.x;"]
            start = "(IDX)blockIdx.x * blockDim.x + threadIdx.x"
            body.append(f"{{ const IDX u = {start};" if exact else
                        f"for (IDX u = {start}; u < n_units; u += step) {{")
        index = []
        self.zero_dims([d for d in range(len(kir.domain)) if d not in dims], index)
        self.decompose("u", dims, index, V)
        if V == 1:
            work = self.lines(ph.pre, self.stmt)
            body += (self.unit_loop(U, per_unit, unit + index + work + end_unit) if U > 1
                     else ["  " + x for x in "\n".join(index + work).split("\n")])
            body.append("}")
            return self.wrap(body)
        last = f"i{dims[-1]}"
        loads, stores, fetch = {}, [], []
        gathered = False
        # a GATHER's vector load (an embedding row): its position is computed once a unit, first
        hoisted = lane_invariant(ph.pre, [s for s in ph.pre if isinstance(s, K.Load) and K.gathers(s.index)
                                          and vector_access(s.index, last)], last)
        index += [self.stmt(s) for s in hoisted]
        hoisted = {id(s) for s in hoisted}
        work = [s for s in ph.pre if id(s) not in hoisted]
        for s in work:
            if isinstance(s, K.Load):
                off = self.offset("in", s.buf, s.index)
                st = _STYPE[s.dtype]
                uses_last = any(last in K.expr_vars(e) for e in s.index)
                if vector_access(s.index, last):
                    fetch.append((f"KfVec<{st}, {V}>", f"w_{s.dst}", self.vload(s, V, off, dims)))
                    loads[s.dst] = load_expr(f"w_{s.dst}.v", "e_", s.dtype)
                elif uses_last or K.gathers(s.index):
                    # a lane's own element (a PAD's wrapped read, a GATHER's): in the lane loop
                    gathered = gathered or uses_last
                else:
                    fetch.append((st, f"w_{s.dst}", f"in{s.buf}[{off}]"))
                    loads[s.dst] = load_expr(f"(&w_{s.dst})", "0", s.dtype)

        def lane(s) -> str:
            if isinstance(s, K.Load):
                return self.stmt(s, loads)
            return self.lane_store(s, stores) if isinstance(s, K.Store) else self.stmt(s)
        lanes = self.lines(work, lane, loads)
        # each lane's own innermost index where a lane reads its own element (gathers, a PAD's tests)
        compute = self.lane_compute(lanes, stores, V, last if gathered or pads_along(ph.pre, last) else None)
        if U > 1:
            body += [f"  {t} {n}_[{U}];" for t, n, _ in fetch]
            body += self.unit_loop(U, per_unit, unit + index + [f"{n}_[k_] = {ex};" for _, n, ex in fetch] + end_unit)
            body += self.unit_loop(U, per_unit, unit + index + [f"const {t}& {n} = {n}_[k_];" for t, n, _ in fetch]
                                   + compute + end_unit)
        else:
            body += ["  " + x for x in "\n".join(index + [f"const {t} {n} = {ex};" for t, n, ex in fetch]
                                                  + compute).split("\n")]
        body.append("}")
        if self.v.tail:     # the last total % V elements, one a thread of the first block
            body.append(f"if (blockIdx.x == 0 && (IDX)threadIdx.x < ({total}) - n_units * {V}) {{")
            body.append(f"  const IDX {last} = n_units * {V} + (IDX)threadIdx.x;")
            body += ["  " + x for x in "\n".join(self.lines(ph.pre, self.stmt)).split("\n")]
            body.append("}")
        return self.wrap(body)

    def lines(self, stmts, line, fetched=frozenset()) -> list[str]:
        """``line(s)`` of each statement, with the wheres that select by index alone as branches
        that run only their own arm's statements (codegen.cuda_branches; ``fetched``: the loads
        read before them)."""
        plan = sink(stmts, fetched)
        if plan is None:
            return [line(s) for s in stmts]

        def declare(w) -> str:
            self.dt[w.dst] = w.dtype
            self.forget(w.dst)
            return f"{ctype(w.dtype)} {w.dst};"
        return render(stmts, plan, line, declare)

    def lane_store(self, s: K.Store, stores: list) -> str:
        """Lane ``e_``'s value of store ``s`` into its output's vector ``o_<k>`` (``stores`` gets
        ``(s, storage type)``; :meth:`lane_compute` writes the vectors)."""
        b = self.kir.outputs[s.buf]
        stores.append((s, _STYPE[b.dtype]))
        return f"o_{len(stores) - 1}.v[e_] = {self.stored(s.src, self.dt.get(s.src, b.dtype), b.dtype)};"

    def lane_compute(self, lanes: list, stores: list, V: int, last: str | None = None) -> list[str]:
        """A vector unit's work: the stores' vectors, ``lanes`` run for each of the ``V`` lanes
        (``last`` given: each lane with its own ``last``, the unit's plus ``e_``), the vector stores."""
        out = [f"KfVec<{st}, {V}> o_{k};" for k, (_, st) in enumerate(stores)]
        if last is not None:
            out.append(f"const IDX ib_ = {last};")
            lanes = [f"const IDX {last} = ib_ + e_; (void){last};"] + lanes
        out.append(f"#pragma unroll\nfor (int e_ = 0; e_ < {V}; ++e_) {{")
        out += ["  " + x for x in lanes]
        out.append("}")
        return out + [self.vstore(s, st, V, f"o_{k}") for k, (s, st) in enumerate(stores)]

    @staticmethod
    def unit_loop(U: int, per_unit: str, lines: list[str]) -> list[str]:
        """An unrolled loop over a thread's ``U`` units (``k_``), ``u`` its unit's index."""
        out = [f"#pragma unroll\nfor (int k_ = 0; k_ < {U}; ++k_) {{", "  " + per_unit]
        out += ["  " + x for x in "\n".join(lines).split("\n")]
        return ["  " + x for x in "\n".join(out + ["}"]).split("\n")]

    def wrap(self, body: list[str]) -> str:
        """The kernel: its signature (the scalars ``body`` reads) and ``body``, less the setup
        lines of sizes nothing reads."""
        setup = {f"const IDX {s.name} = (IDX){s.name}_;": s.name for s in self.kir.sizes}
        used = set(re.findall(r"\w+", "\n".join(b for b in body if b not in setup)))
        body = [b for b in body if b not in setup or setup[b] in used]
        param_of = {f"{s.name}_": s.name for s in self.kir.sizes}    # a size's parameter -> its variable
        self.scalars = tuple(param_of.get(n, n) in used for _, n in self.scalar_params())
        return (f"// kfuse kernel {self.kir.name} [{self.kir.kind}] variant {self.v}\n"
                + self.signature() + "\n{\n" + "\n".join("  " + b for b in body) + "\n}\n")


def emit_kernel(kir: K.KernelIR, variant: Variant | None = None) -> CudaKernel:
    """CUDA C for ``kir`` in ``variant`` (default: :func:`default_variant`)."""
    if variant is None:
        variant = default_variant(kir)
    kir = unit_scans(decompose(kir))
    g = _Gen(kir, variant)
    if kir.kind in (GroupKind.ELEMENTWISE, GroupKind.MATMUL, GroupKind.SCATTER):     # a scatter: scalar (its addresses are data)
        tile = variant.mode == "tile" and kir.kind != GroupKind.SCATTER and not kir.in_place
        if not (variant.mode == "elementwise" or tile) or (kir.kind == GroupKind.SCATTER and variant.vec != 1):
            raise CompileError(f"kfuse: variant {variant} does not fit a {kir.kind} kernel")
        code = g.tile2d() if tile else g.elementwise()
    elif kir.kind in ROW_KINDS:
        allowed = ("col", "scan") if K.has_scan(kir) else ("row", "col")    # a scan runs its rows in order
        if variant.mode not in allowed:
            raise CompileError(f"kfuse: variant {variant} does not fit this reduce kernel")
        if K.has_scan(kir) and variant.mode == "col" and variant.split:
            raise CompileError(f"kfuse: a column scan runs its column in order in one thread, not in variant {variant}")
        if variant.mode == "scan" and variant.split and not scan_split_ok(kir):
            raise CompileError(f"kfuse: this scan kernel's rows do not split into chunks (cuda_shapes.scan_split_ok), "
                               f"not in variant {variant}")
        if variant.peel and (variant.mode != "row" or variant.vec < 2 or variant.exact or peel_fits(kir)):
            raise CompileError(f"kfuse: variant {variant} does not fit this reduce kernel: "
                               f"{peel_fits(kir) or 'a peeled row is a row of vector units, not exact'}")
        code = g.scan_rows() if variant.mode == "scan" else g.reduce()
    else:
        raise CompileError(f"kfuse: unknown kernel kind {kir.kind!r}")
    prelude = PRELUDE + (PEEL_PRELUDE if variant.peel else "") + (COMPLEX_PRELUDE if uses_complex(code) else "")
    return CudaKernel(g.name, prelude + "\n" + code, variant, tuple(g.divisors), g.scalars)


def emit(kir: K.KernelIR, variant: Variant | None = None) -> str:
    """KernelIR -> readable CUDA C source (one ``extern "C"`` kernel plus the prelude); an
    attention group's: its one kernel (``codegen.attention_cuda``)."""
    if kir.attention is not None:
        from .attention_cuda import default_attention_tile, emit_attention
        return emit_attention(kir.attention.spec, default_attention_tile(kir.attention.spec.head_dim))
    return emit_kernel(kir, variant).source
