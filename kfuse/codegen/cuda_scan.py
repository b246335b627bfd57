"""The CUDA emitter's scan rows (a mixin of ``codegen.cuda._Gen``): Variant mode ``"scan"``, for
scan kernels whose rows are contiguous (a column scan runs a thread a column, ``col``, in order).

``v.lanes`` lanes of a warp share a row (``32 / lanes`` rows a warp); a chunk of the row is
``vec`` segments of ``lanes`` elements, lane ``l`` taking element ``l`` of each, so every load and
store of a segment is coalesced and the ``vec`` loads of a lane are in flight together. Rows of up
to 32 elements are *packed*: one segment a row, a chunk's segments other rows. Per chunk the body
runs in *stages*: stage 0 is every statement no scan feeds; after a stage's element loop each scan
whose source it computed combines, segment by segment: a shuffle-up tree over the row's lanes, with
the row's running value (``C_<scan>``) in front; a later stage reads the scanned values (scan of a
scan, consumers, stores). Values crossing stages live in ``vec``-element register arrays. Lanes past
the row's end read its last element and add the identity; rows past the last compute the last
row's and store nothing, so every lane reaches every shuffle.

Integer, boolean, max and min scans give NumPy's values exactly; float sums and products are
associated as a tree over the lanes (as CUB's and Triton's scans are), not NumPy's left-to-right
order: within the tolerance table's float rows, like a sum's summation order (``kfuse/testing.py``).
A complex product is not associative past an infinite or NaN factor (which parts are NaN follows
the order of the products): where a segment's tree values hold a non-finite part in any row of the
warp, the segment is scanned again in NumPy's order (:meth:`ScanEmitter._ordered_segment`: each
element broadcast in turn, every lane multiplying in those up to its own), and so is every later
segment of such a row (its running value stays non-finite). So is a floating product's: NumPy's
running product stays infinite once it overflows, where a tree can group its way back to a finite
value (float16 ``cumprod``). Such kernels do not split
(``cuda_shapes.scan_split_ok``): chunk totals multiplied together are another association.

Two stages (``split``, rows too few to fill the GPU, ``np.cumsum(x)`` of a long 1-D ``x``): a warp a
(row, chunk of the row); stage 1 writes each chunk's scan totals to the workspace; stage 2 starts
each chunk from the totals of the chunks before it (each lane every 32nd, then a fixed xor tree:
the same value every run) and scans it. Only for kernels where no scan reads another's values.
"""
from __future__ import annotations

from . import kernel_ir as K
from .cuda_ops import const_literal, ctype
from .cuda_shapes import SPLIT_SLOT, ordered_product


def _dtype(s) -> str:
    return "int64" if isinstance(s, (K.Index, K.Search)) else s.dtype


def scan_stages(body) -> dict:
    """Statement id -> the stage it runs in (a scan: the stage of its source; its value is ready
    one stage later)."""
    ready: dict[str, int] = {}
    where = {}
    for s in body:
        k = max([ready.get(n, 0) for n in K.stmt_reads(s)] + [0])
        where[id(s)] = k
        if hasattr(s, "dst"):
            ready[s.dst] = k + 1 if isinstance(s, K.Scan) else k
    return where


class ScanEmitter:
    """Scan-row code for ``codegen.cuda._Gen`` (which sets ``kir``, ``v`` and ``dt``)."""

    def scan_inits(self, ph: K.Phase) -> list[str]:
        """``col`` mode: the running values of ``ph``'s scans, declared and started before its
        loop (each step then updates the value in place, in order)."""
        out = []
        for sc in K.scans(ph.body):
            self.dt[sc.dst] = sc.dtype
            out.append(f"{ctype(sc.dtype)} {sc.dst} = {const_literal(sc.init, sc.dtype)};")
        return out

    def _combine(self, sc: K.Scan, a: str, b: str) -> str:
        return self.op_value(K.Op("_", sc.op, sc.dtype, (a, b), (sc.dtype, sc.dtype)))

    def scan_rows(self) -> str:
        kir, v = self.kir, self.v
        (ph,) = kir.phases
        G, E = v.lanes, v.vec
        rpw = 32 // G
        outer, inner = kir.loop_dims(kir.outer), kir.loop_dims(kir.inner)
        assert len(inner) == 1, "a scan kernel loops over its one scan axis"
        body = self.setup()
        body.append(f"const IDX n_rows = {' * '.join(self._extent_c(d) for d in outer) or '(IDX)1'};")
        body.append(f"const IDX row_len = {self._extent_c(inner[0])};")
        body.append(f"const int lane_ = threadIdx.x & 31, warp_ = threadIdx.x >> 5, seg_ = lane_ / {G}, "
                    f"sl_ = lane_ % {G}; (void)seg_;")
        body.append(f"constexpr int nwarps_ = {v.block // 32};")
        scans = K.scans(ph.body)
        split = v.split
        if split:       # a warp a (row, chunk); the chunk's length a multiple of lanes x vec
            body.append(f"const IDX chunk_ = ((row_len + {split - 1}) / {split} + {G * E - 1}) / {G * E} * {G * E};")
            body.append(f"for (IDX t_ = (IDX)blockIdx.x * nwarps_ + warp_; t_ < n_rows * {split}; "
                        f"t_ += (IDX)gridDim.x * nwarps_) {{")
            body.append(f"  const IDX row_ = t_ / {split}, c_ = t_ % {split}; const bool live_ = true;")
            body.append("  const IDX lo_ = c_ * chunk_, hi_ = lo_ + chunk_ < row_len ? lo_ + chunk_ : row_len;")
        else:
            step = rpw * E if v.packed else rpw
            body.append(f"for (IDX w_ = ((IDX)blockIdx.x * nwarps_ + warp_) * {step}; w_ < n_rows; "
                        f"w_ += (IDX)gridDim.x * nwarps_ * {step}) {{")
            if not v.packed:
                body.append("  const bool live_ = w_ + seg_ < n_rows;")
                body.append("  const IDX rowc_ = live_ ? w_ + seg_ : n_rows - 1;")
            body.append("  const IDX lo_ = 0, hi_ = row_len;")
        rb: list[str] = []
        self.zero_dims([d for d in kir.outer if d not in outer], rb)
        self.zero_dims([d for d in kir.inner if d not in inner], rb)
        if not v.packed:                        # packed: each segment's rows, in the element loops
            self.decompose("row_" if split else "rowc_", outer, rb)
            for s in ph.pre:
                rb.append(("if (live_ && sl_ == 0) " if isinstance(s, K.Store) else "") + self.stmt(s))
        for sc in scans:
            self.dt[sc.dst] = sc.dtype
            rb.append(f"{ctype(sc.dtype)} C_{sc.dst} = {const_literal(sc.init, sc.dtype)};")
        if split and v.stage == 2:
            rb += self._chunk_prefix(scans)
        chunk = self._chunk(ph, scans, inner[0], outer, totals_only=bool(split) and v.stage == 1)
        if v.packed:                            # a row is one segment: no chunk loop
            rb += ["const IDX b_ = 0;"] + chunk
        else:
            rb.append(f"for (IDX b_ = lo_; b_ < hi_; b_ += {G * E}) {{")
            rb += ["  " + x for x in "\n".join(chunk).split("\n")]
            rb.append("}")
        if split and v.stage == 1:
            rb += [f"if (sl_ == 0) {self._slot(sc, k, 'c_')} = C_{sc.dst};" for k, sc in enumerate(scans)]
        body += ["  " + x for x in "\n".join(rb).split("\n")]
        body.append("}")
        return self.wrap(body)

    def _extent_c(self, d: int) -> str:
        from .cuda_ops import index_c
        return index_c(self.kir.domain[d])

    def _slot(self, sc: K.Scan, k: int, chunk: str) -> str:
        off = f"((size_t)(row_ * {self.v.split} + {chunk}) * {len(K.scans(self.kir.phases[0].body))} + {k}) * {SPLIT_SLOT}"
        return f"*reinterpret_cast<{ctype(sc.dtype)}*>(ws_ + {off})"

    def _chunk_prefix(self, scans) -> list[str]:
        """Stage 2: each scan's running value starts from the totals of the row's chunks before
        this one: lane l combines chunks l, l + 32, ... in order, then a fixed xor tree."""
        out = []
        for k, sc in enumerate(scans):
            T = ctype(sc.dtype)
            p = f"P{sc.dst}"
            out.append(f"{T} {p} = {const_literal(sc.init, sc.dtype)};")
            out.append(f"for (IDX q_ = lane_; q_ < c_; q_ += 32) {p} = {self._combine(sc, p, self._slot(sc, k, 'q_'))};")
            out.append(f"for (int m_ = 16; m_ > 0; m_ >>= 1) {{ const {T} o_ = kf_shfl({p}, m_); "
                       f"{p} = {self._combine(sc, p, 'o_')}; }}")
            out.append(f"C_{sc.dst} = {p};")
        return out

    def _element(self, e_loop_pre, inner: int, outer) -> list[str]:
        """The head of an element loop: element ``e_`` of this lane (``j_``, its row's clamp
        ``jc_`` where the lane is past the row's end); packed, its row too, and the row's values."""
        G = self.v.lanes
        if not self.v.packed:
            return [f"const IDX j_ = b_ + (IDX)(e_ * {G} + sl_);", "const bool ok_ = j_ < hi_; (void)ok_;",
                    "const IDX jc_ = ok_ ? j_ : hi_ - 1;", f"const IDX i{inner} = jc_;"]
        out = [f"const IDX rw_ = w_ + (IDX)(e_ * {32 // G} + seg_);", "const bool live_ = rw_ < n_rows;",
               "const IDX rowc_ = live_ ? rw_ : n_rows - 1;"]
        self.decompose("rowc_", outer, out)
        out += ["const IDX j_ = sl_;", "const bool ok_ = j_ < hi_; (void)ok_;", "const IDX jc_ = ok_ ? j_ : hi_ - 1;",
                f"const IDX i{inner} = jc_;"]
        return out + [self.stmt(s) for s in e_loop_pre if not isinstance(s, K.Store)]

    def _chunk(self, ph, scans, inner: int, outer, totals_only: bool) -> list[str]:
        """One chunk of ``lanes x vec`` elements: the stages' element loops and the scans between
        them. ``totals_only``: stage 1 of a split, only the scans' running values (no stores)."""
        E, G = self.v.vec, self.v.lanes
        stmts = ph.body
        where = scan_stages(stmts)
        defined = {s.dst: where[id(s)] + (1 if isinstance(s, K.Scan) else 0) for s in stmts if hasattr(s, "dst")}
        nstage = max(where.values(), default=0) + 1
        if totals_only:
            nstage = 1
        scanned = {sc.dst for sc in scans}
        uses: dict[str, set[int]] = {}     # a value read in a later stage than it is computed in -> those stages
        for s in stmts:
            for n in K.stmt_reads(s):
                if n in scanned or (n in defined and defined[n] < where[id(s)]):
                    uses.setdefault(n, set()).add(where[id(s)])
        types = {s.dst: _dtype(s) for s in stmts if hasattr(s, "dst")}
        out = [f"{ctype(types[n])} {n}_a[{E}];" for n in uses]
        out += [f"{ctype(sc.dtype)} {sc.dst}_s[{E}];" for sc in scans]
        for k in range(nstage):
            loop = self._element(ph.pre, inner, outer)
            loop += [self.decl(types[n], n, f"{n}_a[e_]") for n, ks in uses.items() if k in ks]
            for s in stmts:
                if where[id(s)] != k:
                    continue
                if isinstance(s, K.Scan):
                    self.dt[s.dst] = s.dtype
                    loop.append(f"{s.dst}_s[e_] = ok_ ? {s.src} : {const_literal(s.init, s.dtype)};")
                elif isinstance(s, K.Store):
                    if not totals_only:
                        loop.append("if (live_ && ok_) " + self.stmt(s))
                else:
                    loop.append(self.stmt(s))
                    if s.dst in uses:
                        loop.append(f"{s.dst}_a[e_] = {s.dst};")
            out.append(f"#pragma unroll\nfor (int e_ = 0; e_ < {E}; ++e_) {{")
            out += ["  " + x for x in "\n".join(loop).split("\n")]
            out.append("}")
            for sc in scans:
                if where[id(sc)] == k:
                    out += self._combine_scan(sc, E, G, totals_only)
        return out

    def _combine_scan(self, sc: K.Scan, E: int, G: int, totals_only: bool) -> list[str]:
        """A scan over the chunk's stage values ``<scan>_s`` (element ``e`` of a lane is the row's
        ``b + e * lanes + lane``): segment by segment, a shuffle-up tree over the row's lanes with
        the running value in front, then the running value past the segment; the scanned values
        to ``<scan>_a`` (read as ``<scan>`` by later stages). The E trees are independent."""
        T, d = ctype(sc.dtype), sc.dst
        tree = (f"#pragma unroll\nfor (int s_ = 1; s_ < {G}; s_ <<= 1) {{ const {T} o_ = kf_shfl_up(t_, s_, {G}); "
                f"if (sl_ >= s_) t_ = {self._combine(sc, 'o_', 't_')}; }}")
        ordered = ordered_product(sc)
        if self.v.packed:       # each segment a row of its own: no running value between them
            if ordered:
                seg = [f"{T} r_ = {self._combine(sc, f'C_{d}', 't_')};"] + self._ordered_segment(sc, f"C_{d}", None)
                seg.append(f"{d}_a[e_] = r_;")
            else:
                seg = [f"{d}_a[e_] = {self._combine(sc, f'C_{d}', 't_')};"]
            return ([f"#pragma unroll\nfor (int e_ = 0; e_ < {E}; ++e_) {{", f"  {T} t_ = {d}_s[e_];"]
                    + ["  " + x for x in "\n".join([tree] + seg).split("\n")] + ["}"])
        step = f"c_ = {self._combine(sc, 'c_', f'kf_shfl_idx(t_, {G - 1}, {G})')};"
        if ordered:
            seg = [f"{T} r_ = {self._combine(sc, 'c_', 't_')};"] + self._ordered_segment(sc, "c_", step)
            seg += [] if totals_only else [f"{d}_a[e_] = r_;"]
        else:
            seg = ([] if totals_only else [f"{d}_a[e_] = {self._combine(sc, 'c_', 't_')};"]) + [step]
        out = ["{", f"  {T} c_ = C_{d};", f"  #pragma unroll\n  for (int e_ = 0; e_ < {E}; ++e_) {{",
               f"    {T} t_ = {d}_s[e_];"]
        out += ["    " + x for x in "\n".join([tree] + seg).split("\n")]
        out += ["  }", f"  C_{d} = c_;", "}"]
        return out

    def _ordered_segment(self, sc: K.Scan, c: str, step: str | None) -> list[str]:
        """A complex or floating product's segment (``r_``: this lane's tree value from running value ``c``):
        where any lane of the warp holds a non-finite ``r_``, the segment again in NumPy's order,
        each of its elements broadcast in turn and multiplied in by the lanes at or after it; the
        running value ``c_`` past the segment then the last lane's (``step``: the tree's, else;
        None: a packed row, no running value). Lanes past a row's end hold the unit, which is
        neither counted (``kf_isunit``) nor changes a product."""
        T, d, G = ctype(sc.dtype), sc.dst, self.v.lanes
        bad = "!kf_isunit(r_) && !(kf_fin(r_.re) && kf_fin(r_.im))" if sc.dtype.startswith("complex") else "!isfinite(r_)"
        out = [f"if (__any_sync(0xffffffffu, {bad})) {{  // NumPy's order", f"  {T} q_ = {c};",
               f"  for (int p_ = 0; p_ < {G}; ++p_) {{ const {T} o_ = kf_shfl_idx({d}_s[e_], p_, {G}); "
               f"if (p_ <= sl_) q_ = {self._combine(sc, 'q_', 'o_')}; }}", "  r_ = q_;"]
        out += [f"  c_ = kf_shfl_idx(q_, {G - 1}, {G});"] if step else []
        return out + (["} else {", f"  {step}", "}"] if step else ["}"])

