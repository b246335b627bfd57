"""The CUDA emitter's reduction accumulators (a mixin of ``codegen.cuda._Gen``): their C types,
initial values, the combine of two partial states (NaN, argmax/argmin tie and any/all rules), one
element's step, the warp/block combine that finishes a row, a two-stage reduction's chunk
state in the workspace, and the sequential redo of a row whose tree result is non-finite
(``codegen.accs.redo_ops``). Reads the generator's ``v`` (Variant) and writes its ``dt`` (dtypes)."""
from __future__ import annotations

import dataclasses

from . import kernel_ir as K
from .accs import combine_expr, redo_body, redo_ops
from .decompose import nested
from .cuda_ops import cast_expr, const_literal, ctype, index_c, op_expr
from .cuda_shapes import SPLIT_SLOT


class AccEmitter:
    """Accumulator code for ``codegen.cuda._Gen`` (which sets ``self.v`` and ``self.dt``)."""

    def acc_types(self, a: K.Acc):
        if a.kind in ("argmax", "argmin"):
            return f"KfArg<{ctype(a.acc_dtype)}>"
        if a.kind == "maxsumexp":     # float32 partial sums: a float64 add a term halved the rate
            return "KfMse<float>"
        return ctype(a.acc_dtype)

    def acc_init(self, a: K.Acc) -> list[str]:
        T = self.acc_types(a)
        if a.kind in ("argmax", "argmin"):
            return [f"{T} A{a.dst}; A{a.dst}.v = {const_literal(a.init, a.acc_dtype)}; A{a.dst}.i = -1;"]
        if a.kind == "maxsumexp":
            return [f"{T} A{a.dst}; A{a.dst}.m = -__int_as_float(0x7f800000); A{a.dst}.s = 0;"]
        return [f"{T} A{a.dst} = {const_literal(a.init, a.acc_dtype)};"]

    def combine(self, a: K.Acc, x: str, y: str) -> str:
        t = a.acc_dtype
        T = ctype(t)
        if a.kind in ("argmax", "argmin"):
            return f"kf_argcomb<{T}, {'true' if a.kind == 'argmax' else 'false'}>({x}, {y})"
        if a.kind == "maxsumexp":
            return f"kf_mse_comb({x}, {y})"
        # codegen.accs: the rule of every emitter
        return combine_expr(a, x, y, "bool" if a.kind in ("any", "all") else t,
                            lambda s, args: op_expr(s.op, s.dtype, args, s.arg_dtypes), const_literal)

    def acc_step(self, a: K.Acc) -> list[str]:
        src = cast_expr(a.src, a.src_dtype, a.acc_dtype) if a.kind not in ("any", "all") else f"({a.src} != 0)"
        if a.kind in ("argmax", "argmin"):
            T = self.acc_types(a)
            return [f"{{ {T} p_; p_.v = {a.src}; p_.i = (i64)({index_c(a.pos)}); "
                    f"A{a.dst} = {self.combine(a, f'A{a.dst}', 'p_')}; }}"]
        if a.kind == "maxsumexp":
            return [f"kf_mse_step(A{a.dst}, {a.src});"]
        if a.mask:          # (a where= the reduction skips: codegen.accs)
            return [f"if ({a.mask}) A{a.dst} = {self.combine(a, f'A{a.dst}', src)};"]
        return [f"A{a.dst} = {self.combine(a, f'A{a.dst}', src)};"]

    def _shfl(self, a: K.Acc, o: str, m: str) -> str:
        """``o``: the accumulator of ``a`` from the lane ``m`` away (a pair's two fields each)."""
        T = self.acc_types(a)
        if a.kind in ("argmax", "argmin", "maxsumexp"):
            x, y = ("m", "s") if a.kind == "maxsumexp" else ("v", "i")
            return f"{T} {o}; {o}.{x} = kf_shfl(A{a.dst}.{x}, {m}); {o}.{y} = kf_shfl(A{a.dst}.{y}, {m});"
        return f"const {T} {o} = kf_shfl(A{a.dst}, {m});"

    def acc_final(self, a: K.Acc, row: bool) -> list[str]:
        out = []
        T = self.acc_types(a)
        arg = a.kind in ("argmax", "argmin")
        if row:
            # shuffle into a temporary first: a short-circuit combine (any/all: ``||``/``&&``)
            # would skip __shfl_xor_sync on some lanes, and a full-mask shuffle that not every
            # lane reaches never completes (the kernel hangs). A packed short row's lanes
            # combine among themselves alone; a block's warps then meet in shared memory.
            m0 = self.v.lanes // 2 if self.v.packed else 16
            out.append(f"for (int m_ = {m0}; m_ > 0; m_ >>= 1) {{ {self._shfl(a, 'o_', 'm_')} "
                       f"A{a.dst} = {self.combine(a, f'A{a.dst}', 'o_')}; }}")
        if row and not self.v.packed:
            if self.v.barriers == 1:
                smem = f"red_smem_ + {2 * self._slot * self._acc_q} + {self._slot} * par_"
                self._acc_q += 1
            elif self.v.exact:     # one row a block: a slot per reduction, never rewritten
                smem = f"red_smem_ + {self._slot * self._acc_q}"
                self._acc_q += 1
            else:
                smem = "red_smem_"
            out.append(f"{T}* sm_{a.dst} = reinterpret_cast<{T}*>({smem});")
            out.append(f"if (lane_ == 0) sm_{a.dst}[warp_] = A{a.dst};")
            out.append("__syncthreads();")
            nw = (self.v.block + 31) // 32
            if (self.v.reload and a.kind == "sum" and a.acc_dtype == "float32") or (
                    a.kind == "maxsumexp" and nw & (nw - 1) == 0):
                # float32 sums: a pairwise tree over the warps' partials too (nwarps_ is a power of
                # two); a maxsumexp's combine (an exp) in log2(warps) steps, not warps - 1
                out.append(f"A{a.dst} = sm_{a.dst}[lane_ & (nwarps_ - 1)];")
                out.append(f"#pragma unroll\nfor (int m_ = nwarps_ / 2; m_ > 0; m_ >>= 1) {{ {self._shfl(a, 'o_', 'm_')} "
                           f"A{a.dst} = {self.combine(a, f'A{a.dst}', 'o_')}; }}")
            else:
                out.append(f"A{a.dst} = sm_{a.dst}[0];")
                out.append(f"#pragma unroll\nfor (int w_ = 1; w_ < nwarps_; ++w_) A{a.dst} = {self.combine(a, f'A{a.dst}', f'sm_{a.dst}[w_]')};")
            if self.v.barriers != 1 and not self.v.exact:
                out.append("__syncthreads();")
        self.dt[a.dst] = a.dtype
        if arg:
            out.append(f"const long long {a.dst} = A{a.dst}.i < 0 ? 0 : A{a.dst}.i;")
        elif a.kind == "maxsumexp":
            self.dt[a.peer] = "float32"
            out.append(f"const float {a.peer} = A{a.dst}.m; "
                       + self.decl(a.dtype, a.dst, cast_expr(f"kf_mse_sum(A{a.dst})", "float32", a.dtype)))
        else:
            out.append(self.decl(a.dtype, a.dst, cast_expr(f"A{a.dst}", a.acc_dtype, a.dtype)))
        return out

    def redo_row(self, ph: K.Phase, a: K.Acc, inner: list[int]) -> list[str]:
        """After the row's tree combine (and before the cast to the result): where ``a``'s value
        is one that the association changes (``codegen.accs.redo_ops``: a complex product with a
        non-finite part, a complex max/min holding a NaN), the thread multiplies (compares) the
        row again alone, element by element in NumPy's order, from the initial value. Each thread
        holding such a value redoes its row (no barrier: the path is rare and needs no other
        thread). Not where the row is already in order (a column a thread, no chunks), in a
        chunk's partial (stage 1), nor in a kernel writing in place (the row may be overwritten)."""
        v = self.v
        cond = redo_ops(a.kind, a.acc_dtype, f"A{a.dst}")
        if (not cond or v.stage == 1 or self.kir.in_place
                or (v.mode == "col" and not (v.split or v.grid_sync))):
            return []
        q = dataclasses.replace(a, dst=f"{a.dst}q")
        loop = []
        self.decompose("jq_", inner, loop)
        loop += [self.stmt(s) for s in redo_body(ph.body, a)]
        loop += self.acc_step(q)
        test = nested(cond, lambda s, args: op_expr(s.op, s.dtype, args, s.arg_dtypes), const_literal)
        return ([f"if ({test}) {{  // NumPy's order (codegen.accs.redo_ops)"] + ["  " + x for x in self.acc_init(q)]
                + ["  for (IDX jq_ = 0; jq_ < row_len; ++jq_) {"] + ["    " + x for x in "\n".join(loop).split("\n")]
                + ["  }", f"  A{a.dst} = A{q.dst};", "}"])

    def partial(self, ph: K.Phase, k: int, chunk: str, const: bool = False) -> str:
        """Two-stage reductions: accumulator ``k`` of ``ph`` for chunk ``chunk`` of the row, in the
        workspace (``SPLIT_SLOT`` bytes an accumulator, rows x chunks x accumulators)."""
        T = self.acc_types(ph.accs[k])
        off = f"((size_t)(row_ * {self.v.split} + {chunk}) * {len(ph.accs)} + {k}) * {SPLIT_SLOT}"
        return f"*reinterpret_cast<{'const ' if const else ''}{T}*>(ws_ + {off})"
