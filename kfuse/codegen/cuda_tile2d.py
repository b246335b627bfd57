"""The CUDA emitter's 2-D tile schedule for elementwise kernels whose operands disagree on the
contiguous axis (a mixin of ``codegen.cuda._Gen``; ``Variant`` mode ``"tile"``).

``np.exp(x.T) + y``, a permute of NCHW to NHWC, ``x + x.T``: the output (and some operands) run
contiguously along the domain's last loop dim ``l``, while the *staged* loads run contiguously along
another dim ``t`` (``Variant.tile_t``). A block of ``side x rows`` threads takes a ``side x side``
tile of the (t, l) plane at a time (``Variant.side``, ``rows = block / side``): it reads each staged load's tile with threads along ``t``
(coalesced), parks it in shared memory (rows padded by one element: no bank conflicts on the
transposed read), and then computes the tile's elements with threads along ``l`` (coalesced
stores and unstaged loads), reading the staged values across the shared tile. The other loop
dims index whole tiles. Which loads are staged (``Variant.staged``, their statements' variables)
is the runtime's choice, from the arrays' strides (``runtime.cuda``): the emitter renders it.
"""
from __future__ import annotations

from . import kernel_ir as K
from .cuda_ops import _STYPE, ctype, index_c, load_expr

TILE = 32           # a tile's side, in elements (Variant.side: the launcher takes TILE_WIDE where the
TILE_WIDE = 64      # staged tiles fit STAGE_BYTES: exp(x.T) + y over 8192^2 f32, 264 -> 239 us, H200)
STAGE_BYTES = 40 * 1024     # shared memory a block's staged tiles may take (48 KiB static at most)


def stage_bytes(side: int, itemsizes) -> int:
    """Shared memory a block's staged tiles take at tile side ``side`` (rows padded by one)."""
    return sum(side * (side + 1) * n for n in itemsizes)


def tile_loads(kir: K.KernelIR) -> list:
    """The loads a tile schedule may stage: plain affine reads (each index component a loop
    variable plus an offset of sizes, or free of loop variables), no gathers."""
    out = []
    for s in kir.phases[0].pre:
        if isinstance(s, K.Load) and not K.gathers(s.index):
            comps = [e for e in s.index if any(v.startswith("i") for v in K.expr_vars(e))]
            if comps and all(_var_of(e) is not None for e in comps):
                out.append(s)
    return out


def _var_of(e) -> str | None:
    """The loop variable ``e`` is an offset of (``i3``, ``i3 + s4``), or None."""
    for v in K.expr_vars(e):
        if v.startswith("i") and K.unit_offset(e, v) is not None:
            return v
    return None


def load_axes(s: K.Load) -> dict:
    """{loop variable: index component} of a tile-stageable load (:func:`tile_loads`)."""
    return {_var_of(e): d for d, e in enumerate(s.index) if _var_of(e) is not None}


class Tile2dEmitter:
    """Renders ``Variant`` mode ``"tile"`` (needs ``_Gen``'s ``setup``, ``stmt``, ``zero_dims``,
    ``wrap``)."""

    def tile2d(self) -> str:
        if self.v.vec > 1:
            return self.tile2d_vec()
        body, tb, dl, dt, staged, inside = self._tile_frame()
        TILE, ROWS = self.v.side, self.v.block // self.v.side
        ph = self.kir.phases[0]
        # stage: threads along t read each staged load's tile (coalesced in its memory order)
        tb.append(f"#pragma unroll\nfor (int k_ = 0; k_ < {TILE // ROWS}; ++k_) {{")
        tb.append(f"  const IDX i{dt} = t0_ + gx_, i{dl} = l0_ + gy_ + k_ * {ROWS};")
        tb.append(f"  if ({inside}) {{")
        for k, s in enumerate(staged):
            tb.append("    " + self.stmt(s))
            tb.append(f"    sm{k}_[gy_ + k_ * {ROWS}][gx_] = {s.dst};")
        tb += ["  }", "}", "__syncthreads();"]
        # compute: threads along l, each staged value read across the shared tile
        reads = {s.dst: f"sm{k}_[gx_][gy_ + k_ * {ROWS}]" for k, s in enumerate(staged)}
        tb.append(f"#pragma unroll\nfor (int k_ = 0; k_ < {TILE // ROWS}; ++k_) {{")
        tb.append(f"  const IDX i{dl} = l0_ + gx_, i{dt} = t0_ + gy_ + k_ * {ROWS};")
        tb.append(f"  if ({inside}) {{")
        tb += ["    " + self.stmt(s, reads) for s in ph.pre]
        tb += ["  }", "}", "__syncthreads();"]
        body += ["  " + x for x in "\n".join(tb).split("\n")]
        body.append("}")
        return self.wrap(body)

    def tile2d_vec(self) -> str:
        """The tile schedule with ``vec``-wide accesses (``Variant.vec`` > 1): a thread stages
        ``vec`` consecutive elements along ``t`` of a staged load (one vector load), then computes
        ``vec`` consecutive elements along ``l`` (vector loads of the unstaged operands, a vector
        store), reading the staged values across the shared tile. The runtime takes it where every
        such access is contiguous and aligned and both extents are whole vectors."""
        kir, v = self.kir, self.v
        ph = kir.phases[0]
        V, S = v.vec, v.side
        G = S // V                  # threads across a tile's side, a vector each
        R = v.block // G            # thread rows a pass
        body, tb, dl, dt, staged, inside = self._tile_frame()
        tb.append(f"#pragma unroll\nfor (int k_ = 0; k_ < {S // R}; ++k_) {{")
        tb.append(f"  const IDX i{dt} = t0_ + gx_ * {V}, i{dl} = l0_ + gy_ + k_ * {R};")
        tb.append(f"  if ({inside}) {{")
        for k, s in enumerate(staged):
            st = _STYPE[s.dtype]
            tb.append(f"    const KfVec<{st}, {V}> w_{s.dst} = *reinterpret_cast<const KfVec<{st}, {V}>*>"
                      f"(in{s.buf} + ({self.offset('in', s.buf, s.index)}));")
            tb.append(f"    #pragma unroll\n    for (int e_ = 0; e_ < {V}; ++e_) sm{k}_[gy_ + k_ * {R}][gx_ * {V} + e_] = "
                      f"{load_expr(f'w_{s.dst}.v', 'e_', s.dtype)};")
        tb += ["  }", "}", "__syncthreads();"]
        tb.append(f"#pragma unroll\nfor (int k_ = 0; k_ < {S // R}; ++k_) {{")
        tb.append(f"  const IDX i{dl} = l0_ + gx_ * {V}, i{dt} = t0_ + gy_ + k_ * {R};")
        tb.append(f"  if ({inside}) {{")
        last = f"i{dl}"
        reads = {s.dst: f"sm{k}_[gx_ * {V} + e_][gy_ + k_ * {R}]" for k, s in enumerate(staged)}
        fetch, lanes, stores = [], [], []
        for s in ph.pre:
            if isinstance(s, K.Load) and s.dst not in reads:
                st, off = _STYPE[s.dtype], self.offset("in", s.buf, s.index)
                if any(last in K.expr_vars(e) for e in s.index):        # along l: a vector
                    fetch.append(f"const KfVec<{st}, {V}> w_{s.dst} = *reinterpret_cast<const KfVec<{st}, {V}>*>"
                                 f"(in{s.buf} + ({off}));")
                    reads[s.dst] = load_expr(f"w_{s.dst}.v", "e_", s.dtype)
                else:                                                   # read once for the lanes
                    fetch.append(f"const {st} w_{s.dst} = in{s.buf}[{off}];")
                    reads[s.dst] = load_expr(f"(&w_{s.dst})", "0", s.dtype)
                lanes.append(self.stmt(s, reads))
            elif isinstance(s, K.Store):
                lanes.append(self.lane_store(s, stores))
            else:
                lanes.append(self.stmt(s, reads))
        tb += ["    " + x for x in "\n".join(fetch + self.lane_compute(lanes, stores, V, last)).split("\n")]
        tb += ["  }", "}", "__syncthreads();"]
        body += ["  " + x for x in "\n".join(tb).split("\n")]
        body.append("}")
        return self.wrap(body)

    def _tile_frame(self) -> tuple:
        """What both tile renderings share: ``(body, tb, l dim, t dim, staged loads, inside test)``,
        ``body`` up to the loop over tiles (the shared tiles declared, ``gx_``/``gy_`` a thread's
        place: ``side / vec`` threads across a tile), ``tb`` the loop body's first lines (the tile's
        corner ``l0_``/``t0_`` and the other dims' indices)."""
        kir, v = self.kir, self.v
        S, G = v.side, v.side // v.vec
        dims = kir.loop_dims(range(len(kir.domain)))
        dl, dt = dims[-1], v.tile_t
        rest = [d for d in dims if d not in (dl, dt)]
        staged = [s for s in kir.phases[0].pre if isinstance(s, K.Load) and s.dst in v.staged]
        body = self.setup()
        ext = {d: index_c(kir.domain[d]) for d in dims}
        body.append(f"const IDX nl_ = ({ext[dl]} + {S - 1}) / {S}, nt_ = ({ext[dt]} + {S - 1}) / {S};")
        body.append("const IDX n_tiles = nl_ * nt_" + "".join(f" * {ext[d]}" for d in rest) + ";")
        body.append(f"const int gx_ = threadIdx.x % {G}, gy_ = threadIdx.x / {G};")
        for k, s in enumerate(staged):
            body.append(f"__shared__ {ctype(s.dtype)} sm{k}_[{S}][{S + 1}];")
        body.append("for (IDX tile_ = blockIdx.x; tile_ < n_tiles; tile_ += gridDim.x) {")
        tb = []
        self.zero_dims([d for d in range(len(kir.domain)) if d not in dims], tb)
        tb.append(f"IDX r_ = tile_; const IDX l0_ = (r_ % nl_) * {S}; r_ /= nl_; "
                  f"const IDX t0_ = (r_ % nt_) * {S}; r_ /= nt_;")
        for d in reversed(rest):
            tb.append(f"const IDX i{d} = r_ % {ext[d]}; r_ /= {ext[d]};")
        return body, tb, dl, dt, staged, f"i{dt} < {ext[dt]} && i{dl} < {ext[dl]}"
