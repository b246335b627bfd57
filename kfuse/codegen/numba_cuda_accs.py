"""The Numba-CUDA emitter's reduction accumulators (a mixin of ``codegen.numba_cuda._Gen``): their
register types, initial values, the combine of two partial states (``codegen.accs``; complex and
argmax/argmin pairs), one element's step, the warp shuffle and shared-memory block combine that
finish a row, and the sequential redo of a row whose tree value is non-finite
(``codegen.accs.redo_ops``). Reads the generator's ``kir``, ``use``, ``n``, ``ix``, ``decompose``
and ``stmt``; writes its ``dt`` (dtypes) and ``sfx``."""
from __future__ import annotations

import dataclasses

from . import kernel_ir as K
from . import numba_cuda_complex as ncx
from .accs import combine_expr, redo_body, redo_ops
from .decompose import nested
from .numba_cuda_ops import CudaOps, _vt
from .py_ops import literal


class AccEmitter:
    """Accumulator code for ``codegen.numba_cuda._Gen``."""

    def acc_vt(self, a: K.Acc) -> str:
        if a.kind == "maxsumexp":     # float32 partial sums, as CUDA C's KfMse<float>
            return "float32"
        return "int32" if a.acc_dtype == "bool" and a.kind in ("argmax", "argmin") else _vt(a.acc_dtype)

    def acc_init(self, a: K.Acc) -> str:
        vt = self.acc_vt(a)
        if a.kind == "maxsumexp":     # the sum (its running maximum M<dst>: acc_inits)
            return "np.float32(0)"
        if vt == "bool":
            return "True" if a.init else "False"
        if vt == "int32" and a.acc_dtype == "bool":
            return f"np.int32({int(bool(a.init))})"
        return f"_I{a.dst}"

    def acc_inits(self, a: K.Acc) -> list[str]:
        """The lines starting ``a``'s running state: its value, and an argmax's position or a
        maxsumexp's running maximum."""
        out = [f"A{a.dst} = {self.acc_init(a)}"]
        if a.kind in ("argmax", "argmin"):
            out.append(f"P{a.dst} = np.int64(-1)")
        elif a.kind == "maxsumexp":
            out.append(f"M{a.dst} = -INF32")
        return out

    def combine(self, a: K.Acc, x: str, y: str) -> str:
        """Running value ``x`` combined with ``y`` (of the accumulator's dtype): codegen.accs."""
        return combine_expr(a, x, y, "bool" if a.kind in ("any", "all") else a.acc_dtype,
                            CudaOps(self.use).op_expr, literal)

    def arg_helper(self, a: K.Acc) -> str:
        """The pair combine of an argmax/argmin accumulator (complex values: lexicographic)."""
        if a.acc_dtype in ncx.PARTS:
            return ncx.expr(a.kind, a.acc_dtype, [], self.use).removesuffix("()")
        return self.use("_" + a.kind)

    def acc_step(self, a: K.Acc) -> list[str]:
        vt = self.acc_vt(a)
        s = self.n(a.src)
        A = f"A{a.dst}"
        if a.kind == "maxsumexp":       # (codegen.online_softmax; numba_cuda_ops' _mse_step)
            return [f"M{a.dst}, {A} = {self.use('_mse_step')}(M{a.dst}, {A}, np.float32({s}))"]
        if a.kind in ("argmax", "argmin"):
            val = f"np.int32(1 if {s} else 0)" if a.acc_dtype == "bool" else s
            pos = f"np.int64({self.ix(a.pos)})"
            return [f"{A}, P{a.dst} = {self.arg_helper(a)}({A}, P{a.dst}, {val}, {pos})"]
        if a.kind in ("any", "all"):
            src = s if a.src_dtype == "bool" else f"({s} != 0)"
        elif vt == "bool":
            src = s if a.src_dtype == "bool" else f"({s} != 0)"
        elif a.src_dtype == "bool":
            src = f"np.{vt}(1 if {s} else 0)"
        else:
            src = f"np.{vt}({s})"
        if a.mask:          # (a where= the reduction skips: codegen.accs)
            return [f"{A} = {self.combine(a, A, src)} if {self.n(a.mask)} else {A}"]
        return [f"{A} = {self.combine(a, A, src)}"]

    def redo_row(self, ph: K.Phase, a: K.Acc, inner: list[int]) -> list[str]:
        """Row mode, after the block's combine: where ``a``'s tree value is one the association
        changes (``codegen.accs.redo_ops``: a complex product with a non-finite part, a complex
        max/min holding a NaN), the thread reduces the row again alone, element by element in
        NumPy's order (no barrier: every thread of the block holds the same value). Not in a
        kernel writing in place (the row may be overwritten)."""
        cond = redo_ops(a.kind, a.acc_dtype, f"A{a.dst}")
        if not cond or self.kir.in_place:
            return []
        q = dataclasses.replace(a, dst=f"{a.dst}q")
        self.sfx = ""
        loop: list[str] = []
        self.decompose("jq_", inner, loop)
        loop += [x for x in (self.stmt(s) for s in redo_body(ph.body, a)) if x]
        loop += self.acc_step(q) + ["jq_ += 1"]
        test = nested(cond, CudaOps(self.use).op_expr, literal)
        return ([f"if {test}:  # NumPy's order (codegen.accs.redo_ops)", f"    A{q.dst} = {self.acc_init(a)}",
                 "    jq_ = np.int64(0)", "    while jq_ < row_len_:"] + ["        " + x for x in loop]
                + [f"    A{a.dst} = A{q.dst}"])

    def shfl(self, var: str, vt: str, m: str, fn: str = "shfl_xor_sync") -> str:
        """``var`` of register type ``vt`` from lane ``lane ^ m`` (``fn`` another of numba.cuda's
        full-warp shuffles: ``shfl_up_sync``, lane ``lane - m``; ``shfl_sync``, lane ``m``)."""
        f = f"cuda.{fn}"
        if vt in ("float32", "float64", "int64", "int32"):
            return f"{f}(0xFFFFFFFF, {var}, {m})"
        if vt in ("complex64", "complex128"):      # its two parts
            return (f"np.{vt}(complex({f}(0xFFFFFFFF, {var}.real, {m}), "
                    f"{f}(0xFFFFFFFF, {var}.imag, {m})))")
        if vt == "bool":
            return f"({f}(0xFFFFFFFF, np.int32(1 if {var} else 0), {m}) != 0)"
        wide = "int64" if vt in ("uint64",) else "int32"
        return f"np.{vt}({f}(0xFFFFFFFF, np.{wide}({var}), {m}))"

    def acc_final(self, a: K.Acc, row: bool) -> list[str]:
        if a.kind == "maxsumexp":
            return self._mse_final(a, row)
        out = []
        vt = self.acc_vt(a)
        A = f"A{a.dst}"
        arg = a.kind in ("argmax", "argmin")
        packed = row and self.v.packed      # a short row's lanes combine among themselves alone
        if row and not (packed and self.v.lanes == 1):       # (a thread a row: nothing to combine)
            out.append(f"m_ = {self.v.lanes // 2 if packed else 16}")
            out.append("while m_ > 0:")
            if arg:
                P = f"P{a.dst}"
                out.append(f"    ov_ = {self.shfl(A, vt, 'm_')}")
                out.append(f"    oi_ = cuda.shfl_xor_sync(0xFFFFFFFF, {P}, m_)")
                out.append(f"    {A}, {P} = {self.arg_helper(a)}({A}, {P}, ov_, oi_)")
            else:   # shuffle first: every lane of the warp must execute it (no shuffle in a branch)
                out.append(f"    ov_ = {self.shfl(A, vt, 'm_')}")
                out.append(f"    {A} = {self.combine(a, A, 'ov_')}")
            out.append("    m_ >>= 1")
        if row and not packed:
            out.append("if lane_ == 0:")
            out.append(f"    sm_{a.dst}[warp_] = {A}" if vt != "bool" else f"    sm_{a.dst}[warp_] = np.uint8(1 if {A} else 0)")
            if arg:
                out.append(f"    smi_{a.dst}[warp_] = P{a.dst}")
            out.append("cuda.syncthreads()")
            rd = (lambda i: f"(sm_{a.dst}[{i}] != 0)") if vt == "bool" else (lambda i: f"sm_{a.dst}[{i}]")
            if self.v.reload and a.kind == "sum" and vt == "float32":
                # float32 sums (NVariant.reload): a pairwise tree over the warps' partials too, as
                # CUDA C's (the block a power of two of warps)
                out += [f"{A} = {rd('lane_ & (nwarps_ - 1)')}", "m_ = nwarps_ >> 1", "while m_ > 0:",
                        f"    ov_ = {self.shfl(A, vt, 'm_')}", f"    {A} = {self.combine(a, A, 'ov_')}",
                        "    m_ >>= 1", "cuda.syncthreads()"]
                return out + self._acc_result(a, vt, arg)
            out.append(f"{A} = {rd(0)}")
            if arg:
                out.append(f"P{a.dst} = smi_{a.dst}[0]")
            out.append("w_ = 1")
            out.append("while w_ < nwarps_:")
            if arg:
                out.append(f"    {A}, P{a.dst} = {self.arg_helper(a)}({A}, P{a.dst}, {rd('w_')}, smi_{a.dst}[w_])")
            else:
                out.append(f"    {A} = {self.combine(a, A, rd('w_'))}")
            out.append("    w_ += 1")
            out.append("cuda.syncthreads()")
        return out + self._acc_result(a, vt, arg)

    def _mse_final(self, a: K.Acc, row: bool) -> list[str]:
        """A maxsumexp's (maximum, sum) pair combined across the row's lanes, then its warps: a
        pairwise tree over the warps where they are a power of two (the combine is an exp:
        log2(warps) steps, not warps - 1; CUDA C's acc_final)."""
        A, M, comb = f"A{a.dst}", f"M{a.dst}", self.use("_mse_comb")
        step = [f"    om_ = {self.shfl(M, 'float32', 'm_')}", f"    ov_ = {self.shfl(A, 'float32', 'm_')}",
                f"    {M}, {A} = {comb}({M}, {A}, om_, ov_)", "    m_ >>= 1"]
        out = []
        packed = row and self.v.packed
        if row and not (packed and self.v.lanes == 1):
            out += [f"m_ = {self.v.lanes // 2 if packed else 16}", "while m_ > 0:"] + step
        if row and not packed:
            out += ["if lane_ == 0:", f"    sm_{a.dst}[warp_] = {A}", f"    smm_{a.dst}[warp_] = {M}",
                    "cuda.syncthreads()"]
            nw = (self.v.block + 31) // 32
            if nw & (nw - 1) == 0:
                out += [f"{A} = sm_{a.dst}[lane_ & (nwarps_ - 1)]", f"{M} = smm_{a.dst}[lane_ & (nwarps_ - 1)]",
                        "m_ = nwarps_ >> 1", "while m_ > 0:"] + step
            else:
                out += [f"{A} = sm_{a.dst}[0]", f"{M} = smm_{a.dst}[0]", "w_ = 1", "while w_ < nwarps_:",
                        f"    {M}, {A} = {comb}({M}, {A}, smm_{a.dst}[w_], sm_{a.dst}[w_])", "    w_ += 1"]
            out.append("cuda.syncthreads()")
        self.dt[a.dst], self.dt[a.peer] = a.dtype, "float32"
        # a row whose maximum is infinite is NaN (NumPy's exp(inf - inf) term, or a row of -inf's)
        return out + [f"{a.peer} = {M}",
                      f"{a.dst} = np.{_vt(a.dtype)}(np.float32(np.nan) if abs({M}) == INF32 else {A})"]

    def _acc_result(self, a: K.Acc, vt: str, arg: bool) -> list[str]:
        """The reduction's value from its combined running state."""
        A, out = f"A{a.dst}", []
        self.dt[a.dst] = a.dtype
        if arg:
            out.append(f"{a.dst} = P{a.dst} if P{a.dst} >= 0 else np.int64(0)")
        elif a.dtype == "bool":
            out.append(f"{a.dst} = {A}" if vt == "bool" else f"{a.dst} = {A} != 0")
        elif a.dtype == "float16":
            out.append(f"{a.dst} = np.float32(np.float16({A}))")
        else:
            out.append(f"{a.dst} = np.{_vt(a.dtype)}({A})")
        return out
