"""Rows whose start is not a whole number of vectors from an aligned address (``Variant.peel``; a
mixin of ``codegen.cuda._Gen``, used by :mod:`kfuse.codegen.cuda_rows`).

A row of ``n`` elements, ``x[r, :]`` of an odd-width matrix or a sliced view (``x[:, 1:]``), starts
``r * n`` elements (plus the view's offset) from its buffer's base, which is rarely 16-byte aligned.
In a peeled row kernel each row is read in three parts: a head of ``h_`` elements up to the first
element the *lead* access (the first vector load of a full row) has 16-byte aligned, computed in
the kernel from that access's pointer (``kf_head``: right for any view, no host offset); a body of
``row_units`` full-width vector units from ``h_``; and the last ``row_len - h_ - row_units * V``
elements. Head and tail (at most ``2 V - 2`` elements) run one element a thread after the body,
each thread's terms accumulated after its units, so the order of a row's reduction is fixed by
the row's length and alignment (deterministic). Any other vector access (the output of a
softmax, a second operand) whose address at ``h_`` is not aligned as well (``kf_aligned``, once a
row: the same for every thread of the block, so no divergence) reads or writes its units lane by
lane (``kf_lanes``, ``kf_stlanes``) instead.

The runtime (``runtime.cuda``) picks ``peel`` where the rows' vector accesses have unit stride
along the row but are not all aligned: a row of one loop dim and no blockwise load."""
from __future__ import annotations

from . import kernel_ir as K
from .cuda_ops import _STYPE
from .cuda_shapes import vector_access

PRELUDE = r"""
// ---- Variant.peel: a row's aligned body (codegen.cuda_peel)
// elements from p to the first (sizeof(T) * N)-byte aligned one, at most n
template <typename T, int N> __device__ __forceinline__ long long kf_head(const T* p, long long n) {
  const long long h = (long long)((0ull - (unsigned long long)p / sizeof(T)) & (unsigned long long)(N - 1));
  return h < n ? h : n;
}
template <typename T, int N> __device__ __forceinline__ bool kf_aligned(const T* p) {
  return (unsigned long long)p % (sizeof(T) * N) == 0;
}
// a vector unit read (written) element by element: an access not aligned as the row's lead one
template <typename T, int N> __device__ __forceinline__ KfVec<T, N> kf_lanes(const T* p, bool ok = true) {
  KfVec<T, N> r;
#pragma unroll
  for (int e = 0; e < N; ++e) r.v[e] = ok ? p[e] : T();
  return r;
}
template <typename T, int N> __device__ __forceinline__ void kf_stlanes(T* p, const KfVec<T, N>& v) {
#pragma unroll
  for (int e = 0; e < N; ++e) p[e] = v.v[e];
}
"""


def _key(s) -> tuple:
    return ("in" if isinstance(s, K.Load) else "out", s.buf, s.index)


class PeelEmitter:
    """Peeled rows for ``codegen.cuda._Gen``: the row's head length and each access's alignment
    (:meth:`peel_head`), the unit's position (:meth:`peel_index`), its vector accesses (:meth:`peeled`,
    :meth:`peeled_store`) and the head and tail elements after a phase's loop (:meth:`peel_rest`)."""

    _peel_flags: dict = {}      # (in/out, buf, index) -> the row's alignment flag (absent: the lead's own)

    def peel_head(self, r) -> list[str]:
        """Once a row: ``h_`` (the lead access's head), ``row_units``, ``rem_`` (head and tail
        elements) and an alignment flag for every other vector access, at the row's element ``h_``."""
        V, last = r.V, r.last
        accesses = {}
        for ph in r.phases:
            for s in ph.body:
                if isinstance(s, (K.Load, K.Store)) and vector_access(s.index, last):
                    accesses.setdefault(_key(s), s)
        # the lead: the first load of a full row (its index uses the row's variables), not a weight
        # every row reads (its head would be the same for every row, the row's own one not)
        loads = [s for s in accesses.values() if isinstance(s, K.Load)]
        rows = [s for s in loads if r.row_vars & set().union(*map(K.expr_vars, s.index))]
        lead = next(iter(rows + loads + list(accesses.values())), None)
        out = ["IDX h_ = 0;"]
        if lead is not None:
            out.append(f"{{ const IDX {last} = 0; (void){last}; h_ = (IDX)kf_head<{self._stype(lead)}, {V}>"
                       f"({self._ptr(lead)}, (long long)row_len); }}")
        out.append(f"const IDX row_units = (row_len - h_) / {V}, rem_ = row_len - row_units * {V}; (void)rem_;")
        self._peel_flags = {}
        checks = []
        for k, s in accesses.items():
            if lead is None or k == _key(lead):
                continue
            flag = self._peel_flags[k] = f"al{len(self._peel_flags)}_"
            checks.append(f"{flag} = kf_aligned<{self._stype(s)}, {V}>({self._ptr(s)});")
        if checks:
            out.append("bool " + ", ".join(self._peel_flags.values()) + ";")
            out.append(f"{{ const IDX {last} = h_; (void){last}; " + " ".join(checks) + " }")
        return out

    def peel_index(self, r) -> list[str]:
        """The position of unit ``j_`` of a peeled row: ``h_`` elements in, ``V`` a unit."""
        return [f"const IDX {r.last} = h_ + j_ * {r.V};"]

    def peeled(self, s, aligned: str, ptr: str, ok: str = "") -> str:
        """A vector read of ``s`` at ``ptr``: ``aligned`` (the vector load) where the row's flag of
        ``s`` holds, else its lanes one by one (``ok``: ``", <predicate>"`` or empty)."""
        flag = self._peel_flags.get(_key(s)) if self.v.peel else None
        if flag is None:
            return aligned
        return f"({flag} ? {aligned} : kf_lanes<{self._stype(s)}, {self.v.vec}>({ptr}{ok}))"

    def peeled_store(self, s, aligned: str, ptr: str, val: str) -> str:
        """A vector store of ``s``: ``aligned`` (a statement) where the row's flag holds, else lane by lane."""
        flag = self._peel_flags.get(_key(s)) if self.v.peel else None
        if flag is None:
            return aligned
        return f"if ({flag}) {aligned} else kf_stlanes<{self._stype(s)}, {self.v.vec}>({ptr}, {val});"

    def peel_rest(self, r, ph: K.Phase, recips: dict) -> list[str]:
        """After a phase's unit loop: the row's head and tail elements, one a thread (of the row's
        lanes; chunk 0's block in a chunked row), each running the phase's body on one element."""
        v = self.v
        start, step = ("lane_", v.lanes) if r.packed else ("tid_", v.block)
        who = "if (c_ == 0) " if v.stage == 1 or v.grid_sync else ""
        lines = [f"const IDX {r.last} = t_ < h_ ? t_ : t_ + row_units * {r.V}; (void){r.last};"]
        for s in ph.body:
            lines.append(self.stmt(s) if isinstance(s, (K.Load, K.Store)) else self.row_stmt(r, s, recips))
        for a in ph.accs:
            lines += self.acc_step(a)
        return ([f"{who}for (IDX t_ = {start}; t_ < rem_; t_ += {step}) {{"]
                + ["  " + x for x in "\n".join(lines).split("\n")] + ["}"])

    def _stype(self, s) -> str:
        return _STYPE[s.dtype if isinstance(s, K.Load) else self.kir.outputs[s.buf].dtype]

    def _ptr(self, s) -> str:
        kind = "in" if isinstance(s, K.Load) else "out"
        return f"{kind}{s.buf} + ({self.offset(kind, s.buf, s.index)})"
