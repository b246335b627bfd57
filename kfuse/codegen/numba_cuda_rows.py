"""The Numba-CUDA emitter's reduce kernels (a mixin of ``codegen.numba_cuda._Gen``): rows (a block
a row) and columns (a thread a column), and the schedules the CUDA C backend chooses for
reductions too short of rows or columns to fill the GPU (``cuda_shapes.Variant``'s ``split``,
``stage`` and ``grid_sync``, rendered here from an :class:`~kfuse.codegen.numba_cuda.NVariant`):

* two stages (``stage`` 1, then 2; one accumulating pass, ``cuda_shapes.split_ok``): stage 1 runs a
  block (row mode) or a thread (col mode) a (row, chunk) and writes the chunk's accumulators to a
  workspace, slot ``(row * split + chunk) * n_acc + k`` of ``SPLIT_SLOT`` bytes; stage 2, a block a
  row, combines the row's chunks (each thread every block-th chunk in order, then the block's fixed
  tree) and finishes the row;
* one grid-synchronised launch (``grid_sync``, several passes): every pass loops over its chunk;
  the chunks' accumulators go to their slots, a grid barrier, chunk 0 of each row combines them in
  chunk order into its own slot, a second barrier, and every thread reads that value. The launch
  is cooperative (every block resident), the workspace's first ``GRID_SYNC_HEAD`` bytes the
  barrier's counter.

Every combine is in a fixed order: the result is the same bit for bit on every run. As CUDA C's
rows and columns: with 32-bit index math (``NVariant.fastdiv``) a row's and a unit's indices are
unravelled by multiply-high (``numba_cuda_variant.fast_div_pairs``) and an index's other divisions
are unsigned 32-bit; with vector units a blockwise weight is read once a unit and not held, and a
float32 division by a row-level value goes through its float64 reciprocal, once a row. Reads the
generator's ``kir``, ``v``, ``use``, ``n``, ``ix``, ``decompose``, ``stmt`` and the accumulator
mixin (``codegen.numba_cuda_accs``)."""
from __future__ import annotations

from . import kernel_ir as K
from .accs import redo_ops
from .numba_cuda_complex import PARTS
from .cuda_cols import CHUNK_UNROLL_GRID_SYNC, COL_CHUNK_UNROLL_GRID_SYNC, COL_UNROLL
from .cuda_rows import ROW_REREAD_UNROLL
from .cuda_shapes import GRID_SYNC_HEAD, SPLIT_SLOT, grid_combine_groups
from .numba_cuda_ops import _const_value, _vt


def redo_free(kir: K.KernelIR) -> bool:
    """Whether no accumulator's tree value may need a sequential redo (``codegen.accs.redo_ops``):
    a chunked schedule has no whole row to redo."""
    return not any(redo_ops(a.kind, a.acc_dtype, "x") for ph in kir.phases for a in ph.accs)


def _first_factor(s: K.Scan) -> bool:
    """A complex cumprod: NumPy's accumulate starts from the first factor (1 * x is not x where x
    has an infinite part), so the running value is replaced by it, not multiplied, at the first step."""
    return s.op == "multiply" and s.dtype in PARTS


class RowEmitter:
    """Reduce kernels for ``codegen.numba_cuda._Gen``."""

    def reduce(self) -> list[str]:
        kir, v = self.kir, self.v
        row = v.mode == "row"
        packed = row and v.packed                       # several short rows a block, lanes threads a row
        chunked = v.stage == 1 or v.grid_sync          # a (row, chunk) a block (row) or thread (col)
        outer, inner = kir.loop_dims(kir.outer), kir.loop_dims(kir.inner)
        kc = v.cache_k if row and not (chunked or v.stage) else 0
        # (a scan's running value is one name across a trip's units: never suffixed)
        # (constants are defined once, at the kernel's top)
        body_defs = {s.dst for ph in kir.phases for s in ph.body
                     if hasattr(s, "dst") and not isinstance(s, (K.Scan, K.Const))}
        self.local = body_defs | {f"i{d}" for d in inner} | {"r_", "j_"}
        L = self.const_lines()
        L.append(f"n_rows_ = {' * '.join(self.ix(kir.domain[d]) for d in outer) or '1'}")
        L.append(f"row_len_ = {' * '.join(self.ix(kir.domain[d]) for d in inner) or '1'}")
        L.append(f"units_ = row_len_ // {v.vec}" if v.vec > 1 else "units_ = row_len_")   # (whole vectors)
        L.append("tid_ = np.int64(cuda.threadIdx.x)")
        # the launch's block is the variant's: a constant (register slots at constant offsets, the
        # warps' combine unrolled), as CUDA C's
        L.append(f"bdim_ = np.int64({v.block})")
        if packed:      # a row's lanes combine by shuffles alone: no shared memory, no barrier
            L += [f"lane_ = tid_ & {v.lanes - 1}", f"rpb_ = {v.block // v.lanes}"]
        elif row:
            for ph in kir.phases:
                for a in ph.accs:
                    st = "uint8" if self.acc_vt(a) == "bool" else self.acc_vt(a)
                    L.append(f"sm_{a.dst} = cuda.shared.array(32, T.{st})")
                    if a.kind in ("argmax", "argmin"):
                        L.append(f"smi_{a.dst} = cuda.shared.array(32, T.int64)")
                    elif a.kind == "maxsumexp":     # (its running maximum's)
                        L.append(f"smm_{a.dst} = cuda.shared.array(32, T.float32)")
            L += ["lane_ = tid_ & 31", "warp_ = tid_ >> 5", "nwarps_ = (bdim_ + 31) >> 5"]
        if v.grid_sync:
            L.append("bar_ = np.uint32(0)")
        if chunked and row:             # the grid is rows x split, exactly
            L += [f"row_ = np.int64(cuda.blockIdx.x) // {v.split}", f"c_ = np.int64(cuda.blockIdx.x) % {v.split}",
                  "rstep_ = n_rows_"]
        elif chunked:                   # neighbouring threads neighbouring columns; a thread past the
            L += ["t_ = np.int64(cuda.blockIdx.x) * bdim_ + tid_",          # last chunk has none
                  "row_ = t_ % n_rows_", "c_ = t_ // n_rows_", "rstep_ = n_rows_"]
        elif packed:    # block / lanes rows at a time (a last group's spare rows redo the last row)
            L += ["b_ = np.int64(cuda.blockIdx.x) * rpb_", "rstep_ = np.int64(cuda.gridDim.x) * rpb_"]
        elif row:
            L += ["row_ = np.int64(cuda.blockIdx.x)", "rstep_ = np.int64(cuda.gridDim.x)"]
        else:
            L += ["row_ = np.int64(cuda.blockIdx.x) * bdim_ + tid_",
                  "rstep_ = np.int64(cuda.gridDim.x) * bdim_"]
        if chunked:
            L += [f"chunk_ = (units_ + {v.split - 1}) // {v.split}", "lo_ = c_ * chunk_",
                  "hi_ = min(units_, lo_ + chunk_)"]
        L.append("while b_ < n_rows_:" if packed else "while row_ < n_rows_:")
        rb: list[str] = []
        if packed:
            rb += [f"row_ = b_ + (tid_ >> {v.lanes.bit_length() - 1})", "live_ = row_ < n_rows_",
                   "row_ = row_ if live_ else n_rows_ - 1"]
        self.decompose("row_", outer, rb)
        if v.peel:              # the row's aligned body (codegen.numba_cuda_peel)
            rb += self.peel_head(inner)
        cache: dict = {}
        filled: set = set()
        if kc:
            last = f"i{inner[-1]}" if inner else ""
            for ph in kir.phases:
                for s in ph.body:
                    # (with vector units the vector loads only, as CUDA C's: a blockwise weight is
                    # read again, once a unit, not held in a slot of every element)
                    if v.vec > 1 and isinstance(s, K.Load) and not self.along(s, last, v.vec):
                        continue
                    if isinstance(s, K.Load) and (s.buf, s.index) not in cache:
                        c = f"c{len(cache)}_"
                        cache[(s.buf, s.index)] = c
                        zero = "False" if s.dtype == "bool" else f"np.{_vt(s.dtype)}(0)"
                        rb += [f"{c}{k}{e} = {zero}" for k in range(kc) for e in self._elems()]
        q_acc = 0
        self.row_level = set()
        for ph in kir.phases:
            for s in ph.pre:
                line = self.stmt(s)
                if line:
                    rb += self._row_level_store(line) if isinstance(s, K.Store) else [line]
                self.row_level.add(getattr(s, "dst", None))
            if not ph.has_loop:
                continue
            rb += self._reciprocals(ph, rb)
            for a in ph.accs:
                rb += self.acc_inits(a)
            for sc in K.scans(ph.body):
                self.globals.append(f"_S{sc.dst} = {_const_value(sc.init, sc.dtype)}")
                rb.append(f"{sc.dst} = _S{sc.dst}")
                rb += [f"_F{sc.dst} = True"] if _first_factor(sc) else []
            if v.stage == 2 and ph.accs:
                rb += self._combine_split(ph)
            elif kc:
                rb += self._slot_loop(ph, inner, kc, cache, filled)
            else:
                rb += self._element_loop(ph, inner, row, chunked)
            if v.peel and v.stage != 2:
                rb += self.peel_rest(ph, inner)
            finals = [self.acc_final(a, row) for a in ph.accs]
            if v.stage == 1:            # the chunk's accumulators to the workspace; stage 2 finishes
                rb += [x for f in finals for x in f[:-1]]
                who = "tid_ == 0" if row else f"c_ < {v.split}"
                rb.append(f"if {who}:")
                for k, a in enumerate(ph.accs):
                    rb += ["    " + x for x in self._put(a, f"((row_ * {v.split} + c_) * {len(ph.accs)} + {k}) * {SPLIT_SLOT}")]
                break
            if v.grid_sync and ph.accs:
                rb += [x for f in finals for x in f[:-1]] + self._grid_combine(ph, q_acc, row)
                finals = [f[-1:] for f in finals]
                q_acc += len(ph.accs)
            for a, f in zip(ph.accs, finals):
                redo = self.redo_row(ph, a, inner) if row and not (chunked or v.stage) else []
                rb += f[:-1] + redo + f[-1:]
                self.row_level |= {a.dst, a.peer}
        rb.append("b_ += rstep_" if packed else "row_ += rstep_")
        L += ["    " + x for x in rb]
        return L

    def _reciprocal_of(self, s) -> str | None:
        """The row-level divisor of a float32 division ``s`` by a value computed once a row (row
        mode), through whose float64 reciprocal the quotient is computed: correctly rounded, as
        CUDA C's ``row_stmt`` (no IEEE division sequence an element: GroupNorm's normalisation);
        else None."""
        if (self.v.mode == "row" and isinstance(s, K.Op) and s.op == "divide" and s.dtype == "float32"
                and s.arg_dtypes == ("float32", "float32") and s.args[1] in self.row_level):
            return s.args[1]
        return None

    def _reciprocals(self, ph: K.Phase, rb: list) -> list[str]:
        """Before a pass's loop: the float64 reciprocal of each row-level divisor its body divides
        by (:meth:`_reciprocal_of`), once a row."""
        out = []
        for s in ph.body:
            b = self._reciprocal_of(s)
            line = f"rd_{b} = np.float64(1.0) / np.float64({b})"
            if b is not None and line not in out and line not in rb:
                out.append(line)
        return out

    def _row_level_store(self, line: str) -> list[str]:
        """A store of a row-level value: by one thread of the row (and of its chunks)."""
        v = self.v
        if v.mode == "row" and v.packed:
            who = "lane_ == 0 and live_" if self.kir.in_place else "lane_ == 0"
        elif v.mode == "row":
            who = "tid_ == 0 and c_ == 0" if v.grid_sync else "tid_ == 0"
        elif v.grid_sync:
            who = "c_ == 0"
        else:
            return [line]
        return [f"if {who}:", "    " + line]

    def _spare_guard(self, line: str) -> list[str]:
        """A row's store: in a packed kernel writing in place, not by a spare group redoing the
        last row (it may read what the row's own group already wrote); elsewhere as it is (a
        spare group writes the values the row's own group writes)."""
        if self.v.mode == "row" and self.v.packed and self.kir.in_place:
            return ["if live_:", "    " + line]
        return [line]

    def _elems(self) -> list[str]:
        """The name suffixes of a unit's elements (none: a unit is one element)."""
        return [f"_{e}" for e in range(self.v.vec)] if self.v.vec > 1 else [""]

    def _element_loop(self, ph: K.Phase, inner: list, row: bool, chunked: bool) -> list[str]:
        """A pass over the row (or this thread's chunk of it), a unit at a time."""
        packed = row and self.v.packed
        start = {(True, True): "lo_ + tid_", (True, False): "lane_" if packed else "tid_", (False, True): "lo_",
                 (False, False): "np.int64(0)"}[row, chunked]
        end = "hi_" if chunked else "units_"
        step = str(self.v.lanes) if packed else "bdim_" if row else "1"
        lp = self._unit(ph, inner, "", "j_")
        lp.append(f"j_ += {step}")
        out = [f"j_ = {start}"]
        U = self._unroll(row, packed, chunked)
        if U > 1:
            out += [f"while j_ + {U - 1} * {step} < {end}:"] + ["    " + x for x in self._unrolled(ph, inner, U, step)]
        return out + [f"while j_ < {end}:"] + ["    " + x for x in lp]

    def _unroll(self, row: bool, packed: bool, chunked: bool) -> int:
        """Units a trip of a pass's loop, their loads issued together (the CUDA C loops'
        ``#pragma unroll``: ``cuda_cols.COL_UNROLL`` down a column, 4, 8 or 16 a chunk, a re-read
        row's 8 (4 of vectors); a packed row's lanes none): a column a thread with one load in
        flight ran a column scan 5x slower than CUDA C's."""
        if packed:
            return 1
        if chunked:     # (a column chunk 16 rows a trip, grid-synchronised: CUDA C's)
            return (CHUNK_UNROLL_GRID_SYNC if row else COL_CHUNK_UNROLL_GRID_SYNC) if self.v.grid_sync else 4
        if not row:
            return COL_UNROLL
        return max(1, ROW_REREAD_UNROLL // 2) if self.v.vec > 1 else ROW_REREAD_UNROLL

    def _unrolled(self, ph: K.Phase, inner: list, U: int, step: str) -> list[str]:
        """``U`` units at ``j_``, ``j_ + step``, ...: every unit's indices and loads (at positions
        of the loop's indices alone) first, then each unit's statements and accumulator steps in
        order (a scan's running value and every accumulator step in the row's order). In a kernel
        writing in place each unit in turn, its loads after the stores before it."""
        heads, rests = [], []
        for k in range(U):
            j = "j_" if k == 0 else f"(j_ + {k} * {step})"
            head: list = []
            rest = self._unit(ph, inner, f"_u{k}", j, hoist=head)
            if self.kir.in_place:
                rests += head + rest
            else:
                heads += head
                rests += rest
        return heads + rests + [f"j_ += {U} * {step}"]

    def _slot_loop(self, ph: K.Phase, inner: list, kc: int, cache: dict, filled: set) -> list[str]:
        """A pass over a row held in ``kc`` register slots a thread (loaded by the first pass);
        with ``NVariant.reload`` (CUDA C's ``Variant.reload``) nothing is held from one pass to
        the next: a reduction pass loads its slots up front, other passes load as they go."""
        if self.v.reload:
            filled.clear()
        out = self.fill_slots(ph, inner, kc, cache, filled)
        newly: set = set()
        for k in range(kc):
            j = f"j_{k}"
            out += [f"{j} = {self._slot_unit(k)}", "if True:" if self.v.exact else f"if {j} < units_:"]
            out += ["    " + x for x in self._unit(ph, inner, f"_{k}", j, (cache, k, filled, newly))]
        filled |= newly
        return out

    def _slot_unit(self, k: int) -> str:
        """The row unit register slot ``k`` holds: the block's threads a row, else (packed) the row's lanes."""
        return f"lane_ + {k * self.v.lanes}" if self.v.packed else f"tid_ + {k} * bdim_"

    def _unit(self, ph: K.Phase, inner: list, lab: str, j: str, slots=None, hoist=None) -> list[str]:
        """Unit ``j`` of the row (``NVariant.vec`` elements, its accesses along the row one vector)
        through ``ph``'s body and accumulator steps; ``slots`` ``(cache, k, filled, newly)``: its
        loads kept in register slot ``k``; ``hoist`` (a list): its indices and its loads at a
        position of the loop's indices alone go there, the rest is returned."""
        vec = self.v.vec
        names = [lab + e for e in self._elems()]
        out: list[str] = []
        first = out if hoist is None else hoist
        self.sfx = names[0]
        if self.v.peel:
            first.append(self.peel_index(j, inner))
        else:
            self.decompose(j, inner, first, vec)
        last = f"i{inner[-1]}" if inner else ""
        first += self.element_indices(inner, names)

        for s in ph.body:
            if hoist is not None and isinstance(s, K.Load) and slots is None and not K.gathers(s.index):
                hoist += self.unit_load(s, names, last)
                continue
            if isinstance(s, K.Load) and slots is not None and (s.buf, s.index) in slots[0]:    # (held: loaded once)
                cache, k, filled, newly = slots
                key = (s.buf, s.index)
                slot = f"{cache[key]}{k}"
                self.dt[s.dst] = s.dtype
                pairs = list(zip(self._elems(), names))
                if key in filled:
                    out += [f"{s.dst}{x} = {slot}{e}" for e, x in pairs]
                else:
                    newly.add(key)
                    out += self.unit_load(s, names, last) + [f"{slot}{e} = {s.dst}{x}" for e, x in pairs]
            elif isinstance(s, K.Load):
                out += self.unit_load(s, names, last)
            elif isinstance(s, K.Store) and self.along(s, last, vec):
                out += self._spare_guard(self._vector_store(s, names))
            else:
                rd = self._reciprocal_of(s)
                for x in names:
                    self.sfx = x
                    line = (f"{self.n(s.dst)} = np.float32(np.float64({self.n(s.args[0])}) * rd_{rd})" if rd
                            else self.stmt(s))
                    if line:
                        out += self._spare_guard(line) if isinstance(s, K.Store) else [line]
        for x in names:
            self.sfx = x
            for a in ph.accs:
                out += self.acc_step(a)
        self.sfx = ""
        return out

    def fill_slots(self, ph, inner, kc: int, cache: dict, filled: set) -> list[str]:
        """In a one-pass row reduction (one phase with accumulators: sums, norms, means of rows),
        a phase reading one buffer: every register slot loaded back to back before any
        arithmetic, a slot past the row's end reading the row's first element instead (its value
        is never used), so no load sits behind a bounds branch the compiler does not hoist it
        over. Adds what it loads to ``filled``. Not in multi-pass kernels: there the hoisted slots
        cost registers (layernorm: 64 -> 84 a thread, one 512-thread block an SM instead of two:
        P3 0.316 -> 0.453 ms on an H200); but with ``reload`` in every reduction pass, all its row
        loads (CUDA C's ``reload_loads``: nothing is held across passes there)."""
        reload = self.v.reload
        if (not ph.accs) if reload else sum(1 for p in self.kir.phases if p.accs) != 1:
            return []
        fresh = {}
        for s in ph.body:
            if (isinstance(s, K.Load) and (s.buf, s.index) in cache and (s.buf, s.index) not in filled
                    and not (reload and K.gathers(s.index))):
                fresh.setdefault((s.buf, s.index), s)
        if not fresh or (not reload and (len(fresh) != 1 or any(K.gathers(s.index) for s in fresh.values()))):
            return []
        lines = []
        vec = self.v.vec
        last = f"i{inner[-1]}" if inner else ""
        for k in range(kc):
            names = [f"_{k}{e}" for e in self._elems()]
            self.sfx = names[0]
            j = f"j_{k}"
            lines += [f"{j} = {self._slot_unit(k)}"] + ([] if self.v.exact else [f"{j} = {j} if {j} < units_ else 0 * {j}"])
            if self.v.peel:
                lines.append(self.peel_index(j, inner))
            else:
                self.decompose(j, inner, lines, vec)
            lines += self.element_indices(inner, names)
            for key, s in fresh.items():
                lines += self.unit_load(s, names, last)
                lines += [f"{cache[key]}{k}{e} = {s.dst}{x}" for e, x in zip(self._elems(), names)]
        self.sfx = ""
        filled |= set(fresh)
        return ["if units_ > 0:" if self.v.peel else "if row_len_ > 0:"] + ["    " + x for x in lines]

    # -- the workspace's slots
    def _slot_type(self, a: K.Acc) -> str:
        vt = self.acc_vt(a)
        return "uint8" if vt == "bool" else vt

    def _put(self, a: K.Acc, byte: str) -> list[str]:
        """Accumulator ``a``'s running state to the workspace slot at ``byte`` (an argmax's
        position in the slot's last 8 bytes)."""
        A = f"A{a.dst}"
        val = f"np.uint8(1 if {A} else 0)" if self.acc_vt(a) == "bool" else A
        out = [f"at(ws_, {byte}, T.{self._slot_type(a)})[0] = {val}"]
        if a.kind in ("argmax", "argmin"):
            out.append(f"at(ws_, {byte} + 8, T.int64)[0] = P{a.dst}")
        return out

    def _get(self, a: K.Acc, byte: str, into: str) -> list[str]:
        """The slot at ``byte`` combined into the running state ``into`` (``A``/``P`` names), or
        read as it (``into`` None)."""
        raw = f"at(ws_, {byte}, T.{self._slot_type(a)})[0]"
        val = f"({raw} != 0)" if self.acc_vt(a) == "bool" else raw
        A = f"A{a.dst}"
        if a.kind in ("argmax", "argmin"):
            pos = f"at(ws_, {byte} + 8, T.int64)[0]"
            if into is None:
                return [f"{A}, P{a.dst} = {val}, {pos}"]
            return [f"{A}, P{a.dst} = {self.arg_helper(a)}({A}, P{a.dst}, {val}, {pos})"]
        return [f"{A} = {val}" if into is None else f"{A} = {self.combine(a, A, val)}"]

    def _combine_split(self, ph: K.Phase) -> list[str]:
        """Stage 2 in place of the row's loop: each thread combines every block-th chunk's
        accumulators in order (the block's tree follows in ``acc_final``)."""
        v, n = self.v, len(ph.accs)
        out = ["s_ = tid_", f"while s_ < {v.split}:"]
        for k, a in enumerate(ph.accs):
            out += ["    " + x for x in self._get(a, f"((row_ * {v.split} + s_) * {n} + {k}) * {SPLIT_SLOT}", "A")]
        return out + ["    s_ += bdim_"]

    def _grid_barrier(self) -> list[str]:
        """Every block of the grid arrives before any goes on (the k-th barrier waits for k x
        gridDim.x arrivals on the counter the launch zeroed)."""
        return ["bar_ += np.uint32(cuda.gridDim.x)", "cuda.syncthreads()", "if tid_ == 0:",
                "    cuda.threadfence()", "    grid_arrive(at(ws_, 0, T.uint32))",
                "    while grid_seen(at(ws_, 0, T.uint32)) < bar_:", "        pass",
                "    cuda.threadfence()", "cuda.syncthreads()"]

    def _grid_combine(self, ph: K.Phase, first: int, row: bool) -> list[str]:
        """Variant.grid_sync after a pass's chunk loop (row mode: and the block's combine): the
        chunk's accumulators to their slots (accumulator, chunk, row: a warp's writes coalesce), a
        barrier, chunk 0 of each row combining every chunk in chunk order into its own slot, a
        barrier, and every thread reading that value. Past ``GRID_COMBINE_DIRECT`` chunks in two
        levels, as CUDA C's (``cuda_shapes.grid_combine_groups``): groups of consecutive chunks
        combined side by side into a second region (after every chunk slot of the kernel), a
        barrier, then the groups in order (the same order of combination); one thread reading a
        column's 1024 chunks one after another took most of a BatchNorm's time."""
        v = self.v

        def slot(q: int, ch: str) -> str:
            return f"{GRID_SYNC_HEAD} + (({q} * {v.split} + {ch}) * n_rows_ + row_) * {SPLIT_SLOT}"
        who = "tid_ == 0" if row else f"c_ < {v.split}"
        out = [f"if {who}:"]
        for k, a in enumerate(ph.accs):
            out += ["    " + x for x in self._put(a, slot(first + k, "c_"))]
        out += self._grid_barrier()
        src, n = slot, str(v.split)
        groups = grid_combine_groups(v.split)
        me = "tid_ == 0 and " if row else ""
        if groups > 1:
            per, total = -(-v.split // groups), sum(len(p.accs) for p in self.kir.phases)

            def level(q: int, ch: str) -> str:
                return f"{GRID_SYNC_HEAD} + (({total * v.split} + {q} * {groups} + {ch}) * n_rows_ + row_) * {SPLIT_SLOT}"
            out += self._combine_chunks(ph, first, f"{me}c_ < {groups}", slot, f"c_ * {per}",
                                        f"min({v.split}, (c_ + 1) * {per})", level, "c_")
            out += self._grid_barrier()
            src, n = level, str(groups)
        out += self._combine_chunks(ph, first, f"{me}c_ == 0", src, "np.int64(0)", n, slot, "0")
        out += self._grid_barrier()
        for k, a in enumerate(ph.accs):
            out += self._get(a, slot(first + k, "0"), None)
        return out

    def _combine_chunks(self, ph: K.Phase, first: int, cond: str, src, lo: str, hi: str, dst, at: str) -> list[str]:
        """Where ``cond``: each accumulator of ``ph`` combined over the ``src(q, chunk)`` slots of
        chunks ``lo`` to ``hi`` (excluded), in order, written to the ``dst(q, at)`` slot."""
        out = [f"if {cond}:", f"    s_ = {lo}", f"    e_ = {hi}"]
        for a in ph.accs:       # (from the initial value, as CUDA C's: a group may be empty)
            out += ["    " + x for x in self.acc_inits(a)]
        out.append("    while s_ < e_:")
        for k, a in enumerate(ph.accs):
            out += ["        " + x for x in self._get(a, src(first + k, "s_"), "A")]
        out.append("        s_ += 1")
        for k, a in enumerate(ph.accs):
            out += ["    " + x for x in self._put(a, dst(first + k, at))]
        return out
