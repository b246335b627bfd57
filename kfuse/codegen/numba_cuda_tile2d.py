"""The Numba-CUDA emitter's 2-D tile schedule (a mixin of ``codegen.numba_cuda._Gen``): the CUDA C
schedule of :mod:`kfuse.codegen.cuda_tile2d` (``NVariant`` mode ``"tile"``) for elementwise
kernels whose operands disagree on the contiguous axis (``np.exp(x.T) + y``, NCHW to NHWC).

The output runs contiguously along the domain's last loop dim ``l``, the *staged* loads
(``NVariant.staged``) along another dim ``t`` (``tile_t``). A block takes a ``side x side`` tile
of the (t, l) plane at a time: it reads each staged load's tile with threads along ``t``
(coalesced), parks it in a shared array (rows padded by one element: no bank conflicts on the
transposed read), a barrier, then computes the tile's elements with threads along ``l``
(coalesced stores and unstaged loads), reading the staged values across the shared tile, and a
barrier before the next tile overwrites it. The other loop dims index whole tiles. With ``vec``
> 1 (the runtime's ``_tile_vec``: every such access contiguous and aligned, both extents whole
vectors) a thread stages ``vec`` consecutive elements along ``t`` with one 16-byte load and
computes ``vec`` consecutive elements along ``l``: 16-byte loads of the unstaged operands along
``l``, one 16-byte store. A thread's passes over its tile rows are unrolled, their loads in flight
together, as CUDA C's ``#pragma unroll``. Every thread of a block meets both barriers of every
tile (the tile loop's bound is the block's)."""
from __future__ import annotations

from . import kernel_ir as K
from .numba_cuda_ops import _vt


class Tile2dEmitter:
    """Tile code for ``codegen.numba_cuda._Gen``."""

    def tile2d(self) -> list[str]:
        kir, v = self.kir, self.v
        (ph,) = kir.phases
        V, S = max(1, v.vec), v.side
        G = S // V                  # threads across a tile's side, a vector each
        R = v.block // G            # thread rows a pass
        dims = kir.loop_dims(range(len(kir.domain)))
        dl, dt = dims[-1], v.tile_t
        rest = [d for d in dims if d not in (dl, dt)]
        staged = [s for s in ph.pre if isinstance(s, K.Load) and s.dst in v.staged]
        ext = {d: self.ix(kir.domain[d]) for d in dims}
        self.local = set()
        L = self.const_lines()
        L += [f"nl_ = ({ext[dl]} + {S - 1}) // {S}", f"nt_ = ({ext[dt]} + {S - 1}) // {S}",
              "n_tiles_ = nl_ * nt_" + "".join(f" * {ext[d]}" for d in rest),
              "tid_ = np.int64(cuda.threadIdx.x)", f"gx_ = tid_ % {G}", f"gy_ = tid_ // {G}"]
        for k, s in enumerate(staged):
            st = "uint8" if s.dtype == "bool" else _vt(s.dtype)
            L.append(f"sm{k}_ = cuda.shared.array(({S}, {S + 1}), T.{st})")
        L += ["tile_ = np.int64(cuda.blockIdx.x)", "while tile_ < n_tiles_:"]
        tb = ["r_ = tile_", f"l0_ = (r_ % nl_) * {S}", "r_ = r_ // nl_", f"t0_ = (r_ % nt_) * {S}", "r_ = r_ // nt_"]
        for d in reversed(rest):
            tb += [f"i{d} = r_ % {ext[d]}", f"r_ = r_ // {ext[d]}"]
        # stage: threads along t read each staged load's tile (coalesced in its memory order), every
        # pass's loads first (a position past the plane's edge clamped to its last: read, parked in a
        # slot the compute never reads), then the shared stores
        self.local = {f"i{dt}", f"i{dl}"} | {s.dst for s in staged}
        loads, parks = [], []
        for p in range(S // R):
            x = f"_s{p}" if V == 1 else f"_s{p}_0"
            loads += [f"i{dt}{x} = min(t0_ + gx_ * {V}, {ext[dt]} - {V})", f"i{dl}{x} = min(l0_ + gy_ + {p * R}, {ext[dl]} - 1)"]
            for k, s in enumerate(staged):
                ld, park = self._stage(s, k, V, p, f"gy_ + {p * R}")
                loads += ld
                parks += park
        tb += loads + parks + ["cuda.syncthreads()"]
        # compute: threads along l, each staged value read across the shared tile; every pass's
        # plain loads first (clamped as above), then each pass's statements where it is inside
        self.local = {f"i{dt}", f"i{dl}"} | {s.dst for s in ph.pre if hasattr(s, "dst") and not isinstance(s, K.Const)}
        heads, bodies = [], []
        for p in range(S // R):
            head, rest = self._tile_unit(ph, staged, dl, dt, ext, V, p, R)
            heads += head
            bodies += rest
        tb += heads + bodies + ["cuda.syncthreads()", "tile_ += np.int64(cuda.gridDim.x)"]
        self.sfx, self.local = "", set()
        return L + ["    " + x for x in tb]

    def _stage(self, s: K.Load, k: int, V: int, p: int, row: str) -> tuple[list[str], list[str]]:
        """Pass ``p``'s load of staged ``s`` (``V`` consecutive elements along ``t``: one vector),
        and its values into row ``row`` of the shared tile ``sm<k>_``."""
        put = (lambda x: f"np.uint8(1 if {x} else 0)") if s.dtype == "bool" else (lambda x: x)
        if V == 1:
            self.sfx = f"_s{p}"
            return [self.stmt(s)], [f"sm{k}_[{row}, gx_] = {put(self.n(s.dst))}"]
        names = [f"_s{p}_{e}" for e in range(V)]
        return (self._vector_load(s, names),
                [f"sm{k}_[{row}, gx_ * {V} + {e}] = {put(s.dst + x)}" for e, x in enumerate(names)])

    def _tile_unit(self, ph: K.Phase, staged: list, dl: int, dt: int, ext: dict, V: int, p: int,
                   R: int) -> tuple[list[str], list[str]]:
        """Pass ``p`` of the compute: a thread's ``V`` consecutive elements along ``l`` at tile row
        ``gy_ + p * R``. ``(head, rest)``: its indices (clamped to the plane) and plain loads (the
        unstaged ones along ``l`` one vector, those not using ``l`` once); then, where the elements
        are inside the plane, the staged values read across the shared tiles, the other
        statements per element and the stores (one vector)."""
        slot = {s.dst: k for k, s in enumerate(staged)}
        last, col = f"i{dl}", f"gy_ + {p * R}"
        names = [f"_c{p}"] if V == 1 else [f"_c{p}_{e}" for e in range(V)]
        x0 = names[0]
        head = [f"{last}{x0} = min(l0_ + gx_ * {V}, {ext[dl]} - {V})", f"i{dt}{x0} = min(t0_ + {col}, {ext[dt]} - 1)",
                f"in_c{p} = l0_ + gx_ * {V} < {ext[dl]} and t0_ + {col} < {ext[dt]}"]
        head += [f"{v}{x} = {v}{x0}" + (f" + {e}" if v == last else "")
                 for e, x in enumerate(names) if e for v in (last, f"i{dt}")]
        rest = []
        for s in ph.pre:
            if isinstance(s, K.Load) and s.dst in slot:
                self.dt[s.dst] = s.dtype
                for e, x in enumerate(names):
                    ref = f"sm{slot[s.dst]}_[gx_ * {V} + {e}, {col}]"
                    rest.append(f"{s.dst}{x} = {f'({ref} != 0)' if s.dtype == 'bool' else ref}")
            elif isinstance(s, K.Load) and not K.gathers(s.index) and V > 1 and self.along(s, last, V):
                head += self._vector_load(s, names)
            elif isinstance(s, K.Load) and not K.gathers(s.index) and (
                    V == 1 or not any(last in K.expr_vars(e) for e in s.index)):
                self.sfx = x0               # (read once for the vector's elements)
                head.append(self.stmt(s))
                head += [f"{s.dst}{x} = {s.dst}{x0}" for x in names[1:]]
            elif isinstance(s, K.Store) and V > 1:
                rest.append(self._vector_store(s, names))
            else:
                for x in names:
                    self.sfx = x
                    line = self.stmt(s)
                    if line:
                        rest.append(line)
        self.sfx = ""
        return head, [f"if in_c{p}:"] + ["    " + x for x in rest]
