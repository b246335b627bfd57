"""The CUDA emitter's column loops (a mixin of ``codegen.cuda_rows.RowEmitter``): Variant mode
``"col"``, a thread a column walking down its rows, or down its chunk of them (``split``'s stage 1,
``grid_sync``).

A trip of the loop takes :meth:`ColEmitter.col_unroll` rows: every row's loads first, back to back,
into register slots, then each row's statements, accumulator steps, scan steps and stores, in row
order: the order of accumulation is a row at a time as before, so results are bit-identical. Full
trips run unguarded; the last, partial trip guards its loads and its rows by the column's end, so a
short column still has all its loads in flight. Left to the compiler (a ``#pragma unroll`` over a
row at a time, the rendering ``COL_LOADS_FIRST = False`` keeps), the PTX kept each row's load beside
its arithmetic, and a scan's loads between its stores; Numba-CUDA's column loops, which issue a
trip's loads first (``numba_cuda_rows._unrolled``), ran faster on an H200 with the same schedule
(cumsum over axis 0 of 8192 x 8192 f32: 0.389 ms against 0.593; a variance over the middle axis
0.078 against 0.104).

Loads stay with their row where moving them first could change what they read: a gather (its index
reads a value the row computes) and, in a kernel writing an input in place, a load after the row's
first store (the kernel reads such an input only at the element it writes, so another row's store
never touches what a row loads)."""
from __future__ import annotations

from . import kernel_ir as K
from .cuda_ops import _STYPE, load_expr

COL_LOADS_FIRST = True        # False: the column loops as before (#pragma unroll over one row at a time)
COL_UNROLL = 16               # Variant "col": a column's rows a trip, loads in flight (H200, sum over axis 0 of
                              # 4096x65536 f32: 1506 us at 1, 519 at 4, 347 at 8, 296 at 16; pixel norm 244/181/172/172)
CHUNK_UNROLL_GRID_SYNC = 8    # Variant.grid_sync: a column chunk's rows a trip (H200 sweep, stats0 65536x1024: 0.439 ms
                              # at 8, 0.448 at 4); a row chunk's loop is unrolled as much (cuda_rows._loop_open)
COL_CHUNK_UNROLL_GRID_SYNC = 16   # ... but a column chunk's 16 (with gpu_chunks.COL_GRID_SYNC_BLOCKS_PER_SM's 8
                                  # blocks: standardize 0.228 ms, 0.231 at 32, 0.244 at 8 rows with 16 blocks)
CHUNK_UNROLL_SPLIT = 4        # split's stage 1: a column chunk's rows a trip (cuda_rows._loop_open's unroll of 4)


class ColEmitter:
    """Column loops for ``codegen.cuda._Gen`` (which sets ``self.kir`` and ``self.v``)."""

    def col_unroll(self) -> int:
        """Rows a trip of this kernel's column loop."""
        v = self.v
        return COL_CHUNK_UNROLL_GRID_SYNC if v.grid_sync else CHUNK_UNROLL_SPLIT if v.stage == 1 else COL_UNROLL

    def col_hoisted(self, ph: K.Phase) -> list[K.Load]:
        """The loads of ``ph``'s row that a trip issues before computing (the module docstring says
        which stay with their row)."""
        out, stored = [], False
        for s in ph.body:
            stored = stored or isinstance(s, K.Store)
            if isinstance(s, K.Load) and not K.gathers(s.index) and not (stored and self.kir.in_place):
                out.append(s)
        return out

    def col_batches(self, r, ph: K.Phase) -> bool:
        """Whether ``ph``'s column loop issues a trip's loads first (:meth:`col_loop`)."""
        v = self.v
        return COL_LOADS_FIRST and not r.row and v.stage != 2 and not v.peel and bool(self.col_hoisted(ph))

    def col_loop(self, r, pi: int, ph: K.Phase, recips: dict) -> list[str]:
        """A column's pass (``r``: the kernel's ``cuda_rows._Rows``), ``col_unroll()`` rows a trip:
        full trips, then the partial last trip, if any, guarded by the column's end."""
        v, U = self.v, self.col_unroll()
        out = []
        if v.grid_sync:        # (the chunk's bounds are declared with the column, cuda_rows._col_loop)
            lo, hi = "lo_", "hi_"
        elif v.stage == 1:     # this thread's chunk of the column (as cuda_rows._loop_open declares it)
            lo, hi = "lo_", "hi_"
            out.append(f"const IDX chunk_ = ({r.units} + {v.split - 1}) / {v.split}, lo_ = c_ * chunk_, "
                       f"hi_ = lo_ + chunk_ < {r.units} ? lo_ + chunk_ : {r.units};")
        else:
            lo, hi = "(IDX)0", r.units
        slots = {}
        for s in self.col_hoisted(ph):
            slots.setdefault((s.buf, s.index), (s, f"cl{len(slots)}_"))
        full = self._col_trip(r, ph, slots, U, hi, guard=False)
        last = self._col_trip(r, ph, slots, U, hi, guard=True)
        loop = [f"for (; jb_ <= {hi} - {U}; jb_ += {U}) {{      // full trips: {U} rows' loads, then the rows"]
        loop += _indent(full) + ["}", f"if (jb_ < {hi}) {{      // the last rows, fewer than {U}: loads and rows guarded"]
        loop += _indent(last) + ["}"]
        return out + [f"{{ IDX jb_ = {lo};"] + _indent(loop) + ["}"]

    def _col_trip(self, r, ph: K.Phase, slots: dict, U: int, hi: str, guard: bool) -> list[str]:
        """One trip of ``U`` rows from ``jb_``: every row's loads (``slots``: (buf, index) ->
        (load, register slot name)) into their slots, then each row's statements in order; with
        ``guard``, only the rows before ``hi``."""
        head = [f"const IDX j_ = jb_ + (IDX)k_;"]
        self.decompose("j_", r.inner, head)
        # the last trip's rows past the end load the column's last row again (unguarded loads
        # issue back to back, where guarded ones were a branch each)
        at = [f"const IDX j_ = jb_ + (IDX)k_ < {hi} ? jb_ + (IDX)k_ : {hi} - 1;"] if guard else head[:1]
        self.decompose("j_", r.inner, at)
        loads = [f"{_STYPE[s.dtype]} {name}[{U}];" for s, name in slots.values()]
        fill = [f"{name}[k_] = in{s.buf}[{self.offset('in', s.buf, s.index)}];" for s, name in slots.values()]
        loads += [f"#pragma unroll\nfor (int k_ = 0; k_ < {U}; ++k_) {{"] + _indent(at + fill) + ["}"]
        # a compiler barrier: NVVM otherwise sinks each load back beside its row's arithmetic
        loads.append('asm volatile("" ::: "memory");')
        held = {s.dst: load_expr(slots[(s.buf, s.index)][1], "k_", s.dtype) for s in self.col_hoisted(ph)}
        row = [x for x in (self.stmt(s, held) for s in ph.body) if x]
        for a in ph.accs:
            row += self.acc_step(a)
        if guard:
            row = [f"if (j_ < {hi}) {{"] + _indent(row) + ["}"]
        return loads + [f"#pragma unroll\nfor (int k_ = 0; k_ < {U}; ++k_) {{"] + _indent(head + row) + ["}"]


def _indent(lines: list[str]) -> list[str]:
    """``lines`` (each possibly several) as single lines, indented one level."""
    return ["  " + x for x in "\n".join(lines).split("\n")]
