"""The CUDA runtime: compile a fusion Plan to CUDA kernels and launch them on CuPy arrays.

``compile_plan(plan)`` lowers every group to KernelIR (``codegen.lower``), emits CUDA C
(``codegen.cuda``, imported only on a render: a warm process reads its sources from the store,
``runtime.rendered``; variants and launch shapes are ``codegen.cuda_shapes``') and compiles it with
NVRTC to a CUBIN for the device's exact arch (PTX kept for dumps: a CUDA 13.0 driver cannot JIT
NVRTC 13.5's PTX). A call picks a kernel variant from the arrays' strides and alignment, loads the
module once per source text (process-wide: a new size never recompiles), launches on CuPy's stream.
Matmul groups run their contraction through ``cupy.matmul`` (cuBLAS) and the epilogue as a kernel.
Scatter groups run as scalar elementwise kernels (``vector_ok`` is false for them: their store
addresses are data), their outputs started as copies of their bases, or the bases' own buffers: a
dead intermediate, or the argument a call updates, written in place once its index checks passed
(``gpu_launch``).
"""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from ..codegen import cuda_shapes as shapes
from ..codegen import kernel_ir as K
from ..codegen import nvrtc
from ..codegen.lower import lower_group
from ..codegen.cuda_tile2d import TILE, TILE_WIDE, STAGE_BYTES, load_axes, stage_bytes, tile_loads
from ..codegen.cuda_shapes import grid_combine_groups
from ..codegen.flat_domain import flatten_domain
from ..codegen.online_softmax import online_max_sum
from ..codegen.phase_merge import merge_independent_phases, rereading_form
from ..codegen.reshape_index import collapse_contiguous_reshapes
from ..fusion import cost
from ..fusion.kinds import ROW_KINDS, GroupKind
from ..fusion.gpu_chunks import (COL_GRID_SYNC_BLOCKS_PER_SM, GRID_SYNC_BLOCKS_PER_SM, ROW_SPLIT_BLOCK, SPLIT_MAX, col_chunks,
                                 col_grid_chunks, row_chunks, row_grid_chunks)
from ..fusion.reduction import PEEL_MIN_UNITS, STREAMED_MIN_UNITS
from . import cuda_tiles, gpu_store, rendered
from .carveout import row_carveout, set_carveout
from .gpu_launch import GpuProgram, LauncherBase, fast_divisor, scalar_args

# Process-wide memo of emitted, compiled and loaded code: (kernel IR normal form, Variant) ->
# CudaKernel, (source, arch) -> CompiledCuda and (device, source) -> cupy Function. Caches only:
# dropping them changes nothing but speed.
_EMITTED: dict = {}
_COMPILED: dict = {}
_LOADED: dict = {}
INT32_LIMIT = 2 ** 31 - 1
# Launch-shape knobs (benchmarks/gpu_quick.py --sweep measures them; autotune may set them later).
EW_BLOCKS_PER_SM = 1024       # elementwise grid cap (grid-stride beyond it); 8 was 7-10 points slower (sweep, H200)
ROW_UNITS_PER_THREAD = 4      # row reductions: vector units a thread holds
ROW_BARRIERS = 2              # row reductions: __syncthreads per block reduce (1: double-buffered smem;
                              # with a block per row 2 was as fast or faster and uses fewer registers)
EW_BLOCK = 128                # elementwise: threads a block (sweep 2026-11-22 04:25: P1 96.7% of copy at
                              # 128, 95.7% at 256, 93.6% at 512; Inductor's pick is 128 too)
EW_UNITS_PER_THREAD = 1       # elementwise: vector units a thread a loop trip (H200 2026-11-24, commit 70d2784: P1
                              # 0.1291 ms at 1, 0.1304 at 2, 0.1331 at 4; P6 0.4411 at 1, 0.4465 at 2)
EW_HEAVY_UNITS = 2            # ... where its arithmetic is heavy for its bytes (codegen.cuda_shapes.HEAVY_FLOPS_PER_BYTE)
ROW_RELOAD = True             # rows several float32-sum passes read: re-loaded through L1 (Variant.reload;
                              # codegen.cuda_shapes.reload_pays says where), not held
ROW_RELOAD_UNITS = 2          # ... with this many vector units a thread (P3: 512 threads, 32 registers, as
                              # Triton's best configuration; 0.1295 vs 0.1341 ms, H200, row_probe run 11)
ROW_RELOAD_MAX_BYTES = 32768  # ... and where rows of several buffers hold at most this many bytes (Pearson's two
                              # 32 KiB rows, 8192x8192 f32: 239.7/250.5 us re-loaded, 132.7/138.4 held; one buffer
                              # of 128 KiB, GroupNorm's: 101.4 re-loaded, 118.0 held; H200, 2026-11-28)
ROW_PEEL = True               # rows not starting 16-byte aligned (odd lengths, views): vector bodies, scalar
                              # heads and tails (Variant.peel), rather than element by element
ROW_PEEL_PACKED = True        # ... short (packed) rows too (not measured yet: False keeps them element by element)
ROW_BLOCKS_PER_SM = 0         # row reductions: grid cap, in 256-thread blocks a SM (0: a block per row;
                              # 8, the old persistent grid, gave P2/P3/P4 76.6/87.1/85.5% vs 92.4/91.2/95.2%)
FLAT_BROADCAST_MAX = 8        # a flattened domain's lane-by-lane loads: operands at most 1/8 of its size
ROW_LONG_UNITS = 1024         # rows of more vector units (up to 4096): 256 threads holding 8 or 16 units each
ROW_LONG_BLOCK = 256          # (a logsumexp of 8192x16384 f32: 129 us at 256 x 16, 183 at 1024 x 4; H200)
# rows of more than fusion.reduction.STREAMED_MIN_UNITS vector units with a max and a sum of exp: one streamed
ONLINE_BLOCK = 256            # pass for both (codegen.online_softmax), this many threads a row (8192x32000 f32:
ONLINE_BLOCK_WRITES = 512     # 0.33 ms, 0.50 before), 512 where the row is written too (a softmax: 0.76 ms, 0.91)
PACKED_ROW_UNITS = 128        # rows of at most this many vector units run packed, several a warp (a row of
                              # 33 f32, one 32-thread block a row: 2.5 ms for 528 MiB), a warp a row at most;
THREAD_ROW_UNITS = 8          # rows of at most this many, a thread a row (2^24 rows of 7 f32: 131 us, 332 on 8 lanes)
PACKED_UNITS_PER_LANE = 3     # a packed row's lanes: the fewest (a power of two) giving a lane at most this many
                              # units (H200, f32, us: layernorm of 2^20 x 48 206 -> 125, 2^19 x 96 211 -> 125,
                              # softmax 2^20 x 40 172 -> 107, sum of 2^22 x 33 505 -> 283, softmax 2^20 x 64
                              # 167 -> 153; 4 a lane: softmax x 64 218, 2: softmax x 40 185)
PACKED_HELD = True            # short (packed) rows held in a lane's registers (Variant.cache_k), not re-read a pass
PACKED_ROW_BLOCKS_PER_SM = 16 # (Variant.lanes; a block a row of 64 floats took 10.1 ms for 512 MiB, H200),
                              # in at most this many 128-thread blocks a SM, looping over row groups
TILE_MIN_EXTENT = 16          # tile schedule: both dims of the plane at least this long (else rows of 32)
TILE_BLOCKS_PER_SM = 16       # ... and its grid cap, in 256-thread blocks a SM (tiles grid-stride beyond)
SCAN_WARPS_PER_SM = 32        # scan rows too few for a quarter of this many warps a SM run in chunks,
SCAN_MIN_UNITS = 4            # two stages, each chunk at least this many spans of lanes x vec
STREAM = False                # evict-first loads/stores of data touched once (no gain in the sweep; tunable)
MIN_BLOCKS = 0                # __launch_bounds__ minimum blocks a SM (0: none; 8 spills, 6 no gain; tunable)
# Also measured and dropped (2026-11-22, sweep5_rows_per_block.md): several rows a block (2 rows:
# within 1% of one row, 4 rows: 64-88% of copy); re-reading the row from L2 per phase (78-87%).
# And on P3 (a row probe and Nsight Compute notes, commits e4f27b3, 547653f): rows in shared memory
# (with launch bounds for 8 blocks: 32 registers, 88% occupancy, no faster), re-reading with L2
# evict-last/evict-first hints as Triton does (74-88%), 512-thread rows (80-88%), a shuffle-tree
# cross-warp combine, division by a per-row reciprocal with exact correction or by a float64
# reciprocal (exact, 6-8 fewer registers), a hand-written kernel in Triton's shape: none gained.
# Sweeps: benchmarks/gpu_quick.py --sweep --sweep-ew (H200, 2026-11-22, commit 8892d42)


def compile_source(source: str, arch: str, cache=None) -> nvrtc.CompiledCuda:
    """NVRTC's result for ``source`` on ``arch``: memoised in the process, then read from or
    written to the kernel store ``cache`` (``runtime.cache.KernelStore``, or None)."""
    key = (source, arch)
    hit = _COMPILED.get(key)
    if hit is None:
        hit = gpu_store.load_cubin(cache, source, arch)
    if hit is None:
        hit = nvrtc.compile(source, arch)
        gpu_store.save_cubin(cache, source, arch, hit)
    _COMPILED[key] = hit
    return hit


def emitted_kernel(kir: K.KernelIR, variant, cache=None) -> shapes.CudaKernel:
    """``codegen.cuda.emit_kernel(kir, variant)``, memoised in the process by what the code
    depends on: the kernel IR's normal form (``shape_class.normal_form``: no size values) and the
    variant. A launcher first meeting a variant (a new size's launcher family, another function
    or shape class with the same kernel) finds the kernel another one rendered (~15 us for the
    key against ~0.5-1 ms to render), and with it the module loaded for its source; a new process
    finds it in the kernel store ``cache`` (``runtime.rendered``), rendering nothing."""
    from .shape_class import normal_form
    key = (normal_form(kir), variant)
    hit = _EMITTED.get(key)
    if hit is None:
        hit = _EMITTED[key] = rendered.kernel(cache, kir, variant)
    return hit


def _emit(kir: K.KernelIR) -> str:
    """``codegen.cuda.emit(kir)``: the renderer imported only here, where a stage is printed."""
    from ..codegen import cuda as cuda_emit
    return cuda_emit.emit(kir)


def _function(kernel: shapes.CudaKernel, dev_id: int, arch: str, cache=None):
    return load_function(kernel.source, kernel.name, dev_id, arch, cache)


def load_function(source: str, name: str, dev_id: int, arch: str, cache=None):
    """Kernel ``name`` of CUDA C ``source``, compiled (:func:`compile_source`) and loaded on device
    ``dev_id`` once per process."""
    key = (dev_id, source)
    f = _LOADED.get(key)
    if f is None:
        import cupy
        compiled = compile_source(source, arch, cache)
        mod = cupy.cuda.function.Module()
        mod.load(compiled.cubin)
        f = (mod, mod.get_function(name))
        _LOADED[key] = f
    return f[1]


def _max_offset(arr) -> int:
    return sum((s - 1) * abs(st) for s, st in zip(arr.shape, arr.strides)) // max(arr.itemsize, 1)


def _vector_aligned(a, vec: int, index=None) -> bool:
    """Whether ``vec``-wide vector accesses along the last dim of ``a`` are legal: unit inner
    stride, other strides multiples of ``vec`` (those ``index`` reads at all: a flattened
    domain's run reads the others at 0), base pointer aligned to the vector."""
    st = [x // a.itemsize for x in a.strides]
    used = [x for d, x in enumerate(st[:-1]) if index is None or not (isinstance(index[d], K.ILit) and index[d].value == 0)]
    return st[-1] == 1 and not any(x % vec for x in used) and not a.data.ptr % (vec * a.itemsize)


def _element_strides(arrays) -> list:
    """Each array's strides in elements."""
    return [tuple(x // a.itemsize for x in a.strides) for a in arrays]


class _Launcher(LauncherBase):
    """One group's CUDA C kernel: a variant per stride/alignment pattern (vector width,
    32/64-bit index math, row or column reduction, register caching)."""

    def __init__(self, group, kir: K.KernelIR, arch: str, cache):
        super().__init__(group, kir, arch, cache)
        self.vec_ok = shapes.vector_ok(kir)
        self.lane_vec_ok = self.vec_ok or shapes.vector_ok(kir, lanes=True)

    flat = False        # a flattened domain's launcher (_flat_domain): its last units may be a tail
    tile = None         # an autotune tile (CudaProgram.set_tile; runtime.cuda_tiles); None: heuristic
    tile_note = None    # why the last build ignored ``tile`` (None: applied, or no tile)

    def kir_for(self, variant) -> K.KernelIR:
        """The kernel IR ``variant`` renders: a variance's two passes folded into one
        (codegen.variance) and independent reductions in one pass (codegen.phase_merge) where
        the variant reads its rows from memory again in every pass (a column pass, or rows not
        held in registers), else the group's own."""
        rereads = variant.mode == "col" or (variant.mode == "row" and not variant.cache_k and not variant.packed)
        if rereads and variant.mode == "row" and not (variant.stage or variant.grid_sync):
            return self._streamed
        return self._folded if rereads and not variant.stage else self.kir

    @functools.cached_property
    def _folded(self) -> K.KernelIR:
        """The group's kernel IR with its variances folded and its independent reductions joined
        (built with the kernel, read again by the grid-synchronised launch for its workspace size)."""
        return rereading_form(self.kir)

    @functools.cached_property
    def _streamed(self) -> K.KernelIR:
        """:attr:`_folded` with a row's maximum and its sum of exponentials in one pass
        (codegen.online_softmax: a block a row, re-reading it in every pass)."""
        return merge_independent_phases(online_max_sum(self._folded))

    def _build(self, ins, outs, props, chosen=None) -> tuple:
        """``chosen``: this launcher's ``variant_for(ins, outs, props)``, where known already."""
        contiguous = self._contiguous_reads(ins)
        if contiguous is not None:      # (its kernel: the same parameters, simpler load indices)
            return contiguous._build(ins, outs, props)
        variant, grid = chosen or self.variant_for(ins, outs, props)
        if variant.mode == "elementwise" and (variant.vec == 1 or not self.vec_ok) and self.tile is None:
            flat = self._flat_domain(ins, outs)
            flat_choice = None if flat is None else flat.variant_for(ins, outs, props)
            if flat_choice is not None and flat_choice[0].vec > 1:
                return flat._build(ins, outs, props, flat_choice)
        kernel = self.emit(variant, lambda: emitted_kernel(self.kir_for(variant), variant, self.cache))
        func = _function(kernel, props["device_id"], self.arch, self.cache)
        pct = row_carveout(variant, props.get("name", ""), shapes.writes_rows(self.kir))
        if pct is not None:
            set_carveout(func, pct, variant.block, props)
        return kernel, func, grid, variant.block

    def _flat_domain(self, ins, outs):
        """The launcher of this group's kernel IR over its domain flattened (codegen.flat_domain)
        where these arrays' strides make every store and every full-size load one contiguous run
        (operands broadcast along a dim read lane by lane); else None."""
        if self.flat:
            return None
        n = math.prod(self.extent(d) for d in range(len(self.kir.domain)))
        kir = flatten_domain(self.kir, _element_strides(ins), _element_strides(outs), self.size_of)
        if kir is None:
            return None
        for s in kir.phases[0].pre:
            if isinstance(s, (K.Load, K.Store)) and not shapes.vector_access(s.index, "i0"):
                if isinstance(s, K.Store) or ins[s.buf].size * FLAT_BROADCAST_MAX > n:
                    return None     # a full-size access still decomposed: element by element anyway
        child = self._child(kir)
        child.flat = True
        return child

    def _child(self, kir: K.KernelIR) -> "_Launcher":
        """The launcher of ``kir``, a per-call rewrite of this group's kernel IR, made once. Its
        emitted kernels are kept with this launcher's (``emitted``, shared across the sizes of a
        shape class), under the rewrite's loops and statements: the rest of ``kir`` is this
        group's kernel IR, whose form is the same at every size sharing them."""
        children = self.__dict__.setdefault("_children", {})
        key = (kir.domain, kir.outer, kir.inner, kir.phases)
        child = children.get(key)
        if child is None:
            child = children[key] = type(self)(self.group, kir, self.arch, self.cache)
            child.emitted = self.emitted.setdefault(("child", *key), {})
        return child

    def _contiguous_reads(self, ins):
        """The launcher of this group's kernel IR with the reshaped reads these inputs' strides
        make contiguous read as such (codegen.reshape_index), or None where none is; one a
        rewritten IR, sharing this launcher's tile."""
        kir = collapse_contiguous_reshapes(self.kir, _element_strides(ins), self.size_of)
        if kir is self.kir:
            return None
        child = self._child(kir)
        child.tile = self.tile
        return child

    def _finish(self, ins, outs, props, kernel):
        """A two-stage reduction's launches: the chunks' kernel into a workspace, then a block a
        row combining its chunks in a fixed order and finishing the row (Variant.split)."""
        v = kernel.variant
        if not v.split:
            return None
        import cupy
        if v.grid_sync:
            return self._grid_sync_run(kernel)
        rows = cuda_tiles.geometry(self, 1).units
        if v.mode == "scan":        # stage 2: the same (row, chunk) warps, each from the chunks before it
            n_acc = len(K.scans(self.kir.phases[0].body))
            v2 = dataclasses.replace(v, stage=2)
            grid2 = (max(1, min(-(-(rows * v.split) // 4), INT32_LIMIT // 2)),)
        else:
            n_acc = len(next(ph for ph in self.kir.phases if ph.has_loop).accs)
            v2 = shapes.Variant("row", 1, v.idx64, 0, 128, 2, split=v.split, stage=2)
            grid2 = (max(1, min(rows, INT32_LIMIT // 2)),)
        # (kir_for(v2) is the group's own kernel IR: a second stage re-reads nothing)
        k2 = self.emit(v2, lambda: emitted_kernel(self.kir, v2, self.cache))
        f2 = _function(k2, props["device_id"], self.arch, self.cache)
        tail2 = scalar_args(self.tail(ins, outs, k2))
        nbytes = rows * v.split * n_acc * shapes.SPLIT_SLOT

        def run(func, grid, block, tail, ins, outs):
            ws = cupy.empty(nbytes, cupy.uint8)
            func(grid, block, (*outs, *ins, *tail, ws))
            f2(grid2, (128,), (*outs, *ins, *tail2, ws))
        return run

    def _grid_sync_run(self, kernel):
        """Variant.grid_sync's launch: a workspace (the barrier's counter, zeroed on the stream, then
        the chunks' accumulators) and a cooperative launch, which fails rather than start a grid
        whose blocks cannot all be resident (the barrier would wait for them forever)."""
        import cupy
        v = kernel.variant
        rows = cuda_tiles.geometry(self, 1).units
        n_acc = sum(len(ph.accs) for ph in self.kir_for(v).phases)
        slots = v.split + grid_combine_groups(v.split)      # the chunks', then the groups' (if two levels)
        nbytes = shapes.GRID_SYNC_HEAD + rows * slots * n_acc * shapes.SPLIT_SLOT

        def run(func, grid, block, tail, ins, outs):
            ws = cupy.empty(nbytes, cupy.uint8)
            stream = cupy.cuda.get_current_stream()
            cupy.cuda.runtime.memsetAsync(ws.data.ptr, 0, shapes.GRID_SYNC_HEAD, stream.ptr)
            func(grid, block, (*outs, *ins, *tail, ws), enable_cooperative_groups=True)
        return run

    def tail(self, ins, outs, kernel) -> list:
        """The scalars ``kernel`` declares (CudaKernel.scalars) of the conventional tail."""
        return kernel.keep_scalars(super().tail(ins, outs, kernel))

    def extra_args(self, kernel) -> list:
        """The (multiplier, shift) pair of each of ``kernel``'s 32-bit index divisors."""
        out = []
        for d, vec in kernel.divisors:
            out += [np.uint32(x) for x in fast_divisor((self.size_of[d] if isinstance(d, str) else self.extent(d)) // vec)]
        return out

    def variant_for(self, ins, outs, props) -> tuple:
        """``(Variant, grid)`` for these arrays: the heuristic's, overridden by ``self.tile``."""
        kir = self.kir
        sm = props["sm_count"]
        big = bool(max([_max_offset(a) for a in ins + outs] + [math.prod(self.extent(d) for d in range(len(kir.domain)))]
                  + [s.value for s in kir.sizes] + [0]) >= INT32_LIMIT // 2)
        if kir.kind in ROW_KINDS:
            variant, grid = self._reduce_variant(ins, outs, big, sm)
        else:
            known = cost.known_device(props.get("name", ""))
            variant, grid = self._tile_variant(ins, outs, big, sm) if not self.vec_ok else (None, 0)
            if variant is None:
                variant, grid = self._ew_variant(ins, outs, big, sm, known.multi_stream_tile if known else None)
        if self.tile is not None and variant.split:     # only its own shape (the tuner's reference) fits
            own = cuda_tiles.tile_params(variant, grid, cuda_tiles.geometry(self, sm))
            self.tile_note = None if (self.tile.kind, dict(self.tile.params)) == own else \
                "a two-stage reduction: no tile applies"
        elif self.tile is not None:
            variant, grid, self.tile_note = cuda_tiles.apply_tile(
                self.tile, variant, grid, cuda_tiles.geometry(self, sm))
        if variant.peel and variant.vec == 1:   # (a tile's vector width of 1 reads every element alike)
            variant = dataclasses.replace(variant, peel=False)
        exact = self._covers(variant, grid)
        return (variant if exact == variant.exact else dataclasses.replace(variant, exact=exact)), grid

    def _covers(self, v, grid) -> bool:
        """Whether ``grid`` blocks of ``v`` cover the domain once, exactly (Variant.exact)."""
        g = cuda_tiles.geometry(self, 1)   # elementwise: units = elements; reduce: units = rows
        if v.mode == "elementwise":
            if v.ept == 1 and not v.exact:   # 1 unit a thread loops unless its StreamTile says one pass:
                return False                 # 16-byte P6 ran 0.4431/0.4430 ms exact vs 0.4410 looped (H200)
            return g.units % v.vec == 0 and grid * v.block * v.ept == g.units // v.vec
        if v.mode == "row" and v.cache_k and not v.peel:
            return grid == g.units and g.row_len % v.vec == 0 and g.row_len // v.vec == v.cache_k * v.block
        return False

    def _tile_variant(self, ins, outs, big, sm):
        """``(Variant, grid)`` of the 2-D tile schedule (codegen.cuda_tile2d) where some loads run
        contiguously along another dim than the output's last one (a transposed or permuted
        operand): those loads staged through shared memory; ``(None, 0)`` where none does, or
        the plane is too small for tiles. Not for a kernel writing an argument in place."""
        kir = self.kir
        dims = kir.loop_dims(range(len(kir.domain)))
        if kir.kind != GroupKind.ELEMENTWISE or kir.in_place or len(dims) < 2:
            return None, 0
        dl = f"i{dims[-1]}"
        along = {}      # dim -> the loads contiguous along it
        for s in tile_loads(kir):
            a = ins[s.buf]
            for var, comp in load_axes(s).items():
                if abs(a.strides[comp]) == a.itemsize and a.shape[comp] > 1:
                    along.setdefault(int(var[1:]), []).append(s.dst)
        cands = [(len(v), d) for d, v in along.items() if f"i{d}" != dl and self.extent(d) >= TILE_MIN_EXTENT]
        if not cands or self.extent(dims[-1]) < TILE_MIN_EXTENT:
            return None, 0
        dt = max(cands)[1]
        staged = tuple(x for x in along[dt] if x not in along.get(dims[-1], ()))
        sizes = [ins[s.buf].itemsize for s in tile_loads(kir) if s.dst in staged]
        side = TILE_WIDE if stage_bytes(TILE_WIDE, sizes) <= STAGE_BYTES else TILE
        tiles = math.prod(-(-self.extent(d) // side) if d in (dt, dims[-1]) else self.extent(d) for d in dims)
        vec = self._tile_vec(ins, outs, dt, dims[-1], staged, side)
        return (shapes.Variant("tile", vec, big, 0, 256, tile_t=dt, staged=staged, side=side),
                max(1, min(tiles, sm * TILE_BLOCKS_PER_SM)))

    def _tile_vec(self, ins, outs, dt: int, dl: int, staged: tuple, side: int, block: int = 256) -> int:
        """The vector width of a tile schedule's accesses (codegen.cuda_tile2d ``tile2d_vec``): 16
        bytes of the widest element where both extents are whole vectors and every staged load
        (along ``t``), every other load using ``l`` and every store (along ``l``) is contiguous and
        aligned; else 1."""
        vec = 16 // shapes.max_itemsize(self.kir)
        if vec < 2 or vec * block > side * side or self.extent(dt) % vec or self.extent(dl) % vec:
            return 1
        for s in self.kir.phases[0].pre:
            if not isinstance(s, (K.Load, K.Store)):
                continue
            along = f"i{dt}" if isinstance(s, K.Load) and s.dst in staged else f"i{dl}"
            if isinstance(s, K.Load) and along not in set().union(*map(K.expr_vars, s.index)):
                continue                        # read once for a vector's lanes
            a = ins[s.buf] if isinstance(s, K.Load) else outs[s.buf]
            if not (shapes.vector_access(s.index, along) and _vector_aligned(a, vec, s.index)
                    and self._offset_aligned(s.index, along, vec)):
                return 1
        return vec

    def _offset_aligned(self, index, last: str, vec: int) -> bool:
        """Whether a vector access's offset along ``last`` (a slice's start) is a whole number of
        vectors at this call's sizes."""
        off = shapes.vector_offset(index, last)
        if off is None:         # an offset of loop variables too (a reshaped input read contiguously)
            off = K.unit_offset(index[-1], last)
            return off is not None and shapes.multiple_of(off, vec, self.size_of)
        return K.eval_expr(off, self.size_of) % vec == 0

    def _ew_variant(self, ins, outs, big, sm, multi_stream_tile=None):
        """The elementwise shape: 16-byte vector units where every access allows them, 128 threads;
        ``multi_stream_tile`` (the device's ``cost.StreamTile``) replaces that for the kernels
        moving as many full-size arrays as it names."""
        kir = self.kir
        dims = kir.loop_dims(range(len(kir.domain)))
        vec = 1
        if self.lane_vec_ok and dims:
            vec = max(1, 16 // shapes.lane_itemsize(kir))
            last = f"i{dims[-1]}"
            if self.extent(dims[-1]) % vec and not self.flat:    # (a flat domain's last few: a tail)
                vec = 1
            for s in kir.phases[0].pre:
                if vec == 1:
                    break
                if isinstance(s, (K.Load, K.Store)) and shapes.vector_access(s.index, last):
                    if not (_vector_aligned(ins[s.buf] if isinstance(s, K.Load) else outs[s.buf], vec, s.index)
                            and self._offset_aligned(s.index, last, vec)):
                        vec = 1
        total = math.prod(self.extent(d) for d in dims) if dims else 1
        block, min_blocks, one_pass = EW_BLOCK, MIN_BLOCKS, False
        # heavy arithmetic for its bytes: more units a thread, up to 8 elements (f16 GEGLU: 0.097 ms, 0.101 at 2)
        ept = (EW_HEAVY_UNITS if vec <= 4 and shapes.flops_per_byte(kir) >= shapes.HEAVY_FLOPS_PER_BYTE
               else EW_UNITS_PER_THREAD)
        st = multi_stream_tile
        if st and vec > 1:      # (a StreamTile's own shape, one unit a thread: haversine_f64 0.235 ms, 0.247 at 2)
            reads = len({id(a) for a in ins if math.prod(a.shape) == total})
            if reads + len(outs) >= st.streams and reads >= st.inputs:
                vec = max(1, min(vec, st.vector_bytes // shapes.lane_itemsize(kir)))
                block, min_blocks, one_pass, ept = st.threads, st.min_blocks, st.one_pass, 1
        units, tail = total // vec, total % vec > 0
        ept = ept if units >= block * ept * sm else 1
        cap = INT32_LIMIT if one_pass else sm * EW_BLOCKS_PER_SM     # one pass: a block per block's units
        grid = max(1, min(-(-units // (block * ept)), cap))
        return shapes.Variant("elementwise", vec, big, 0, block, ept=ept, stream=STREAM and vec > 1,
                                  min_blocks=min_blocks, exact=one_pass and not tail, tail=tail), grid

    def _scan_variant(self, ins, big, sm, n_rows, L):
        """A column scan: a thread a column, in order (coalesced across threads). Contiguous rows:
        lanes of a warp a row (codegen.cuda_scan); rows too few to fill the GPU in chunks, two stages."""
        if self.column_reduction(ins):
            return shapes.Variant("col", 1, big, 0, 128), max(1, min(-(-n_rows // 128), sm * 16))
        lanes, vec, packed = shapes.scan_shape(L, shapes.max_itemsize(self.kir))
        warps = -(-n_rows // (32 // lanes * (vec if packed else 1)))
        chunks = min(-(-(SCAN_WARPS_PER_SM * sm) // n_rows), L // (32 * vec * SCAN_MIN_UNITS), SPLIT_MAX)
        if 4 * warps < SCAN_WARPS_PER_SM * sm and lanes == 32 and chunks >= 2 and shapes.scan_split_ok(self.kir):
            return (shapes.Variant("scan", vec, big, 0, 128, split=chunks, stage=1, lanes=32),
                    max(1, min(-(-(n_rows * chunks) // 4), INT32_LIMIT // 2)))
        return (shapes.Variant("scan", vec, big, 0, 128, lanes=lanes, packed=packed),
                max(1, min(-(-warps // 4), sm * 16)))

    def _reduce_variant(self, ins, outs, big, sm):
        kir = self.kir
        outer = kir.loop_dims(kir.outer)
        inner = kir.loop_dims(kir.inner)
        n_rows = math.prod(self.extent(d) for d in outer) if outer else 1
        L = math.prod(self.extent(d) for d in inner) if inner else 1
        if K.has_scan(kir):
            return self._scan_variant(ins, big, sm, n_rows, L)
        if self.column_reduction(ins):
            blocks = -(-n_rows // 128)
            chunks = col_chunks(n_rows, L, sm)
            if chunks >= 2 and shapes.split_ok(kir):
                return (shapes.Variant("col", 1, big, 0, 128, split=chunks, stage=1),
                        -(-(n_rows * chunks) // 128))
            # several passes (statistics, then their use): chunks of columns meet at grid barriers,
            # every block resident (launch bounds for COL_GRID_SYNC_BLOCKS_PER_SM 128-thread blocks a SM)
            chunks = col_grid_chunks(n_rows, L, sm)
            if chunks >= 2 and shapes.grid_sync_ok(kir):
                return (shapes.Variant("col", 1, big, 0, 128, min_blocks=COL_GRID_SYNC_BLOCKS_PER_SM,
                                          split=chunks, grid_sync=True), -(-(n_rows * chunks) // 128))
            return shapes.Variant("col", 1, big, 0, 128), max(1, min(blocks, sm * 16))
        vec, peel = self._row_vec(ins, outs, inner, L)
        gathers = any(isinstance(s, K.Load) and K.gathers(s.index) for ph in kir.phases for s in ph.body)
        chunks = row_chunks(n_rows, L // vec, gathers, sm)
        if chunks >= 2 and shapes.split_ok(kir):
            return shapes.Variant("row", vec, big, 0, ROW_SPLIT_BLOCK, 2, split=chunks, stage=1, peel=peel), n_rows * chunks
        # several passes over rows too few to fill the GPU (x / abs(x).max(), a global norm's scale):
        # a row's chunks meet at grid barriers, every block resident
        chunks = row_grid_chunks(n_rows, L // vec, gathers, sm)
        if chunks >= 2 and shapes.grid_sync_ok(kir):
            return (shapes.Variant("row", vec, big, 0, ROW_SPLIT_BLOCK, 2, min_blocks=GRID_SYNC_BLOCKS_PER_SM * 128 // ROW_SPLIT_BLOCK,
                                      split=chunks, grid_sync=True, peel=peel), n_rows * chunks)
        units = L // vec
        if units <= PACKED_ROW_UNITS:   # short rows: several a warp, each on the fewest lanes covering it
            per_lane = -(-units // PACKED_UNITS_PER_LANE)
            lanes = 1 if units <= THREAD_ROW_UNITS else min(32, 1 << max(0, per_lane - 1).bit_length())
            kc = -(-units // lanes) if PACKED_HELD else 0     # the row held in registers, read once
            return (shapes.Variant("row", vec, big, kc, 128, ROW_BARRIERS, lanes=lanes, packed=True, peel=peel),
                    max(1, min(-(-n_rows // (128 // lanes)), sm * PACKED_ROW_BLOCKS_PER_SM)))
        if units > STREAMED_MIN_UNITS and vec > 1 and self._streamed is not self._folded:
            # a row too long to hold on chip whose max and sum of exp join one pass: stream it
            # (not element by element: a 50257-wide logsumexp ran 0.79 ms so, 0.70 in two passes)
            block = ONLINE_BLOCK_WRITES if shapes.writes_rows(kir) else ONLINE_BLOCK
            return shapes.Variant("row", vec, big, 0, block, ROW_BARRIERS, peel=peel), max(1, min(n_rows, INT32_LIMIT // 2))
        # (a costly op computed alike by several passes is held, not reloaded: codegen.cuda_rows)
        bufs = shapes.reloaded_buffers(kir)
        reload = (ROW_RELOAD and vec > 1 and shapes.reload_pays(kir) and not shapes.recomputed_values(kir)
                  and (len(bufs) < 2 or L * sum(bufs.values()) <= ROW_RELOAD_MAX_BYTES))
        block, kc = shapes.row_shape(L // vec, ROW_RELOAD_UNITS if reload else ROW_UNITS_PER_THREAD)
        reload = reload and kc > 0
        if not reload and ROW_LONG_UNITS < units <= 4 * ROW_LONG_UNITS:
            block, kc = ROW_LONG_BLOCK, cuda_tiles.row_slots(L, ROW_LONG_BLOCK, vec)
        cap = sm * max(1, ROW_BLOCKS_PER_SM * 256 // block) if ROW_BLOCKS_PER_SM else INT32_LIMIT // 2
        grid = max(1, min(n_rows, cap))
        return shapes.Variant("row", vec, big, kc, block, ROW_BARRIERS, stream=STREAM and vec > 1 and kc > 0,
                                  min_blocks=MIN_BLOCKS * 256 // block, reload=reload, peel=peel), grid

    def _row_vec(self, ins, outs, inner: list, L: int) -> tuple[int, bool]:
        """(vector width, Variant.peel) of a row kernel: 16 bytes of the widest element where every
        row access along the row is contiguous and aligned (rows a whole number of vectors, views
        starting on one), and each blockwise load (a per-channel weight) reads one element a unit;
        where only the alignment fails (odd row lengths, a view's offset) the same width with each
        row's head and tail element by element (codegen.cuda_peel), for rows of at least
        ``PEEL_MIN_UNITS`` vectors; else 1."""
        kir = self.kir
        va = shapes.vector_accesses(kir)
        if va is None or not inner:
            return 1, False
        vec = max(1, 16 // shapes.lane_itemsize(kir))
        arrays = [(ins[s.buf] if isinstance(s, K.Load) else outs[s.buf], s) for s in va[1]]
        if not shapes.blockwise_fits(kir, vec, self.size_of):
            return 1, False         # a blockwise load (a per-channel weight) would change within a unit
        if not self.extent(inner[-1]) % vec and all(_vector_aligned(a, vec) and self._offset_aligned(s.index, va[0], vec)
                                                    for a, s in arrays):
            return vec, False
        peel = (ROW_PEEL and vec > 1 and L // vec >= PEEL_MIN_UNITS and shapes.peel_fits(kir) is None
                and (ROW_PEEL_PACKED or L // vec > PACKED_ROW_UNITS)
                and all(a.strides[-1] == a.itemsize and not a.data.ptr % a.itemsize for a, _ in arrays))
        return (vec, True) if peel else (1, False)


class CudaProgram(GpuProgram):
    """A compiled plan: ``program(list_of_arrays) -> list_of_arrays`` (graph order in and out)."""

    def __init__(self, plan, cache=None, arch: str | None = None):
        super().__init__(plan, [lower_group(g) for g in plan.groups], cache, arch)

    def _launcher(self, group, kir) -> _Launcher:
        launcher = _Launcher(group, kir, self.arch, self.cache)
        launcher.tile = getattr(self, "_tiles", {}).get(group.id)
        return launcher

    def set_tile(self, group_id: int, tile) -> None:
        """Launch group ``group_id`` with an autotune ``tile`` (``runtime.cuda_tiles``); None
        restores the heuristic. A tile that does not fit a call is ignored for that call."""
        tiles = self.__dict__.setdefault("_tiles", {})
        if tile is None:
            tiles.pop(group_id, None)
        else:
            tiles[group_id] = tile
        for launcher in self.launchers or ():
            if launcher.group.id == group_id:
                launcher.tile, launcher.tile_note = tile, None
                launcher._variants.clear()

    @property
    def stages(self) -> dict[str, str]:
        """Printable stages: "kernel" (KernelIR), "cuda" (default variants; for a matmul group the
        fused GEMM or GEMM-epilogue kernel the plan runs, when it has one), "ptx"."""
        if self._stages is None:
            from ..codegen.gemm_wgmma import arch_for
            from .attention import kernel_for
            from .gemm import group_sources
            sources = []            # (CUDA C, the arch it compiles for)
            for g, k in zip(self.plan.groups, self.kirs):
                if k.attention is not None:         # the kernel this arch runs (wgmma on sm_90)
                    src, _, arch = kernel_for(k.attention.spec, int(self.arch[3:].rstrip("a")))
                    sources.append((src, arch))
                    continue
                gemm = group_sources(g, k, self.arch) if k.contraction is not None else []
                sources += [(src, arch_for(src, self.arch)) for src in gemm or [_emit(k)]]
            self._stages = {
                "kernel": "\n\n".join(k.as_text() for k in self.kirs),
                "cuda": "\n\n".join(src for src, _ in sources),
                "ptx": "\n\n".join(compile_source(src, arch, self.cache).ptx for src, arch in sources),
            }
        return self._stages


def compile_plan(plan, cache=None) -> CudaProgram:
    """Compile every group of ``plan`` for the current GPU (or sm_90 without one, for dumps);
    ``cache`` is the kernel store (``runtime.cache.KernelStore``) or None."""
    return CudaProgram(plan, cache=cache)
