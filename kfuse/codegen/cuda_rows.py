"""The CUDA emitter's reduce kernels (a mixin of ``codegen.cuda._Gen``): rows (a block, a packed
group of lanes, or a two-stage or grid-synchronised chunk a row) and columns (a thread a column),
each phase a loop over the row's vector units whose accumulators the block (warp) combines. Rows
held in registers, re-loaded through L1 (``Variant.reload``) or re-read from L2 each pass; a
row whose start is not 16-byte aligned (``Variant.peel``) has its aligned body read in vectors and
its head and tail element by element (:mod:`kfuse.codegen.cuda_peel`). See the module docstring of
:mod:`kfuse.codegen.cuda` for the schedules."""
from __future__ import annotations

import dataclasses

from . import kernel_ir as K
from .cuda_cols import CHUNK_UNROLL_GRID_SYNC, COL_UNROLL, ColEmitter
from .cuda_ops import _STYPE, ctype, index_c, load_expr
from .cuda_shapes import GRID_SYNC_HEAD, SPLIT_SLOT, grid_combine_groups, recomputed_values, vector_access, wide_accs

ROW_STREAM_BATCH = 4          # a re-read row's vector units a thread loads before computing on them (_batched_loop)
ROW_REREAD_UNROLL = 8          # a re-read row's loop unrolled, loads in flight (half with vector units; H200, us at
                              # 1/8: x / norm(x) of 512 x 100003 f32 258/224, softmax 256 x 262144 255/241)


@dataclasses.dataclass
class _Rows:
    """What the phases of one reduce kernel share while it is emitted."""
    row: bool                   # row mode (else a thread a column)
    packed: bool                # several short rows a block (Variant.packed)
    outer: list                 # the loop dims of a row's index, of a row's elements
    inner: list
    V: int                      # elements a vector unit
    last: str | None            # the innermost row loop variable (a vector runs along it)
    units: str                  # the C name of a row's unit count
    kc: int                     # register slots a thread (Variant.cache_k; 0: re-read)
    reload: bool                # Variant.reload with vector units
    phases: list
    cache: dict = dataclasses.field(default_factory=dict)       # (buf, index) -> its register slots
    last_read: dict = dataclasses.field(default_factory=dict)   # (buf, index) -> the last phase loading it
    row_vars: set = dataclasses.field(default_factory=set)      # the outer loop variables
    row_level: set = dataclasses.field(default_factory=set)     # values computed once a row
    declared: set = dataclasses.field(default_factory=set)      # row-level reciprocals declared (rd_<divisor>)
    filled: set = dataclasses.field(default_factory=set)        # register slots already loaded
    values: dict = dataclasses.field(default_factory=dict)      # value key -> the register slots of a costly op
    vfilled: set = dataclasses.field(default_factory=set)       # value slots already computed
    q_acc: int = 0              # grid_sync: the accumulators of earlier passes (their workspace slots)
    chunked: bool = False       # the chunk bounds are declared


class RowEmitter(ColEmitter):
    """Reduce kernels for ``codegen.cuda._Gen`` (which sets ``self.kir`` and ``self.v``)."""

    def reduce(self) -> str:
        kir, v = self.kir, self.v
        body = self.setup()
        n_outer = " * ".join(index_c(kir.domain[d]) for d in kir.loop_dims(kir.outer)) or "(IDX)1"
        n_inner = " * ".join(index_c(kir.domain[d]) for d in kir.loop_dims(kir.inner)) or "(IDX)1"
        body.append(f"const IDX n_rows = {n_outer};")
        body.append(f"const IDX row_len = {n_inner}; (void)row_len;")
        self._acc_q = 0
        body += self._row_loop() if v.mode == "row" else self._col_loop()
        r = self._rows_state()
        rb = []
        self.zero_dims([d for d in kir.outer if d not in r.outer], rb)
        self.zero_dims([d for d in kir.inner if d not in r.inner], rb)
        self.decompose("row_", r.outer, rb)
        if r.V > 1:
            rb += self.peel_head(r) if v.peel else [f"const IDX row_units = row_len / {r.V};"]
        rb += self._cache_decls(r)
        for pi, ph in enumerate(r.phases):
            if self._phase(r, pi, ph, rb):
                break
        body += ["  " + x for x in "\n".join(rb).split("\n")]
        body.append("}")
        return self.wrap(body)

    def _rows_state(self) -> _Rows:
        kir, v = self.kir, self.v
        row = v.mode == "row"
        inner = kir.loop_dims(kir.inner)
        V = v.vec if row else 1
        kc = v.cache_k if row else 0
        reload = bool(kc and v.reload and V > 1)
        phases = [self.acc32_phase(ph) for ph in kir.phases] if reload else list(kir.phases)
        return _Rows(row, row and v.packed, kir.loop_dims(kir.outer), inner, V, f"i{inner[-1]}" if inner else None,
                     "row_units" if V > 1 else "row_len", kc, reload, phases, row_vars={f"i{d}" for d in kir.outer})

    def _row_loop(self) -> list[str]:
        """Row mode: the shared memory and thread names, and the loop over this block's rows, opened."""
        kir, v = self.kir, self.v
        packed = v.packed
        # one 64-double slot (32 warps x up to 16 bytes) per reduction, two per reduction when
        # barriers == 1: slots alternate with the row's parity, so the barrier after the
        # warps' reads can go (a slot is rewritten two rows later, after every warp has
        # passed the next row's barrier, hence after it finished reading)
        n_acc = sum(len(ph.accs) for ph in kir.phases)
        slots = 2 * n_acc if v.barriers == 1 else n_acc if v.exact else 1
        self._slot = 128 if wide_accs(kir) else 64    # doubles a slot: 32 warps x the widest accumulator
        body = [f"__shared__ double red_smem_[{self._slot * max(1, slots)}];", "int par_ = 1; (void)par_;"]
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
        return body

    def _col_loop(self) -> list[str]:
        """Column mode: the loop over this thread's columns (or its (column, chunk)), opened."""
        v = self.v
        if v.stage == 1 or v.grid_sync:   # a thread a (column, chunk), neighbouring threads neighbouring columns
            # grid_sync: a thread past the last chunk has an empty chunk but meets every barrier
            return ["{ const IDX g_ = (IDX)blockIdx.x * blockDim.x + threadIdx.x, row_ = g_ % n_rows, "
                    "c_ = g_ / n_rows;",
                    f"  if (c_ >= {v.split}) return;" if v.stage == 1 else
                    f"  unsigned bar_ = 0; const IDX chunk_ = (row_len + {v.split - 1}) / {v.split}, lo_ = c_ * chunk_, "
                    "hi_ = lo_ + chunk_ < row_len ? lo_ + chunk_ : row_len;"]
        return ["for (IDX row_ = (IDX)blockIdx.x * blockDim.x + threadIdx.x; row_ < n_rows; "
                "row_ += (IDX)gridDim.x * blockDim.x) {"]

    def _cache_decls(self, r: _Rows) -> list[str]:
        """Held rows: the register slots of each row load (vector loads only, with vector units),
        and the last phase reading each."""
        out = []
        if not r.kc:
            return out
        for pi, ph in enumerate(r.phases):
            for s in ph.body:
                if isinstance(s, K.Load):
                    r.last_read[(s.buf, s.index)] = pi
                if isinstance(s, K.Load) and (s.buf, s.index) not in r.cache:
                    if r.V > 1 and not vector_access(s.index, r.last):
                        continue
                    name = f"c{len(r.cache)}_"
                    r.cache[(s.buf, s.index)] = name
                    st = _STYPE[s.dtype]
                    out.append(f"KfVec<{st}, {r.V}> {name}[{r.kc}];" if r.V > 1 else f"{ctype(s.dtype)} {name}[{r.kc}];")
        # a costly op that several passes compute alike: computed by the first, held for the others
        # (a softcapped softmax's tanh, once instead of three times)
        repeated = set(recomputed_values(self.kir))
        for ph in r.phases:
            keys = K.value_keys(ph.body)
            for s in ph.body:
                k = keys.get(getattr(s, "dst", None))
                if isinstance(s, K.Op) and k in repeated and k not in r.values:
                    name = r.values[k] = f"cv{len(r.values)}_"
                    ct = ctype(s.dtype)
                    out.append(f"KfVec<{ct}, {r.V}> {name}[{r.kc}];" if r.V > 1 else f"{ct} {name}[{r.kc}];")
        return out

    def _held_value(self, r: _Rows, s, keys: dict, newly: set, plain) -> list[str]:
        """Statement ``s`` of a held row's unit (``plain()``: its own line, rendered only where it
        runs): read from its value slot where an earlier pass computed it, else computed (and its
        slot filled, ``newly``)."""
        slot = r.values.get(keys.get(getattr(s, "dst", None))) if isinstance(s, K.Op) else None
        if slot is None:
            return [plain()]
        ref = f"{slot}[k_].v[e_]" if r.V > 1 else f"{slot}[k_]"
        key = keys[s.dst]
        if key in r.vfilled:
            self.dt[s.dst] = s.dtype
            return [self.decl(s.dtype, s.dst, ref)]
        newly.add(key)
        return [plain(), f"{ref} = {s.dst};"]

    def _phase(self, r: _Rows, pi: int, ph: K.Phase, rb: list) -> bool:
        """Phase ``pi``'s lines onto ``rb``: its row-level statements, its loop over the row and its
        accumulators' combine; True where the kernel stops after it (a two-stage reduction's stage 1)."""
        v = self.v
        self._pre(r, ph, rb)
        if not ph.has_loop:
            return False
        for a in ph.accs:
            rb += self.acc_init(a)
        rb += self.scan_inits(ph)
        if v.stage == 2:
            rb += self._stage2(r, ph)
            return False
        if r.reload:   # a reduction pass loads its row slots up front; other passes load as they go
            rb += self.reload_loads(ph, pi, r) if ph.accs else []
            r.filled = {(s.buf, s.index) for s in ph.body
                        if isinstance(s, K.Load) and (s.buf, s.index) in r.cache} if ph.accs else set()
        loop_at = len(rb)
        recips = {}   # row-level divisor -> its float64 reciprocal's name
        # (a column's loop: a trip's loads first, cuda_cols)
        loop = self._batched_loop if self._batches(r) else self.col_loop if self.col_batches(r, ph) else self._unit_loop
        rb += loop(r, pi, ph, recips)
        rest = self.peel_rest(r, ph, recips) if v.peel else []
        # once a row: two phases dividing by one row-level value share it (cuda seed 75 #2934)
        rb[loop_at:loop_at] = [f"const double {rd} = 1.0 / (double){b};" for b, rd in recips.items()
                               if rd not in r.declared]
        r.declared |= set(recips.values())
        rb += rest
        return self._finish_phase(r, ph, rb)

    def _unit_loop(self, r: _Rows, pi: int, ph: K.Phase, recips: dict) -> list[str]:
        """A pass's loop over this thread's units (register slots, chunks, or a re-read row's
        grid-stride loop), each unit's statements and accumulator steps."""
        v, head = self.v, []
        loop = self._loop_open(r, head)
        dec = []
        self.decompose("j_", r.inner, dec, r.V)
        loop += self.peel_index(r) if v.peel else dec
        newly, vnewly = set(), set()
        keys = K.value_keys(ph.body) if r.values else {}
        if r.V == 1:
            for s in ph.body:
                if r.kc and isinstance(s, K.Load):
                    loop += self.cached_load(s, f"{r.cache[(s.buf, s.index)]}[k_]", r.filled, newly)
                else:
                    loop += self._held_value(r, s, keys, vnewly, lambda s=s: self.stmt(s))
            for a in ph.accs:
                loop += self.acc_step(a)
        else:
            loop += self._vector_unit(r, pi, ph, recips, newly, keys, vnewly)
        r.filled |= newly
        r.vfilled |= vnewly
        if r.kc:
            loop.append("}")
        return head + ["  " + x for x in "\n".join(loop).split("\n")] + ["}"]

    def _pre(self, r: _Rows, ph: K.Phase, rb: list) -> None:
        """A phase's statements before its loop (once a row; a store by one thread)."""
        v = self.v
        for s in ph.pre:
            if isinstance(s, K.Store) and (r.row or v.grid_sync):
                who = ("tid_ == 0 && c_ == 0" if r.row and v.grid_sync else "lane_ == 0" if r.packed
                       else "tid_ == 0" if r.row else "c_ == 0")
                rb.append(f"if ({who}) " + self.stmt(s))
            else:
                rb.append(self.stmt(s))
                r.row_level.add(getattr(s, "dst", None))

    def _stage2(self, r: _Rows, ph: K.Phase) -> list[str]:
        """A two-stage reduction's second kernel: the row's chunks instead of its loop, a thread
        every block-th, in order, then the block's fixed combine tree (deterministic)."""
        v = self.v
        rb = [f"for (int s_ = tid_; s_ < {v.split}; s_ += {v.block}) {{"]
        rb += [f"  A{a.dst} = {self.combine(a, f'A{a.dst}', self.partial(ph, k, 's_', const=True))};"
               for k, a in enumerate(ph.accs)]
        rb += ["}"]
        for a in ph.accs:
            f = self.acc_final(a, r.row)
            rb += f[:-1] + self.redo_row(ph, a, r.inner) + f[-1:]
            r.row_level.add(a.dst)
        return rb

    def _batches(self, r: _Rows) -> bool:
        """Whether a phase's loop reads its row in batches (:meth:`_batched_loop`): a row re-read
        from memory a pass (no register slots), a block a row, in vector units."""
        v = self.v
        return (ROW_STREAM_BATCH > 1 and r.row and not r.kc and not r.packed and r.V > 1
                and not (v.stage or v.grid_sync))

    def _batched_loop(self, r: _Rows, pi: int, ph: K.Phase, recips: dict) -> list[str]:
        """A re-read row's pass, ``ROW_STREAM_BATCH`` units a thread a trip: the trip's vector loads
        of the row all issued first (predicated, back to back), into register slots the compute
        loop then reads. A loop leaving the batching to the compiler kept one load in flight where
        a step had a branch (the online softmax's rescale): 38% of the copy bandwidth on 1024 rows
        of 50257 float32."""
        v, V, U = self.v, r.V, ROW_STREAM_BATCH
        slots = {}
        for s in ph.body:
            if isinstance(s, K.Load) and vector_access(s.index, r.last) and (s.buf, s.index) not in slots:
                slots[(s.buf, s.index)] = (s, f"b{len(slots)}_")
        dec = []
        self.decompose("j_", r.inner, dec, V)
        index = self.peel_index(r) if v.peel else dec
        head = [f"const IDX j_ = jb_ + (IDX)(k_ * {v.block});"] + index
        loads = [f"KfVec<{_STYPE[s.dtype]}, {V}> {name}[{U}];" for s, name in slots.values()]
        if slots:
            fill = [f"if (j_ < {r.units}) {name}[k_] = {self.vload(s, V, self.offset('in', s.buf, s.index), r.outer + r.inner)};"
                    for s, name in slots.values()]
            loads += [f"#pragma unroll\nfor (int k_ = 0; k_ < {U}; ++k_) {{"] + ["  " + x for x in head + fill] + ["}"]
        saved = r.cache, r.filled
        r.cache, r.filled = {k: name for k, (_, name) in slots.items()}, set(slots)
        try:
            unit = self._vector_unit(r, pi, ph, recips, set(), {}, set())
        finally:
            r.cache, r.filled = saved
        body = loads + [f"#pragma unroll\nfor (int k_ = 0; k_ < {U}; ++k_) {{"]
        body += ["  " + x for x in head + [f"if (j_ < {r.units}) {{"] + ["  " + y for y in "\n".join(unit).split("\n")] + ["}"]]
        body.append("}")
        return ([f"for (IDX jb_ = tid_; jb_ < {r.units}; jb_ += {U * v.block}) {{"]
                + ["  " + x for x in "\n".join(body).split("\n")] + ["}"])

    def _loop_open(self, r: _Rows, rb: list) -> list[str]:
        """The phase's loop over this thread's units, opened on ``rb``; the first lines of its body."""
        v, units = self.v, r.units
        loop = []
        if r.kc:
            rb.append(f"#pragma unroll\nfor (int k_ = 0; k_ < {r.kc}; ++k_) {{")
            step, first = (v.lanes, "lane_") if r.packed else (v.block, "tid_")   # packed: the row's lanes
            loop.append(f"const IDX j_ = (IDX){first} + (IDX)(k_ * {step});")
            loop.append("{" if v.exact else f"if (j_ < {units}) {{")
        elif v.stage == 1 or v.grid_sync:     # this block's (row) or thread's (col) chunk of the row
            if v.stage == 1 or (r.row and not r.chunked):      # (col grid_sync: declared with the column)
                r.chunked = True
                rb.append(f"const IDX chunk_ = ({units} + {v.split - 1}) / {v.split}, lo_ = c_ * chunk_, "
                          f"hi_ = lo_ + chunk_ < {units} ? lo_ + chunk_ : {units};")
            step = f"lo_ + tid_; j_ < hi_; j_ += {v.block}" if r.row else "lo_; j_ < hi_; ++j_"
            unroll = CHUNK_UNROLL_GRID_SYNC if v.grid_sync else 4
            rb.append(f"#pragma unroll {unroll}\nfor (IDX j_ = {step}) {{")      # several loads in flight
        elif r.packed:
            rb.append(f"for (IDX j_ = lane_; j_ < {units}; j_ += {v.lanes}) {{")
        elif r.row:       # a row re-read from L2: several loads in flight a thread
            rb.append(f"#pragma unroll {ROW_REREAD_UNROLL if r.V == 1 else max(1, ROW_REREAD_UNROLL // 2)}\n"
                      f"for (IDX j_ = tid_; j_ < {units}; j_ += {v.block}) {{")
        else:
            rb.append(f"#pragma unroll {COL_UNROLL}\nfor (IDX j_ = 0; j_ < row_len; ++j_) {{")
        return loop

    def _vector_unit(self, r: _Rows, pi: int, ph: K.Phase, recips: dict, newly: set, keys: dict,
                     vnewly: set) -> list[str]:
        """One vector unit of the phase's loop: its loads (register slots, hinted re-loads, vector
        or once-a-unit loads), each lane's statements and accumulator steps, its vector stores."""
        V, last = r.V, r.last
        loop, lanes, loads, stores = [], [], {}, []
        for s in ph.body:
            if isinstance(s, K.Load):
                loop += self._unit_load(r, pi, s, loads, newly)
                lanes.append(self.stmt(s, loads))
            elif isinstance(s, K.Store):
                b = self.kir.outputs[s.buf]
                st = _STYPE[b.dtype]
                loop.append(f"KfVec<{st}, {V}> o_{len(stores)};")
                lanes.append(f"o_{len(stores)}.v[e_] = {self.stored(s.src, self.dt.get(s.src, b.dtype), b.dtype)};")
                stores.append((s, st))
            else:
                lanes += self._held_value(r, s, keys, vnewly, lambda s=s: self.row_stmt(r, s, recips))
        for a in ph.accs:
            lanes += self.acc_step(a)
        loop.append(f"const IDX ib_ = {last};")
        loop.append(f"#pragma unroll\nfor (int e_ = 0; e_ < {V}; ++e_) {{")
        loop.append(f"  const IDX {last} = ib_ + e_; (void){last};")
        loop += ["  " + x for x in lanes]
        loop.append("}")
        for k, (s, st) in enumerate(stores):
            loop.append(self.vstore(s, st, V, f"o_{k}"))
        return loop

    def _unit_load(self, r: _Rows, pi: int, s: K.Load, loads: dict, newly: set) -> list[str]:
        """The lines loading ``s`` for a vector unit; ``loads`` gets each lane's expression of it."""
        V = r.V
        st = _STYPE[s.dtype]
        off = self.offset("in", s.buf, s.index)
        key = (s.buf, s.index)
        if key in r.cache and r.reload and key not in r.filled:
            loads[s.dst] = load_expr(f"w_{s.dst}.v", "e_", s.dtype)
            fn = self.hinted(pi, key, r.last_read, r.row_vars)
            ptr = f"in{s.buf} + ({off})"
            return [f"const KfVec<{st}, {V}> w_{s.dst} = {self.peeled(s, f'{fn}<{st}, {V}>({ptr})', ptr)};"]
        if key in r.cache:
            c = r.cache[key]
            loads[s.dst] = load_expr(f"{c}[k_].v", "e_", s.dtype)
            if key not in r.filled and key not in newly:
                newly.add(key)
                return [f"{c}[k_] = {self.vload(s, V, off, r.outer + r.inner)};"]
            return []
        if vector_access(s.index, r.last):
            loads[s.dst] = load_expr(f"w_{s.dst}.v", "e_", s.dtype)
            ptr = f"in{s.buf} + ({off})"
            return [f"const KfVec<{st}, {V}> w_{s.dst} = "
                    f"{self.peeled(s, f'*reinterpret_cast<const KfVec<{st}, {V}>*>({ptr})', ptr)};"]
        loads[s.dst] = load_expr(f"(&w_{s.dst})", "0", s.dtype)
        return [f"const {st} w_{s.dst} = in{s.buf}[{off}];"]

    def row_stmt(self, r: _Rows, s, recips: dict) -> str:
        """A lane's statement: a float32 division by a row-level value through the row's float64
        reciprocal (``recips`` gets its name), any other as it is."""
        if (isinstance(s, K.Op) and s.op == "divide" and s.dtype == "float32"
                and s.arg_dtypes == ("float32", "float32") and s.args[1] in r.row_level):
            rd = recips.setdefault(s.args[1], f"rd_{s.args[1]}")
            self.dt[s.dst] = s.dtype
            return f"const float {s.dst} = (float)((double){s.args[0]} * {rd});"
        return self.stmt(s)

    def _finish_phase(self, r: _Rows, ph: K.Phase, rb: list) -> bool:
        """After a phase's loop: its accumulators combined (the block's, then across the grid, or
        to the workspace in stage 1: True, the kernel ends there)."""
        v = self.v
        finals = [self.acc_final(a, r.row) for a in ph.accs]     # (row: the block's combine first)
        if v.grid_sync and ph.accs:     # the chunks' accumulators met across the grid, then finished
            rb += [x for f in finals for x in f[:-1]] + self.grid_combine(ph, r.q_acc, r.row)
            finals = [f[-1:] for f in finals]
            r.q_acc += len(ph.accs)
        for a, f in zip(ph.accs, finals):
            rb += f[:-1] + self.redo_row(ph, a, r.inner) + f[-1:]
            r.row_level |= {a.dst, a.peer}
        if v.stage == 1:      # the chunk's accumulators to the workspace; stage 2 finishes the row
            rb += [f"{'if (tid_ == 0) ' if r.row else ''}{self.partial(ph, k, 'c_')} = A{a.dst};"
                   for k, a in enumerate(ph.accs)]
            return True
        return False

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

    def reload_loads(self, ph, pi: int, r: _Rows) -> list[str]:
        """Variant.reload, a reduction pass: its row loads, all issued before its compute loop
        (predicated, so they go out back to back), into the register slots the loop reads."""
        v, V = self.v, r.V
        lines, done = [], set()
        for s in ph.body:
            key = (s.buf, s.index) if isinstance(s, K.Load) else None
            if key not in r.cache or key in done:
                continue
            done.add(key)
            fn = self.hinted(pi, key, r.last_read, r.row_vars)
            ok = "" if v.exact else f", j_ < {r.units}"
            ptr = f"in{s.buf} + ({self.offset('in', s.buf, s.index)})"
            lines.append(f"{r.cache[key]}[k_] = {self.peeled(s, f'{fn}<{_STYPE[s.dtype]}, {V}>({ptr}{ok})', ptr, ok)};")
        if not lines:
            return []
        dec = []
        self.decompose("j_", r.inner, dec, V)
        body = [f"const IDX j_ = (IDX)tid_ + (IDX)(k_ * {v.block});"] + (self.peel_index(r) if v.peel else dec) + lines
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

