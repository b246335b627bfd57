"""Map an autotuner tile (``kfuse.autotune.space.TileConfig``) onto the CUDA C launcher's launch
shape: a ``codegen.cuda.Variant`` plus a grid size. Pure functions, no GPU needed (CPU-tested).

The launcher first makes its own (heuristic) choice, which settles what only the run-time arrays
can say (the widest legal vector width, 32/64-bit indices, row vs column reduction); a tile then
overrides the knobs it names:

``elementwise``  ``block`` threads; ``ept`` vector units a thread: the Variant's ``ept`` (units a
                 thread per loop trip, unrolled) where the emitter has it, and a grid of
                 ``ceil(units / (block * ept))``; ``vec`` if legal (a narrower vector is legal
                 wherever the launcher's wider one is), else the legal one.
``row``          ``block`` threads a row; ``storage`` "registers" (``cache_k`` = the row's vector
                 units a thread, rounded up to a power of two, at most :data:`MAX_CACHE_K`) or
                 "reread" (``cache_k = 0``); ``vec`` as above.
``reduction``    column reductions: ``block`` threads (one output each); ``rows``/``split`` must be 1.
For reductions the grid keeps the launcher's threads in flight: ``grid * its block / block``
(at most one block a row / an output per thread), so its grid policy carries over to any block.

Tiles are duck-typed (``.kind``, ``.get(name, default)``): this module sits below ``autotune`` in
the import layers. :func:`apply_tile` never raises: a tile that does not fit the call's mode or
size comes back as the launcher's own choice plus a note saying why (the user's call never fails
because of a stored tile; the tuner scores such a candidate as infinitely slow).
:func:`tile_params` is the inverse: the launcher's own choice as ``(kind, params)``, so the
heuristic is a tile too and ``apply_tile(tile_params(v, g)) == (v, g)``.
"""
from __future__ import annotations

import dataclasses
import math
from ..fusion.kinds import ROW_KINDS, TileKind
from ..records import record

MAX_CACHE_K = 32                 # register slots a thread for a cached row (emitter unrolls them)
MAX_GRID = 2 ** 31 - 1


@record
class Geometry:
    """What the mapping needs to know about one call: ``units`` (elementwise: elements of the
    flattened domain; reduce: rows), ``row_len`` (reduce: elements a row) and the SM count."""
    units: int
    row_len: int = 1
    sm: int = 1


def geometry(launcher, sm: int) -> Geometry:
    """The :class:`Geometry` of a ``runtime.cuda._Launcher`` (its KernelIR and sizes)."""
    kir = launcher.kir
    if kir.kind in ROW_KINDS:
        outer, inner = kir.loop_dims(kir.outer), kir.loop_dims(kir.inner)
        rows = math.prod(launcher.extent(d) for d in outer) if outer else 1
        L = math.prod(launcher.extent(d) for d in inner) if inner else 1
        return Geometry(int(rows), int(L), int(sm))
    dims = kir.loop_dims(range(len(kir.domain)))
    total = math.prod(launcher.extent(d) for d in dims) if dims else 1
    return Geometry(int(total), 1, int(sm))


def unsupported(tile) -> str | None:
    """Why the CUDA C runtime cannot run ``tile`` at all (None when it can, for some call)."""
    kind = tile.kind
    if kind in ("gemm", "cublas+epilogue"):
        return "the CUDA C runtime runs a matmul through cuBLAS + its epilogue kernel (no GEMM tiles)"
    if kind == "row" and tile.get("storage", "registers") == "shared":
        return "shared-memory row storage is not in the CUDA C emitter"
    if kind == "reduction" and (int(tile.get("rows", 1)) != 1 or int(tile.get("split", 1)) != 1):
        return "rows a block / split reductions are not in the CUDA C emitter"
    if kind not in (TileKind.ELEMENTWISE, TileKind.ROW, TileKind.REDUCTION):
        return f"a {kind!r} tile is not a CUDA C launch shape"
    block = int(tile.get("block", 256))
    if block < 32 or block > 1024 or block % 32:
        return f"{block} threads a block (32..1024, a multiple of 32)"
    vec = int(tile.get("vec", 1))
    if vec < 1 or vec & (vec - 1):
        return f"vector width {vec} not a power of two"
    if int(tile.get("ept", 1)) < 1:
        return "ept < 1"
    return None


def _pow2_ceil(n: int) -> int:
    return 1 << (n - 1).bit_length() if n > 1 else max(n, 0)


def row_slots(row_len: int, block: int, vec: int) -> int:
    """Register slots a thread (``cache_k``) to hold a row of ``row_len`` elements in registers."""
    return _pow2_ceil(-(-(row_len // max(1, vec)) // max(1, block)))


def _vec(tile, variant) -> int:
    want = int(tile.get("vec", variant.vec))
    return want if want <= variant.vec and variant.vec % want == 0 else variant.vec


def _ept(variant, units: int, grid: int) -> int:
    """Units a thread: the Variant's ``ept`` field (emitters that have it), else the grid's."""
    if "ept" in {f.name for f in dataclasses.fields(variant)}:
        return int(variant.ept)
    return max(1, -(-units // max(1, variant.block * grid)))


def _same_threads(grid: int, old_block: int, block: int, limit: int) -> int:
    return max(1, min(-(-grid * old_block // block), max(1, limit), MAX_GRID))


def apply_tile(tile, variant, grid: int, geom: Geometry) -> tuple:
    """``(variant, grid, note)``: ``variant``/``grid`` overridden by ``tile``; ``note`` is None
    when the tile applied, else why the launcher's own ``(variant, grid)`` came back unchanged."""
    if tile is None:
        return variant, grid, None
    why = unsupported(tile)
    if why is not None:
        return variant, grid, why
    block = int(tile.get("block", variant.block))
    if variant.mode == "elementwise":
        if tile.kind != TileKind.ELEMENTWISE:
            return variant, grid, f"a {tile.kind} tile on an elementwise kernel"
        vec = _vec(tile, variant)
        units = geom.units // vec
        ept = int(tile.get("ept", 1))
        if block == variant.block and vec == variant.vec and ept == _ept(variant, units, grid):
            return variant, grid, None                          # the launcher's own shape
        new_grid = max(1, min(-(-units // (block * ept)), MAX_GRID))
        fields = {f.name for f in dataclasses.fields(variant)}
        shape = dict(vec=vec, block=block)
        if "ept" in fields:
            shape["ept"] = ept
        if getattr(variant, "min_blocks", 0):       # the same resident threads an SM at the new block
            shape["min_blocks"] = max(1, variant.min_blocks * variant.block // block)
        return dataclasses.replace(variant, **shape), new_grid, None
    if variant.mode == "row":
        if tile.kind != "row":
            return variant, grid, f"a {tile.kind} tile on a row reduction"
        if variant.packed or variant.grid_sync:
            return variant, grid, "short rows packed in warps, or a grid-synchronised row: no tile applies"
        vec = _vec(tile, variant)
        units = geom.row_len // vec
        registers = tile.get("storage", "registers") == "registers"
        if block == variant.block and vec == variant.vec and registers == bool(variant.cache_k):
            kc = variant.cache_k                                 # the launcher's own shape
        elif registers:
            kc = row_slots(geom.row_len, block, vec)
            if kc > MAX_CACHE_K:
                return variant, grid, (f"a row of {units} vector units needs {kc} register slots "
                                       f"at {block} threads (max {MAX_CACHE_K})")
        else:
            kc = 0
        new_grid = _same_threads(grid, variant.block, block, geom.units)
        return dataclasses.replace(variant, vec=vec, block=block, cache_k=kc), new_grid, None
    if variant.mode in ("col", "scan"):
        if variant.grid_sync:       # its grid is sized to what stays resident at its launch bounds
            return variant, grid, "a grid-synchronised column pass: no tile applies"
        if tile.kind != "reduction":
            return variant, grid, f"a {tile.kind} tile on a {'scan' if variant.mode == 'scan' else 'column reduction'}"
        new_grid = _same_threads(grid, variant.block, block, -(-geom.units // block))
        return dataclasses.replace(variant, block=block), new_grid, None
    return variant, grid, f"unknown variant mode {variant.mode!r}"


def tile_params(variant, grid: int, geom: Geometry) -> tuple[str, dict]:
    """The launcher's own choice as a tile: ``(kind, params)`` for ``TileConfig.make``."""
    if variant.mode == "elementwise":
        units = geom.units // max(1, variant.vec)
        return "elementwise", {"block": variant.block, "ept": _ept(variant, units, grid),
                               "vec": variant.vec}
    if variant.mode == "row":
        return "row", {"block": variant.block, "vec": variant.vec,
                       "storage": "registers" if variant.cache_k else "reread"}
    return "reduction", {"block": variant.block, "rows": 1, "split": 1}
