"""The Numba-CUDA emitter's kernel variants: :class:`NVariant`, the part of the CUDA C backend's
``cuda_shapes.Variant`` that :mod:`kfuse.codegen.numba_cuda` renders (``runtime.numba_cuda`` maps
one onto the other), and the default variants for dumps (the IR's own sizes)."""
from __future__ import annotations

import dataclasses
import math

from . import kernel_ir as K
from ..fusion.kinds import GroupKind


@dataclasses.dataclass(frozen=True)
class NVariant:
    mode: str = "elementwise"   # "elementwise" | "tile" | "row" | "col" | "scan" (codegen.numba_cuda_scan)
    ilp: int = 4                # elementwise: units a thread per grid-stride step
    cache_k: int = 0            # row: register slots a thread (0: re-read every phase)
    block: int = 256            # threads per block (also the launch bound)
    fastdiv: bool = False       # unravel indices by multiply-high (32-bit index math: < 2^31 elements):
                                # elementwise the flat index, row/col a row's and a unit's (fast_div_pairs)
    vec: int = 1                # elementwise: elements a unit, read and written as one 16-byte vector
                                # where an access runs along the innermost dim (numba_cuda_mem.ldv/stv)
    tail: bool = False          # elementwise, one loop dim: the last N % vec elements one by one
    split: int = 0              # reduce: chunks a row (two stages, or one grid-synchronised launch) ...
    stage: int = 0              # ... 1: the chunks' accumulators to a workspace; 2: a block a row combines them
    grid_sync: bool = False     # ... several passes, the chunks meeting at grid barriers (codegen.numba_cuda_rows)
    min_blocks: int = 0         # launch bound: resident blocks a SM (grid_sync: every block resident)
    lanes: int = 32             # row, packed: threads a short row (block / lanes rows a block at a time,
    packed: bool = False        # combined by shuffles among the row's lanes alone: no barrier); scan:
                                # lanes a row, a chunk vec segments of lanes elements, packed: rows of up
                                # to lanes elements, a chunk's segments other rows
    peel: bool = False          # row (unchunked), vec > 1, rows not all starting aligned: each row's head and tail
                                # element by element, its body in vectors (codegen.numba_cuda_peel)
    exact: bool = False         # row, cache_k: every row exactly cache_k x block units (CUDA C's Variant.exact):
                                # no bounds test on a slot
    divs: tuple = ()            # elementwise, tile: the sizes an index expression divides by (a concatenation's
                                # piece, a roll's wrap), divided by multiply-high with a host pair each, as
                                # CUDA C's 32-bit index math does (size_divisors)
    reload: bool = False        # row, cache_k: later passes load the row again (a reduction pass its slots up
                                # front), not held; float32 sums accumulate in float32 (CUDA C's Variant.reload)
    tile_t: int = -1            # tile (codegen.numba_cuda_tile2d): the domain dim the staged loads run along,
    staged: tuple = ()          # those loads (their statements' variables), read through shared memory,
    side: int = 32              # and a tile's side in elements (CUDA C's Variant fields of the same names)

    @property
    def tag(self) -> str:
        t = f"{self.mode[0]}i{self.ilp}k{self.cache_k}b{self.block}{'f' if self.fastdiv else ''}"
        t += f"v{self.vec}" if self.vec > 1 else ""
        t += "t" if self.tail else ""
        t += f"p{self.split}" if self.stage == 1 else f"q{self.split}" if self.stage == 2 else ""
        t += f"y{self.split}" if self.grid_sync else ""
        t += f"g{self.lanes}" if self.mode == "scan" else ""
        t += f"w{self.lanes}" if self.packed else ""
        t += "r" if self.reload else ""
        t += "x" if self.exact else ""
        t += "h" if self.peel else ""
        t += "z" + "_".join(self.divs) if self.divs else ""
        t += f"d{self.tile_t}_" + "_".join(self.staged) + f"t{self.side}" if self.mode == "tile" else ""
        return t + (f"m{self.min_blocks}" if self.min_blocks else "")

    @property
    def workspace(self) -> bool:
        """Whether the kernel takes a workspace (the last parameter)."""
        return bool(self.stage or self.grid_sync)


def fast_div_dims(kir: K.KernelIR) -> list[int]:
    """The loop dims an elementwise ``fastdiv`` kernel divides by, in the order of its divisor
    parameters: every loop dim but the leading one, innermost first (as the unravel runs); the
    innermost one's divisor is its extent in units (``NVariant.vec`` elements)."""
    return kir.loop_dims(range(len(kir.domain)))[:0:-1]


def fast_div_pairs(kir: K.KernelIR, v: NVariant) -> list[tuple[int, int]]:
    """``(dim, width)`` of each division a ``fastdiv`` kernel makes by multiply-high, in the order
    of its divisor parameters (``dv<dim>_m``, ``dv<dim>_s``): it divides by ``extent(dim) //
    width``. Elementwise :func:`fast_div_dims`, the innermost in ``vec`` units; a reduce kernel's
    outer dims (a row's index) then its inner ones (a unit's), each but the leading one, the
    innermost inner dim in units of ``vec`` (row mode). As CUDA C's ``kf_udiv`` decompositions:
    a 64-bit division routine a dim a unit (BatchNorm's columns over N, H, W: two an element)."""
    if v.mode == "elementwise":
        dims = fast_div_dims(kir)
        return [(d, v.vec if d == dims[0] else 1) for d in dims]
    outer, inner = kir.loop_dims(kir.outer), kir.loop_dims(kir.inner)
    vec = v.vec if v.mode == "row" else 1
    return [(d, 1) for d in outer[:0:-1]] + [(d, vec if d == inner[-1] else 1) for d in inner[:0:-1]]


def fastdiv_fits(kir: K.KernelIR, total: int) -> bool:
    """Whether an elementwise kernel of ``total`` elements unravels by multiply-high (``fastdiv``):
    it divides at all (several loop dims), and every flat index is below 2^31."""
    return len(kir.loop_dims(range(len(kir.domain)))) > 1 and total < 2 ** 31


def default_variant(kir: K.KernelIR) -> NVariant:
    """The variant for contiguous buffers at the sizes the IR was lowered for."""
    if kir.kind == GroupKind.SCAN:
        return NVariant("col", 1, 0, 128)           # a thread a row, in order
    if kir.kind == GroupKind.REDUCE:
        return row_variant(math.prod(kir.extent(d) for d in kir.inner))
    total = math.prod(map(kir.extent, kir.loop_dims(range(len(kir.domain)))))
    return NVariant("elementwise", 4, 0, 256, fastdiv=fastdiv_fits(kir, total))


def row_variant(L: int) -> NVariant:
    block = 1024 if L > 4096 else max(32, min(1024, 1 << max(0, (L - 1) // 8).bit_length()))
    kc = -(-L // block) if L <= 16 * block else 0
    kc = 1 << (kc - 1).bit_length() if kc > 1 else kc
    return NVariant("row", 1, kc, block)


def size_divisors(kir: K.KernelIR) -> list[str]:
    """The sizes an index expression of ``kir``'s statements divides by (``//`` or ``%``), in
    order of first use: with 32-bit index math each is a multiply-high by a host-computed pair
    (``NVariant.divs``; CUDA C's ``kf_udiv``), not a 64-bit division routine (rotary embedding:
    five an element)."""
    sizes = {s.name for s in kir.sizes}
    out: list[str] = []

    def walk(e) -> None:
        if isinstance(e, K.IBin):
            walk(e.lhs)
            walk(e.rhs)
            if e.op in ("//", "%") and isinstance(e.rhs, K.IVar) and e.rhs.name in sizes and e.rhs.name not in out:
                out.append(e.rhs.name)
    for ph in kir.phases:
        for s in ph.pre + ph.body:
            for e in K.stmt_index(s):
                walk(e)
    return out
