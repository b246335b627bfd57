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
  kernel (the reciprocal computed on the host).
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
loops and torch's eager ops do: computed in float32, each result rounded to bfloat16).
Scalar rules (C types, literals, casts, op expressions) and the prelude: :mod:`kfuse.codegen.cuda_ops`;
the reduction accumulators: :mod:`kfuse.codegen.cuda_accs`;
the Variant and the launch-shape rules: :mod:`kfuse.codegen.cuda_shapes`.
"""
from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

from ..errors import CompileError
from . import kernel_ir as K
from ..fusion.kinds import ROW_KINDS, GroupKind
from .cuda_accs import AccEmitter
from .cuda_complex import PRELUDE as COMPLEX_PRELUDE, unit_scans, uses_complex
from .cuda_scan import ScanEmitter
from .cuda_scatter import ScatterEmitter
from .cuda_tile2d import Tile2dEmitter, load_axes, tile_loads
from .decompose import decompose
from .cuda_ops import (LOWP, PRELUDE, _STYPE, const_literal, ctype, index_c, load_expr, op_expr,
                       round_lowp, store_value)
from .cuda_shapes import (GRID_SYNC_HEAD, SPLIT_SLOT, Variant, blockwise_divisors, blockwise_fits, grid_combine_groups, grid_sync_ok, multiple_of, default_variant, lane_invariant, lane_itemsize, max_itemsize,
                          pads_along, reload_pays, rereads_rows, row_shape, scan_shape, scan_split_ok, split_ok,
                          vector_access, vector_accesses, vector_offset, vector_ok, wide_accs, writes_rows)

COL_UNROLL = 16               # Variant "col": a column's rows unrolled, loads in flight (H200, sum over axis 0 of
                              # 4096x65536 f32: 1506 us at 1, 519 at 4, 347 at 8, 296 at 16; pixel norm 244/181/172/172)
CHUNK_UNROLL_GRID_SYNC = 8     # Variant.grid_sync: a column chunk's rows unrolled (H200 sweep, stats0 65536x1024: 0.439 ms at 8, 0.448 at 4)
ROW_REREAD_UNROLL = 8          # a re-read row's loop unrolled, loads in flight (half with vector units; H200, us at
                              # 1/8: x / norm(x) of 512 x 100003 f32 258/224, softmax 256 x 262144 255/241)

__all__ = ["Variant", "CudaKernel", "emit_kernel", "emit", "default_variant", "grid_combine_groups", "blockwise_divisors", "blockwise_fits", "multiple_of", "lane_itemsize",
           "max_itemsize", "SPLIT_SLOT", "GRID_SYNC_HEAD", "grid_sync_ok", "reload_pays", "rereads_rows", "row_shape", "scan_shape", "scan_split_ok", "split_ok", "vector_access", "vector_accesses", "vector_offset", "load_axes", "tile_loads",
           "vector_ok", "writes_rows"]


@dataclasses.dataclass(frozen=True)
class CudaKernel:
    name: str
    source: str
    variant: Variant
    # index divisors the host passes as (multiplier, shift) pairs after the strides, in order:
    # (domain dim, vector width): divide by extent(dim) // width (runtime.cuda.fast_divisor)
    divisors: tuple = ()
    # which of the conventional scalar parameters (sizes, input strides, output strides, divisor
    # pairs: _Gen.scalar_params) the kernel declares, a bool each in that order; () = all
    scalars: tuple = ()

    def keep_scalars(self, values: list) -> list:
        """``values`` (every conventional scalar, in order) cut to the ones this kernel takes."""
        if not self.scalars:
            return values
        if len(values) != len(self.scalars):
            raise CompileError(f"kfuse: {self.name} takes {len(self.scalars)} scalar slots, got {len(values)}")
        return [x for x, keep in zip(values, self.scalars) if keep]


# ----------------------------------------------------------------------------- kernel shapes

class _Gen(K.StatementRenderer, AccEmitter, ScanEmitter, ScatterEmitter, Tile2dEmitter):
    def __init__(self, kir: K.KernelIR, variant: Variant):
        self.kir, self.v = kir, variant
        self.dt = {}                    # var -> dtype name
        self.consts = {}                # var -> constant value
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
            terms.append(index_c(e) if unit and d == len(index) - 1 else f"{index_c(e)} * (IDX)st_{kind}{k}_{d}")
        return " + ".join(terms) if terms else "(IDX)0"

    # -- statements (scalar): K.StatementRenderer dispatches to on_<statement>
    def stmt(self, s, loads=None) -> str:
        """A statement's C line; ``loads`` maps a load's value to an expression already read (a
        vector lane, a shared-memory tile)."""
        if loads is not None and isinstance(s, K.Load) and s.dst in loads:
            self.dt[s.dst] = s.dtype
            return f"const {ctype(s.dtype)} {s.dst} = {loads[s.dst]};"
        return self.statement(s)

    def slot_read(self, s: K.Load, slot: str) -> str:
        return f"const {ctype(s.dtype)} {s.dst} = {slot};"

    def slot_write(self, slot: str, s: K.Load) -> str:
        return f"{slot} = {s.dst};"

    def on_load(self, s: K.Load) -> str:
        return (f"const {ctype(s.dtype)} {s.dst} = "
                f"{load_expr(f'in{s.buf}', self.offset('in', s.buf, s.index), s.dtype)};")

    def on_const(self, s: K.Const) -> str:
        self.dt[s.dst] = s.dtype
        self.consts[s.dst] = s.value
        return f"const {ctype(s.dtype)} {s.dst} = {const_literal(s.value, s.dtype)};"

    def on_index(self, s: K.Index) -> str:
        return f"const {ctype(s.dtype)} {s.dst} = ({ctype(s.dtype)}){index_c(s.expr)};"

    def on_op(self, s: K.Op) -> str:
        return f"const {ctype(s.dtype)} {s.dst} = {self.op_value(s)};"

    def on_search(self, s: K.Search) -> str:        # a binary search of the table (cuda_ops.PRELUDE)
        right = "true" if s.side == "right" else "false"
        return (f"const long long {s.dst} = kf_search<{right}>(in{s.buf}, (long long){index_c(s.n)}, "
                f"(long long)st_in{s.buf}_0, ({_STYPE[s.dtype]}){s.key});")

    def on_scan(self, s: K.Scan) -> str:            # the running value is dst itself, declared before the loop
        return f"{s.dst} = {self.op_value(s.step(s.dst))};"

    def on_combine(self, s: K.Store) -> str:        # a scatter's ufunc.at: atomic (codegen.cuda_scatter)
        return self.combine_store(s)

    def on_store(self, s: K.Store) -> str:
        b = self.kir.outputs[s.buf]
        return (f"out{s.buf}[{self.offset('out', s.buf, s.index)}] = "
                f"{store_value(s.src, self.dt.get(s.src, b.dtype), b.dtype)};")

    def op_value(self, s: K.Op) -> str:
        """The C expression of an op statement's value."""
        args = list(s.args)
        rd = self.const_reciprocal(s)
        ex = f"(float)((double){args[0]} * {rd})" if rd else op_expr(s.op, s.dtype, args, s.arg_dtypes)
        if s.dtype in LOWP and s.op not in ("cast", "where"):
            ex = round_lowp(ex, s.dtype)     # NumPy's float16 loops round every op's result
        return ex

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
        st = _STYPE[s.dtype]
        if self.v.stream and {f"i{d}" for d in dims} <= set().union(*map(K.expr_vars, s.index)):
            return f"kf_ldcs<{st}, {V}>(in{s.buf} + ({off}))"
        return f"*reinterpret_cast<const KfVec<{st}, {V}>*>(in{s.buf} + ({off}))"

    def vstore(self, s, st: str, V: int, val: str) -> str:
        off = self.offset("out", s.buf, s.index)
        if self.v.stream:
            return f"kf_stcs<{st}, {V}>(out{s.buf} + ({off}), {val});"
        return f"*reinterpret_cast<KfVec<{st}, {V}>*>(out{s.buf} + ({off})) = {val};"

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
            work = [self.stmt(s) for s in ph.pre]
            body += (self.unit_loop(U, per_unit, unit + index + work + end_unit) if U > 1
                     else ["  " + x for x in "\n".join(index + work).split("\n")])
            body.append("}")
            return self.wrap(body)
        last = f"i{dims[-1]}"
        lanes, loads, stores, fetch = [], {}, [], []
        gathered = False
        # a GATHER's vector load (an embedding row): its position is computed once a unit, first
        hoisted = lane_invariant(ph.pre, [s for s in ph.pre if isinstance(s, K.Load) and K.gathers(s.index)
                                          and vector_access(s.index, last)], last)
        index += [self.stmt(s) for s in hoisted]
        hoisted = {id(s) for s in hoisted}
        for s in ph.pre:
            if id(s) in hoisted:
                continue
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
                lanes.append(self.stmt(s, loads))
            elif isinstance(s, K.Store):
                lanes.append(self.lane_store(s, stores))
            else:
                lanes.append(self.stmt(s))
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
            body += ["  " + self.stmt(s) for s in ph.pre]
            body.append("}")
        return self.wrap(body)

    def lane_store(self, s: K.Store, stores: list) -> str:
        """Lane ``e_``'s value of store ``s`` into its output's vector ``o_<k>`` (``stores`` gets
        ``(s, storage type)``; :meth:`lane_compute` writes the vectors)."""
        b = self.kir.outputs[s.buf]
        stores.append((s, _STYPE[b.dtype]))
        return f"o_{len(stores) - 1}.v[e_] = {store_value(s.src, self.dt.get(s.src, b.dtype), b.dtype)};"

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

    # -- reductions
    def reduce(self) -> str:
        kir, v = self.kir, self.v
        row = v.mode == "row"
        packed = row and v.packed
        outer = kir.loop_dims(kir.outer)
        inner = kir.loop_dims(kir.inner)
        body = self.setup()
        n_outer = " * ".join(index_c(kir.domain[d]) for d in outer) or "(IDX)1"
        n_inner = " * ".join(index_c(kir.domain[d]) for d in inner) or "(IDX)1"
        body.append(f"const IDX n_rows = {n_outer};")
        body.append(f"const IDX row_len = {n_inner}; (void)row_len;")
        self._acc_q = 0
        if row:
            # one 64-double slot (32 warps x up to 16 bytes) per reduction, two per reduction when
            # barriers == 1: slots alternate with the row's parity, so the barrier after the
            # warps' reads can go (a slot is rewritten two rows later, after every warp has
            # passed the next row's barrier, hence after it finished reading)
            n_acc = sum(len(ph.accs) for ph in kir.phases)
            slots = 2 * n_acc if v.barriers == 1 else n_acc if v.exact else 1
            self._slot = 128 if wide_accs(kir) else 64    # doubles a slot: 32 warps x the widest accumulator
            body.append(f"__shared__ double red_smem_[{self._slot * max(1, slots)}];")
            body.append("int par_ = 1; (void)par_;")
            # the block size is the variant's (the launcher launches ``v.block`` threads): a constant,
            # so the cross-warp combine unrolls and its shared-memory loads issue together
            body.append(f"const int tid_ = threadIdx.x, lane_ = tid_ % {v.lanes if packed else 32}, warp_ = tid_ >> 5; "
                        f"constexpr int nwarps_ = {(v.block + 31) // 32};")
            body.append("(void)lane_; (void)warp_; (void)nwarps_;")
            if packed:      # block / lanes short rows at a time (a last group's spare rows redo the last row)
                body.append(f"for (IDX b_ = (IDX)blockIdx.x * {v.block // v.lanes}; b_ < n_rows; "
                            f"b_ += (IDX)gridDim.x * {v.block // v.lanes}) {{")
                body.append(f"  const IDX row_ = b_ + tid_ / {v.lanes} < n_rows ? b_ + tid_ / {v.lanes} : n_rows - 1;")
            elif v.stage == 1 or v.grid_sync:      # a block a (row, chunk): the grid is rows x split, exactly
                body.append(f"{{ const IDX row_ = (IDX)blockIdx.x / {v.split}, c_ = (IDX)blockIdx.x % {v.split};")
                body += ["  unsigned bar_ = 0;"] if v.grid_sync else []
            else:
                body.append("{ const IDX row_ = blockIdx.x;" if v.exact else
                            "for (IDX row_ = blockIdx.x; row_ < n_rows; row_ += gridDim.x) {")
            body.append("  par_ ^= 1;")
        elif v.stage == 1 or v.grid_sync:   # a thread a (column, chunk), neighbouring threads neighbouring columns
            body.append("{ const IDX g_ = (IDX)blockIdx.x * blockDim.x + threadIdx.x, row_ = g_ % n_rows, "
                        "c_ = g_ / n_rows;")
            # grid_sync: a thread past the last chunk has an empty chunk but meets every barrier
            body.append(f"  if (c_ >= {v.split}) return;" if v.stage == 1 else
                        f"  unsigned bar_ = 0; const IDX chunk_ = (row_len + {v.split - 1}) / {v.split}, lo_ = c_ * chunk_, "
                        "hi_ = lo_ + chunk_ < row_len ? lo_ + chunk_ : row_len;")
        else:
            body.append("for (IDX row_ = (IDX)blockIdx.x * blockDim.x + threadIdx.x; row_ < n_rows; "
                        "row_ += (IDX)gridDim.x * blockDim.x) {")
        rb = []
        self.zero_dims([d for d in kir.outer if d not in outer], rb)
        self.zero_dims([d for d in kir.inner if d not in inner], rb)
        self.decompose("row_", outer, rb)
        V = v.vec if row else 1
        last = f"i{inner[-1]}" if inner else None
        if V > 1:
            rb.append(f"const IDX row_units = row_len / {V};")
        units = "row_units" if V > 1 else "row_len"
        cache = {}   # (buf, index) -> cache array name
        kc = v.cache_k if row else 0
        reload = bool(kc and v.reload and V > 1)
        phases = [self.acc32_phase(ph) for ph in kir.phases] if reload else list(kir.phases)
        last_read = {}   # (buf, index) -> the last phase that loads it
        if kc:
            for pi, ph in enumerate(phases):
                for s in ph.body:
                    if isinstance(s, K.Load):
                        last_read[(s.buf, s.index)] = pi
                    if isinstance(s, K.Load) and (s.buf, s.index) not in cache:
                        vec = V > 1 and vector_access(s.index, last)
                        if V > 1 and not vec:
                            continue
                        name = f"c{len(cache)}_"
                        cache[(s.buf, s.index)] = name
                        st = _STYPE[s.dtype]
                        rb.append(f"KfVec<{st}, {V}> {name}[{kc}];" if V > 1 else f"{ctype(s.dtype)} {name}[{kc}];")
        row_vars = {f"i{d}" for d in kir.outer}
        row_level = set()   # values computed once a row (outside the phases' loops)
        declared = set()    # row-level reciprocals declared so far (rd_<divisor>)
        filled = set()
        q_acc, chunked = 0, False   # grid_sync: the accumulators of earlier passes (their workspace slots)
        for pi, ph in enumerate(phases):
            for s in ph.pre:
                if isinstance(s, K.Store) and (row or v.grid_sync):
                    who = ("tid_ == 0 && c_ == 0" if row and v.grid_sync else "lane_ == 0" if packed
                           else "tid_ == 0" if row else "c_ == 0")
                    rb.append(f"if ({who}) " + self.stmt(s))
                else:
                    rb.append(self.stmt(s))
                    row_level.add(getattr(s, "dst", None))
            if not ph.has_loop:
                continue
            for a in ph.accs:
                rb += self.acc_init(a)
            rb += self.scan_inits(ph)
            if v.stage == 2:      # the row's chunks instead of its loop: a thread every block-th, in
                # order, then the block's fixed combine tree (deterministic)
                rb += [f"for (int s_ = tid_; s_ < {v.split}; s_ += {v.block}) {{"]
                rb += [f"  A{a.dst} = {self.combine(a, f'A{a.dst}', self.partial(ph, k, 's_', const=True))};"
                       for k, a in enumerate(ph.accs)]
                rb += ["}"]
                for a in ph.accs:
                    f = self.acc_final(a, row)
                    rb += f[:-1] + self.redo_row(ph, a, inner) + f[-1:]
                    row_level.add(a.dst)
                continue
            if reload:   # a reduction pass loads its row slots up front; other passes load as they go
                rb += self.reload_loads(ph, pi, cache, last_read, row_vars, units, inner) if ph.accs else []
                filled = {(s.buf, s.index) for s in ph.body
                          if isinstance(s, K.Load) and (s.buf, s.index) in cache} if ph.accs else set()
            loop_at = len(rb)
            recips = {}   # row-level divisor -> its float64 reciprocal's name
            loop = []
            if kc:
                rb.append(f"#pragma unroll\nfor (int k_ = 0; k_ < {kc}; ++k_) {{")
                loop.append(f"const IDX j_ = (IDX)tid_ + (IDX)(k_ * {v.block});")
                loop.append("{" if v.exact else f"if (j_ < {units}) {{")
            elif v.stage == 1 or v.grid_sync:     # this block's (row) or thread's (col) chunk of the row
                if v.stage == 1 or (row and not chunked):      # (col grid_sync: declared with the column)
                    chunked = True
                    rb.append(f"const IDX chunk_ = ({units} + {v.split - 1}) / {v.split}, lo_ = c_ * chunk_, "
                              f"hi_ = lo_ + chunk_ < {units} ? lo_ + chunk_ : {units};")
                step = f"lo_ + tid_; j_ < hi_; j_ += {v.block}" if row else "lo_; j_ < hi_; ++j_"
                unroll = CHUNK_UNROLL_GRID_SYNC if v.grid_sync else 4
                rb.append(f"#pragma unroll {unroll}\nfor (IDX j_ = {step}) {{")      # several loads in flight
            elif row and packed:
                rb.append(f"for (IDX j_ = lane_; j_ < {units}; j_ += {v.lanes}) {{")
            elif row:       # a row re-read from L2: several loads in flight a thread
                rb.append(f"#pragma unroll {ROW_REREAD_UNROLL if V == 1 else max(1, ROW_REREAD_UNROLL // 2)}\n"
                          f"for (IDX j_ = tid_; j_ < {units}; j_ += {v.block}) {{")
            else:
                rb.append(f"#pragma unroll {COL_UNROLL}\nfor (IDX j_ = 0; j_ < row_len; ++j_) {{")
            dec = []
            self.decompose("j_", inner, dec, V)
            loop += dec
            newly = set()
            if V == 1:
                for s in ph.body:
                    if kc and isinstance(s, K.Load):
                        loop += self.cached_load(s, f"{cache[(s.buf, s.index)]}[k_]", filled, newly)
                    else:
                        loop.append(self.stmt(s))
                for a in ph.accs:
                    loop += self.acc_step(a)
            else:
                lanes, loads, stores = [], {}, []
                for s in ph.body:
                    if isinstance(s, K.Load):
                        st = _STYPE[s.dtype]
                        off = self.offset("in", s.buf, s.index)
                        key = (s.buf, s.index)
                        if key in cache and reload and key not in filled:
                            loop.append(f"const KfVec<{st}, {V}> w_{s.dst} = "
                                        f"{self.hinted(pi, key, last_read, row_vars)}<{st}, {V}>(in{s.buf} + ({off}));")
                            loads[s.dst] = load_expr(f"w_{s.dst}.v", "e_", s.dtype)
                        elif key in cache:
                            c = cache[key]
                            if key not in filled and key not in newly:
                                loop.append(f"{c}[k_] = {self.vload(s, V, off, outer + inner)};")
                                newly.add(key)
                            loads[s.dst] = load_expr(f"{c}[k_].v", "e_", s.dtype)
                        elif vector_access(s.index, last):
                            loop.append(f"const KfVec<{st}, {V}> w_{s.dst} = "
                                        f"*reinterpret_cast<const KfVec<{st}, {V}>*>(in{s.buf} + ({off}));")
                            loads[s.dst] = load_expr(f"w_{s.dst}.v", "e_", s.dtype)
                        else:
                            loop.append(f"const {st} w_{s.dst} = in{s.buf}[{off}];")
                            loads[s.dst] = load_expr(f"(&w_{s.dst})", "0", s.dtype)
                        lanes.append(self.stmt(s, loads))
                    elif isinstance(s, K.Store):
                        b = kir.outputs[s.buf]
                        st = _STYPE[b.dtype]
                        loop.append(f"KfVec<{st}, {V}> o_{len(stores)};")
                        lanes.append(f"o_{len(stores)}.v[e_] = {store_value(s.src, self.dt.get(s.src, b.dtype), b.dtype)};")
                        stores.append((s, st))
                    elif (isinstance(s, K.Op) and s.op == "divide" and s.dtype == "float32"
                          and s.arg_dtypes == ("float32", "float32") and s.args[1] in row_level):
                        rd = recips.setdefault(s.args[1], f"rd_{s.args[1]}")
                        self.dt[s.dst] = s.dtype
                        lanes.append(f"const float {s.dst} = (float)((double){s.args[0]} * {rd});")
                    else:
                        lanes.append(self.stmt(s))
                for a in ph.accs:
                    lanes += self.acc_step(a)
                loop.append(f"const IDX ib_ = {last};")
                loop.append(f"#pragma unroll\nfor (int e_ = 0; e_ < {V}; ++e_) {{")
                loop.append(f"  const IDX {last} = ib_ + e_; (void){last};")
                loop += ["  " + x for x in lanes]
                loop.append("}")
                for k, (s, st) in enumerate(stores):
                    loop.append(self.vstore(s, st, V, f"o_{k}"))
            filled |= newly
            if kc:
                loop.append("}")
            # once a row: two phases dividing by one row-level value share it (cuda seed 75 #2934)
            rb[loop_at:loop_at] = [f"const double {rd} = 1.0 / (double){b};" for b, rd in recips.items()
                                   if rd not in declared]
            declared |= set(recips.values())
            rb += ["  " + x for x in "\n".join(loop).split("\n")]
            rb.append("}")
            finals = [self.acc_final(a, row) for a in ph.accs]     # (row: the block's combine first)
            if v.grid_sync and ph.accs:     # the chunks' accumulators met across the grid, then finished
                rb += [x for f in finals for x in f[:-1]] + self.grid_combine(ph, q_acc, row)
                finals = [f[-1:] for f in finals]
                q_acc += len(ph.accs)
            for a, f in zip(ph.accs, finals):
                rb += f[:-1] + self.redo_row(ph, a, inner) + f[-1:]
                row_level |= {a.dst, a.peer}
            if v.stage == 1:      # the chunk's accumulators to the workspace; stage 2 finishes the row
                rb += [f"{'if (tid_ == 0) ' if row else ''}{self.partial(ph, k, 'c_')} = A{a.dst};"
                       for k, a in enumerate(ph.accs)]
                break
        body += ["  " + x for x in "\n".join(rb).split("\n")]
        body.append("}")
        return self.wrap(body)

    def grid_combine(self, ph: K.Phase, first: int, row: bool) -> list[str]:
        """Variant.grid_sync, after a pass's chunk loop (row mode: and the block's combine): each
        chunk's accumulators to their workspace slots (accumulator, chunk, column: a warp's writes
        and reads coalesce), a grid barrier, chunk 0 of each row or column combining the chunks in
        chunk order into its own slot, a second barrier, and every thread reading that value."""
        v = self.v
        barrier = "bar_ += gridDim.x; kf_grid_sync(reinterpret_cast<unsigned*>(ws_), bar_);"
        slot = (f"*reinterpret_cast<{{c}}{{T}}*>(ws_ + {GRID_SYNC_HEAD} + ((size_t)({{q}} * {v.split} + {{ch}}) "
                f"* n_rows + row_) * {SPLIT_SLOT})")
        out = []
        for k, a in enumerate(ph.accs):
            T = self.acc_types(a)
            out.append(f"if ({'tid_ == 0' if row else f'c_ < {v.split}'}) {slot.format(c='', T=T, q=first + k, ch='c_')} = A{a.dst};")
        out.append(barrier)
        # the chunks combined in chunk order, into chunk 0's slot, read by every thread after a
        # barrier: a read of every partial once, not once a chunk (264 chunks of 1024 columns:
        # 0.57 GB of L2 reads a pass when every thread combined); past GRID_COMBINE_DIRECT chunks
        # in two levels, groups of consecutive chunks side by side into a second region, then
        # the groups in order (the same order of combination, so a first maximum stays first)
        groups = grid_combine_groups(v.split)
        who = "tid_ == 0 && " if row else ""
        src, n = slot, v.split
        if groups > 1:
            per = -(-v.split // groups)
            total = sum(len(p.accs) for p in self.kir.phases)
            level = (f"*reinterpret_cast<{{c}}{{T}}*>(ws_ + {GRID_SYNC_HEAD} + ((size_t)({total * v.split} + {{q}} * "
                     f"{groups} + {{ch}}) * n_rows + row_) * {SPLIT_SLOT})")
            out += self._combine_chunks(ph, first, f"{who}c_ < {groups}", slot, f"(int)c_ * {per}",
                                        f"min({v.split}, ((int)c_ + 1) * {per})", level, "c_")
            out.append(barrier)
            src, n = level, groups
        out += self._combine_chunks(ph, first, f"{who}c_ == 0", src, "0", str(n), slot, "0")
        out.append(barrier)
        for k, a in enumerate(ph.accs):
            out.append(f"A{a.dst} = {slot.format(c='const ', T=self.acc_types(a), q=first + k, ch='0')};")
        return out

    def _combine_chunks(self, ph, first: int, cond: str, src: str, lo: str, hi: str, dst: str, at: str) -> list[str]:
        """Where ``cond``: each accumulator of ``ph`` combined over the ``src`` slots of chunks
        ``lo`` to ``hi`` (excluded), in order, written to the ``dst`` slot ``at``."""
        out = [f"if ({cond}) {{"]
        for k, a in enumerate(ph.accs):
            T, b = self.acc_types(a), dataclasses.replace(a, dst=f"{a.dst}g")
            out += ["{"] + self.acc_init(b)
            out.append(f"for (int s_ = {lo}; s_ < {hi}; ++s_) A{b.dst} = "
                       f"{self.combine(a, f'A{b.dst}', src.format(c='const ', T=T, q=first + k, ch='s_'))};")
            out += [f"{dst.format(c='', T=T, q=first + k, ch=at)} = A{b.dst}; }}"]
        return out + ["}"]

    def reload_loads(self, ph, pi, cache, last_read, row_vars, units, inner) -> list[str]:
        """Variant.reload, a reduction pass: its row loads, all issued before its compute loop
        (predicated, so they go out back to back), into the register slots the loop reads."""
        v, V = self.v, self.v.vec
        lines, done = [], set()
        for s in ph.body:
            key = (s.buf, s.index) if isinstance(s, K.Load) else None
            if key not in cache or key in done:
                continue
            done.add(key)
            fn = self.hinted(pi, key, last_read, row_vars)
            ok = "" if v.exact else f", j_ < {units}"
            lines.append(f"{cache[key]}[k_] = {fn}<{_STYPE[s.dtype]}, {V}>(in{s.buf} + ({self.offset('in', s.buf, s.index)}){ok});")
        if not lines:
            return []
        dec = []
        self.decompose("j_", inner, dec, V)
        body = [f"const IDX j_ = (IDX)tid_ + (IDX)(k_ * {v.block});"] + dec + lines
        return [f"#pragma unroll\nfor (int k_ = 0; k_ < {v.cache_k}; ++k_) {{"] + ["  " + x for x in body] + ["}"]

    @staticmethod
    def hinted(pi, key, last_read, row_vars) -> str:
        """The load for ``key`` in phase ``pi``: evict-first at a row's last read, else evict-last."""
        again = pi < last_read[key] or not row_vars & set().union(*map(K.expr_vars, key[1]))
        return "kf_ldlast" if again else "kf_ldfirst"

    @staticmethod
    def acc32_phase(ph: K.Phase) -> K.Phase:
        """``ph`` with its float32 sums accumulated in float32 (Variant.reload). Held-row kernels
        keep float64: float32 sums of P4's squares and softmax's exps gained nothing (H200,
        2026-11-24: P4 0.0634 ms with them, 0.0626-0.0636 without, P2 0.1341 vs 0.1335-0.1343)."""
        accs = tuple(dataclasses.replace(a, acc_dtype="float32")
                     if a.kind == "sum" and a.acc_dtype == "float64" and a.src_dtype == "float32" else a
                     for a in ph.accs)
        return dataclasses.replace(ph, accs=accs)

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
        code = g.scan_rows() if variant.mode == "scan" else g.reduce()
    else:
        raise CompileError(f"kfuse: unknown kernel kind {kir.kind!r}")
    prelude = PRELUDE + (COMPLEX_PRELUDE if uses_complex(code) else "")
    return CudaKernel(g.name, prelude + "\n" + code, variant, tuple(g.divisors), g.scalars)


def emit(kir: K.KernelIR, variant: Variant | None = None) -> str:
    """KernelIR -> readable CUDA C source (one ``extern "C"`` kernel plus the prelude); an
    attention group's: its one kernel (``codegen.attention_cuda``)."""
    if kir.attention is not None:
        from .attention_cuda import default_attention_tile, emit_attention
        return emit_attention(kir.attention.spec, default_attention_tile(kir.attention.spec.head_dim))
    return emit_kernel(kir, variant).source
