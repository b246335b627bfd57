"""The Numba-CUDA emitter's scan rows (a mixin of ``codegen.numba_cuda._Gen``): the CUDA C
schedule of :mod:`kfuse.codegen.cuda_scan` (``NVariant`` mode ``"scan"``) for scan kernels whose
rows are contiguous.

``lanes`` lanes of a warp share a row (``32 / lanes`` rows a warp); a chunk of the row is ``vec``
segments of ``lanes`` elements, lane ``l`` taking element ``l`` of each (coalesced loads and
stores, a lane's ``vec`` loads in flight together). Rows of up to 32 elements are *packed*: one
segment a row, a chunk's segments other rows. Per chunk the body runs in *stages* (stage 0 every
statement no scan feeds; a scan's value is ready one stage after its source); after a stage each
scan it feeds combines its segments in order: a shuffle-up tree over the row's lanes with the
row's running value in front, then the running value past the segment (the last lane's). The
``vec`` segments are unrolled here, so a value crossing stages is a name of its own per segment
(suffix ``_e<k>``), not a register array. Lanes past the row's end take its last element and add
the identity; rows past the last compute the last row's and store nothing, so every lane of a
warp reaches every shuffle. Sums and products are associated as a tree over the lanes, as the
CUDA C kernel's are (the same order, so the same values); integer, max and min scans exactly.

Not rendered here (the launcher runs these a thread a row, in order): two stages for rows too few
to fill the GPU (``split``), and the products whose order NumPy's values depend on
(``cuda_shapes.ordered_product``: complex and floating ``cumprod``), which CUDA C redoes segment by
segment in order where a tree value is not finite."""
from __future__ import annotations

from . import kernel_ir as K
from .cuda_scan import scan_stages
from .cuda_shapes import ordered_product
from .numba_cuda_ops import _const_value, _vt

FULL = "0xFFFFFFFF"


def scan_renders(kir: K.KernelIR) -> bool:
    """Whether this emitter renders ``kir`` as scan rows: one phase, no order-dependent product."""
    return len(kir.phases) == 1 and not any(ordered_product(sc) for sc in K.scans(kir.phases[0].body))


class ScanEmitter:
    """Scan-row code for ``codegen.numba_cuda._Gen``."""

    def scan_rows(self) -> list[str]:
        kir, v = self.kir, self.v
        (ph,) = kir.phases
        G, E, packed = v.lanes, v.vec, v.packed
        rpw = 32 // G
        outer, inner = kir.loop_dims(kir.outer), kir.loop_dims(kir.inner)
        assert len(inner) == 1, "a scan kernel loops over its one scan axis"
        scans = K.scans(ph.body)
        defs = {s.dst for s in ph.body if hasattr(s, "dst") and not isinstance(s, K.Const)}     # (constants: once)
        # a segment's own names: its values, its element's indices (packed: its row's too)
        self.local = defs | {f"i{inner[0]}", "j_", "ok_", "live_", "rw_", "rowc_"}
        if packed:
            self.local |= ({s.dst for s in ph.pre if hasattr(s, "dst") and not isinstance(s, K.Const)}
                           | {f"i{d}" for d in outer} | {"r_"})
        L = self.const_lines()
        L.append(f"n_rows_ = {' * '.join(self.ix(kir.domain[d]) for d in outer) or '1'}")
        L.append(f"hi_ = {self.ix(kir.domain[inner[0]])}")
        L += ["tid_ = np.int64(cuda.threadIdx.x)", "lane_ = tid_ & 31", "warp_ = tid_ >> 5",
              f"seg_ = lane_ >> {G.bit_length() - 1}", f"sl_ = lane_ & {G - 1}", f"last_ = np.int32(lane_ | {G - 1})",
              f"nwarps_ = {v.block // 32}"]
        step = rpw * E if packed else rpw
        L += [f"w_ = (np.int64(cuda.blockIdx.x) * nwarps_ + warp_) * {step}",
              f"wstep_ = np.int64(cuda.gridDim.x) * nwarps_ * {step}", "while w_ < n_rows_:"]
        rb: list[str] = []
        if not packed:                  # a row a segment group; packed: each segment's row, below
            rb += ["live_ = w_ + seg_ < n_rows_", "rowc_ = w_ + seg_ if live_ else n_rows_ - 1"]
            self.sfx = ""
            self.decompose("rowc_", outer, rb)
            for s in ph.pre:
                line = self.stmt(s)
                if line:
                    rb += ["if live_ and sl_ == 0:", "    " + line] if isinstance(s, K.Store) else [line]
        for sc in scans:
            self.dt[sc.dst] = sc.dtype
            self.globals.append(f"_S{sc.dst} = {_const_value(sc.init, sc.dtype)}")
            rb.append(f"C{sc.dst} = _S{sc.dst}")
        chunk = self._scan_chunk(ph, scans, inner[0], outer)
        if packed:                      # a row is one segment: no chunk loop
            rb += ["b_ = np.int64(0)"] + chunk
        else:
            rb += ["b_ = np.int64(0)", "while b_ < hi_:"] + ["    " + x for x in chunk] + [f"    b_ += {G * E}"]
        rb.append("w_ += wstep_")
        self.sfx = ""
        return L + ["    " + x for x in rb]

    def _segment_head(self, e: int, inner: int, outer: list, pre) -> list[str]:
        """Segment ``e``'s element of this lane (``j``, clamped to the row's last where the lane is
        past its end); packed, the segment's row too (clamped to the last row) and its row-level values."""
        G, n = self.v.lanes, self.n
        out = []
        if self.v.packed:
            out += [f"{n('rw_')} = w_ + {e * (32 // G)} + seg_", f"{n('live_')} = {n('rw_')} < n_rows_",
                    f"{n('rowc_')} = {n('rw_')} if {n('live_')} else n_rows_ - 1"]
            self.decompose(n("rowc_"), outer, out)
            out += [f"{n('j_')} = sl_"]
        else:
            out += [f"{n('j_')} = b_ + {e * G} + sl_"]
        out += [f"{n('ok_')} = {n('j_')} < hi_", f"{n(f'i{inner}')} = {n('j_')} if {n('ok_')} else hi_ - 1"]
        if self.v.packed:
            out += [x for x in (self.stmt(s) for s in pre if not isinstance(s, K.Store)) if x]
        return out

    def _scan_chunk(self, ph, scans, inner: int, outer) -> list[str]:
        """One chunk of ``lanes x vec`` elements: each stage's statements segment by segment, then
        the scans that stage feeds."""
        E = self.v.vec
        where = scan_stages(ph.body)
        nstage = max(where.values(), default=0) + 1
        live = "live_" if not self.v.packed else None
        out: list[str] = []
        for k in range(nstage):
            for e in range(E):
                self.sfx = f"_e{e}"
                if k == 0:
                    out += self._segment_head(e, inner, outer, ph.pre)
                for s in ph.body:
                    if where[id(s)] != k:
                        continue
                    if isinstance(s, K.Scan):
                        out.append(f"S{s.dst}{self.sfx} = {self.n(s.src)} if {self.n('ok_')} else _S{s.dst}")
                    elif isinstance(s, K.Store):
                        out += [f"if {live or self.n('live_')} and {self.n('ok_')}:", "    " + self.stmt(s)]
                    else:
                        line = self.stmt(s)
                        if line:
                            out.append(line)
            self.sfx = ""
            for sc in scans:
                if where[id(sc)] == k:
                    out += self._combine_scan(sc)
        return out

    def _combine(self, sc: K.Scan, a: str, b: str) -> str:
        """``op(a, b)`` of the scan (its dtype's rules: float16 rounded, integers wrapped)."""
        saved, self.sfx = self.sfx, ""
        try:
            return self.op_value(K.Op("_", sc.op, sc.dtype, (a, b), (sc.dtype, sc.dtype)))
        finally:
            self.sfx = saved

    def _combine_scan(self, sc: K.Scan) -> list[str]:
        """The scan over the chunk's segments ``S<scan>_e<k>``: each a shuffle-up tree over the
        row's lanes (lane ``l`` combining the ``l + 1`` values up to its own), the running value in
        front (packed: the row's start), into ``<scan>_e<k>``; then the running value past it."""
        G, E, d = self.v.lanes, self.v.vec, sc.dst
        vt = _vt(sc.dtype)
        out = [f"c_ = C{d}"]
        for e in range(E):
            out.append(f"t_ = S{d}_e{e}")
            s = 1
            while s < G:            # o_ first: every lane shuffles (no shuffle in a branch)
                out.append(f"o_ = {self.shfl('t_', vt, str(s), 'shfl_up_sync')}")
                out.append(f"t_ = {self._combine(sc, 'o_', 't_')} if sl_ >= {s} else t_")
                s <<= 1
            out.append(f"{d}_e{e} = {self._combine(sc, 'c_', 't_')}")
            if not self.v.packed:   # (packed: each segment a row of its own, no running value)
                out.append(f"c_ = {self._combine(sc, 'c_', self.shfl('t_', vt, 'last_', 'shfl_sync'))}")
        out.append(f"C{d} = c_")
        return out
