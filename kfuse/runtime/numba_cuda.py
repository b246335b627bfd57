"""The Numba-CUDA runtime: compile a fusion Plan with ``kfuse.codegen.numba_cuda`` and launch on CuPy arrays.

``compile_plan(plan)`` lowers every group (``codegen.lower.lower_group``, the same KernelIR as the
CUDA C path), emits numba.cuda Python source per kernel variant, compiles it to PTX with
``numba.cuda.compile_ptx`` (libNVVM; numba-cuda 0.30.4 with a CUDA 13.0 NVVM emits PTX ISA 9.0, which
the CUDA 13.0 driver JIT-compiles to the device's exact arch), loads the PTX as a CuPy module (the
driver's JIT makes the CUBIN; memoised process-wide per device and source text) and launches it with
CuPy on the current stream. The kernels take raw pointers, sizes and element strides in the same
order as the NVRTC kernels (outputs, inputs, sizes, input strides, output strides), so the launch is
CuPy's ``Function.__call__``: no numba dispatcher is on the call path. Each call's schedule is the
CUDA C backend's (:class:`_Launcher` is ``runtime.cuda``'s launcher with another renderer), so a
rule that picks a schedule lands in both backends at once. A scatter kernel's output
starts as a copy of its base, or is the base's own buffer (a dead intermediate, or the argument the
call updates, once its index checks passed: ``gpu_launch``); a ``ufunc.at`` that no numba atomic
computes exactly is refused when the plan is compiled (``codegen.numba_cuda_scatter``).

Importing numba.cuda fails with NumPy >= 2.5 (numba-cuda 0.30): :func:`compile_plan` raises one
:class:`~kfuse.errors.DeviceError` naming the versions and the fix;
``codegen.numba_cuda.numba_cuda_available()`` reports it.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import time

import numpy as np

from ..codegen import kernel_ir as K
from ..codegen import numba_cuda as nc
from ..codegen.decompose import decompose
from ..codegen.lower import lower_group
from ..codegen.numba_cuda_scatter import refuse_unsupported
from ..errors import UnsupportedError
from ..fusion.kinds import GroupKind
from . import gpu_store
from . import cuda as rt_cuda
from ..codegen.cuda_shapes import GRID_SYNC_HEAD, SPLIT_SLOT, Variant, grid_combine_groups
from ..codegen.numba_cuda_rows import redo_free
from ..codegen.numba_cuda_scan import scan_renders
from .gpu_launch import GpuProgram, LauncherBase, fast_divisor, scalar_args

_LOADED: dict = {}          # (device, source) -> (module, function, seconds to load)
COMPILE_SECONDS: dict = {}  # source -> seconds spent in compile_ptx (for benchmarks)


def ptx_for(source: str, arch: str, cache=None) -> str:
    """The PTX of ``source`` for ``arch``, from the kernel store ``cache`` (``runtime.cache.
    KernelStore``, or None) or compiled now and stored."""
    ptx = gpu_store.load_ptx(cache, source, arch)
    if ptx is not None:
        return ptx
    t = time.perf_counter()
    ptx = nc.compile_ptx(source, nc.FN_NAME, arch)
    COMPILE_SECONDS.setdefault(source, time.perf_counter() - t)
    gpu_store.save_ptx(cache, source, arch, ptx)
    return ptx


def _function(source: str, dev_id: int, arch: str, cache=None):
    key = (dev_id, source)
    f = _LOADED.get(key)
    if f is None:
        import cupy
        ptx = ptx_for(source, arch, cache)
        t = time.perf_counter()
        mod = cupy.cuda.function.Module()
        mod.load(ptx.encode() + b"\0")          # the driver JITs PTX ISA 9.0 to a CUBIN for this GPU
        f = (mod, mod.get_function(nc.entry_name(ptx)), time.perf_counter() - t)
        _LOADED[key] = f
    return f[1]


class _Launcher(rt_cuda._Launcher):
    """One group's Numba-CUDA kernel. The schedule is the CUDA C backend's choice for the same
    arguments (``runtime.cuda._Launcher.variant_for``: vector width, a block a row or a thread a
    column, two stages or grid barriers for reductions too short of rows or columns to fill the
    GPU, a flattened domain, contiguous reshaped reads), rendered by ``codegen.numba_cuda`` as an
    :class:`~kfuse.codegen.numba_cuda.NVariant` (:meth:`_render`), packed short rows included
    (``lanes`` threads a row, several rows a block, shuffles among a row's lanes; a thread a row
    for rows of a few units), column loops unrolled as CUDA C's, their loads in flight
    together, scans along contiguous rows as lanes of a warp a row (``codegen.numba_cuda_scan``)
    and transposes through shared-memory tiles (``codegen.numba_cuda_tile2d``; not of complex
    values), rows re-loaded every reduction pass (``reload``; without CUDA C's L1 hints), peeled
    rows (not starting 16-byte aligned: ``codegen.numba_cuda_peel``), long rows whose maximum and
    sum of exponentials join one streamed pass (``codegen.online_softmax``: CUDA C's
    ``_streamed`` kernel IR and schedule). The parts it does not render yet are chosen as it did
    before: a chunked row not starting aligned element by element, and scans in two stages (few
    long rows) or of floating/complex products a thread a row."""

    def __init__(self, group, kir: K.KernelIR, arch: str, cache):
        super().__init__(group, kir, arch, cache)
        if not self._vectors:
            self.vec_ok = self.lane_vec_ok = False

    @functools.cached_property
    def _vectors(self) -> bool:
        """Whether 16-byte units render here: not for complex values (a vector of structs)."""
        return not any(b.dtype.startswith("complex") for b in self.kir.inputs + self.kir.outputs)

    def _tile_variant(self, ins, outs, big, sm):
        if not self._vectors:           # (no shared tiles of complex values here)
            return None, 0
        return super()._tile_variant(ins, outs, big, sm)

    def _row_vec(self, ins, outs, inner, L):
        return super()._row_vec(ins, outs, inner, L) if self._vectors else (1, False)

    def _scan_variant(self, ins, big, sm, n_rows, L):
        v, grid = super()._scan_variant(ins, big, sm, n_rows, L)
        if v.mode == "scan" and (v.split or not scan_renders(self.kir)):    # (not rendered: a thread a row)
            return Variant("col", 1, big, 0, 128), self._thread_rows_grid(sm)
        return v, grid

    def _build(self, ins, outs, props) -> tuple:
        contiguous = self._contiguous_reads(ins)
        if contiguous is not None:      # (its kernel: the same parameters, simpler load indices)
            return contiguous._build(ins, outs, props)
        variant, grid = self.variant_for(ins, outs, props)
        if variant.mode == "elementwise" and (variant.vec == 1 or not self.vec_ok):
            flat = self._flat_domain(ins, outs)
            if flat is not None and flat.variant_for(ins, outs, props)[0].vec > 1:
                return flat._build(ins, outs, props)
        sm = props["sm_count"]
        nv, grid = self._render(variant, grid, sm)
        func = self._load(variant, nv, props)
        if nv.grid_sync:                # every block resident, or a smaller split
            from cupy_backends.cuda.api import driver
            fit = driver.occupancyMaxActiveBlocksPerMultiprocessor(func.ptr, nv.block, 0) * sm
            if grid > fit:
                rows = self._rows()
                per = nv.block if nv.mode == "col" else 1
                split = min(nv.split, fit * per // max(1, rows))
                if split < 2:
                    nv, grid = self._render(dataclasses.replace(variant, split=0, grid_sync=False, min_blocks=0),
                                            grid, sm)
                else:
                    nv = dataclasses.replace(nv, split=split)
                    grid = rows * split if nv.mode == "row" else -(-(rows * split) // per)
                func = self._load(variant, nv, props)
        return nv, func, grid, nv.block

    def _load(self, variant, nv, props):
        src = self.emit((variant, nv), lambda: nc.emit(self.kir_for(variant), nv))
        return _function(src, props["device_id"], self.arch, self.cache)

    def _rows(self) -> int:
        kir = self.kir
        return math.prod(self.extent(d) for d in kir.loop_dims(kir.outer)) or 1

    @functools.cached_property
    def _size_divisors(self) -> tuple:
        """The sizes the kernel's index expressions divide by: with 32-bit index math, each a
        multiply-high by a host pair (``NVariant.divs``), as CUDA C's."""
        return tuple(nc.size_divisors(decompose(self.kir)))

    def _thread_rows_grid(self, sm: int) -> int:
        """The grid of a thread-a-row kernel (columns, scans, rows of a few units): 128-thread
        blocks, at most 16 a SM (the threads stride over the rest)."""
        return max(1, min(-(-self._rows() // 128), sm * 16))

    def _render(self, v, grid: int, sm: int) -> tuple:
        """``(NVariant, grid)``: the CUDA C schedule ``v`` as this emitter renders it."""
        kir = self.kir
        divs = () if v.idx64 else self._size_divisors
        if v.mode == "elementwise":
            dims = kir.loop_dims(range(len(kir.domain)))
            total = math.prod(self.extent(d) for d in dims) if dims else 1
            units = total // v.vec
            ilp = 4 if v.vec == 1 and units >= 4 * 256 * sm else v.ept     # (CUDA C's units a thread)
            return (nc.NVariant("elementwise", ilp, 0, v.block, fastdiv=nc.fastdiv_fits(kir, total), vec=v.vec,
                                tail=v.tail, divs=divs), max(1, min(-(-units // (v.block * ilp)), sm * 1024)))
        if v.mode == "tile":            # transposed operands through shared tiles (codegen.numba_cuda_tile2d)
            return (nc.NVariant("tile", 1, 0, v.block, vec=v.vec, tile_t=v.tile_t, staged=v.staged, side=v.side,
                                divs=divs), grid)
        if v.mode == "scan":            # lanes of a warp a row (codegen.numba_cuda_scan)
            return nc.NVariant("scan", 1, 0, v.block, vec=v.vec, lanes=v.lanes, packed=v.packed), grid
        if v.peel and (v.split or v.grid_sync):      # (a chunked row is not peeled here: element by element)
            v = dataclasses.replace(v, vec=1, peel=False)
        nv, grid = self._render_reduce(v, grid, sm)
        # 32-bit index math (CUDA C's, where no offset reaches 2^30): a row's and a unit's indices
        # unravelled by multiply-high, not by a 64-bit division routine a dim
        return dataclasses.replace(nv, fastdiv=not v.idx64 and bool(nc.fast_div_pairs(kir, nv))), grid

    def _render_reduce(self, v, grid: int, sm: int) -> tuple:
        """:meth:`_render` of a reduce schedule (no index math chosen yet)."""
        kir = self.kir
        chunked = (v.split or v.grid_sync) and redo_free(kir)
        if v.mode == "col":
            if chunked:
                return (nc.NVariant("col", 1, 0, 128, split=v.split, stage=v.stage, grid_sync=v.grid_sync,
                                    min_blocks=v.min_blocks), grid)
            return nc.NVariant("col", 1, 0, 128), self._thread_rows_grid(sm)
        if chunked:
            return (nc.NVariant("row", 1, 0, v.block, vec=v.vec, split=v.split, stage=v.stage,
                                grid_sync=v.grid_sync, min_blocks=v.min_blocks), grid)
        if not (v.packed or v.split or v.grid_sync):    # held in registers, or re-loaded a pass
            return nc.NVariant("row", 1, v.cache_k, v.block, vec=v.vec, reload=v.reload and v.cache_k > 0 and v.vec > 1,
                               exact=v.exact and v.cache_k > 0, peel=v.peel), grid
        if v.packed:    # short rows: block / lanes rows a block, lanes threads a row (1: a thread a row)
            return nc.NVariant("row", 1, v.cache_k, v.block, vec=v.vec, lanes=v.lanes, packed=True, peel=v.peel), grid
        L = math.prod(self.extent(d) for d in kir.loop_dims(kir.inner)) or 1
        nv = nc.row_variant(L)
        return nv, max(1, min(self._rows(), sm * max(1, 2048 // nv.block)))

    def _finish(self, ins, outs, props, nv):
        """A chunked reduction's launches: two stages through a workspace, or one cooperative
        launch whose workspace starts with the grid barrier's counter (zeroed on the stream)."""
        if not nv.workspace:
            return None
        import cupy
        rows = self._rows()
        kir = self.kir_for_nv(nv)
        n_acc = sum(len(ph.accs) for ph in kir.phases)
        if nv.grid_sync:        # the chunks' slots, then the groups' (two levels: grid_combine_groups)
            nbytes = GRID_SYNC_HEAD + rows * (nv.split + grid_combine_groups(nv.split)) * n_acc * SPLIT_SLOT

            def run(func, grid, block, tail, ins, outs):
                ws = cupy.empty(nbytes, cupy.uint8)
                stream = cupy.cuda.get_current_stream()
                cupy.cuda.runtime.memsetAsync(ws.data.ptr, 0, GRID_SYNC_HEAD, stream.ptr)
                func(grid, block, (*outs, *ins, *tail, ws), enable_cooperative_groups=True)
            return run
        nv2 = nc.NVariant("row", 1, 0, 128, split=nv.split, stage=2)
        src2 = self.emit((None, nv2), lambda: nc.emit(kir, nv2))
        f2 = _function(src2, props["device_id"], self.arch, self.cache)
        tail2 = scalar_args(self.tail(ins, outs, nv2))    # (its own: no divisor pairs)
        grid2 = (max(1, min(rows, rt_cuda.INT32_LIMIT // 2)),)
        nbytes = rows * nv.split * n_acc * SPLIT_SLOT

        def run(func, grid, block, tail, ins, outs):
            ws = cupy.empty(nbytes, cupy.uint8)
            func(grid, block, (*outs, *ins, *tail, ws))
            f2(grid2, (128,), (*outs, *ins, *tail2, ws))
        return run

    def kir_for_nv(self, nv) -> K.KernelIR:
        """The kernel IR a chunked variant renders (as ``kir_for`` gives it for the CUDA C one)."""
        return self._folded if nv.grid_sync else self.kir

    def tail(self, ins, outs, nv) -> list:
        return LauncherBase.tail(self, ins, outs, nv)

    def extra_args(self, nv) -> list:
        """A fastdiv kernel's (multiplier, shift) pair for each dim it divides by
        (``fast_div_pairs``: the innermost in units of ``nv.vec`` elements), then one for each
        size its index expressions divide by (``nv.divs``)."""
        out = []
        if nv.fastdiv:
            out += [np.uint32(x) for d, w in nc.fast_div_pairs(self.kir, nv) for x in fast_divisor(self.extent(d) // w)]
        return out + [np.uint32(x) for d in nv.divs for x in fast_divisor(self.size_of[d])]


MATMUL_REFUSED = "kfuse: matmul is not supported by the numba-cuda backend; use backend='cuda'"


def unsupported(plan) -> list[tuple]:
    """``(group, reason)`` for every group of ``plan`` this runtime cannot run: a matmul (no GEMM
    here), a ``ufunc.at`` no numba atomic computes exactly. The backend records them in the plan
    (``kfuse.explain`` shows them) and :class:`NumbaCudaProgram` refuses such a plan."""
    out = []
    for g in plan.groups:
        if g.kind == GroupKind.MATMUL:
            out.append((g, MATMUL_REFUSED))
            continue
        if g.kind != GroupKind.SCATTER:         # only a scatter's stores combine
            continue
        try:
            refuse_unsupported(lower_group(g))
        except UnsupportedError as e:
            out.append((g, str(e)))
    return out


class NumbaCudaProgram(GpuProgram):
    """A compiled plan: ``program(list_of_arrays) -> list_of_arrays`` (graph order in and out)."""

    def __init__(self, plan, cache=None, arch: str | None = None):
        nc.import_numba_cuda()          # one clear DeviceError when numba.cuda cannot import
        for _, why in unsupported(plan):
            raise UnsupportedError(why)
        super().__init__(plan, [lower_group(g) for g in plan.groups], cache, arch)

    def _launcher(self, group, kir) -> _Launcher:
        return _Launcher(group, kir, self.arch, self.cache)

    @property
    def stages(self) -> dict[str, str]:
        """Printable stages: "kernel" (KernelIR), "numba" (default variants' source), "ptx"."""
        if self._stages is None:
            srcs = [nc.emit(k) for k in self.kirs]
            self._stages = {
                "kernel": "\n\n".join(k.as_text() for k in self.kirs),
                "numba": "\n\n".join(srcs),
                "ptx": "\n\n".join(ptx_for(s, self.arch, self.cache) for s in srcs),
            }
        return self._stages


def compile_plan(plan, cache=None) -> NumbaCudaProgram:
    """Compile every group of ``plan`` for the current GPU (or sm_90 without one, for dumps)."""
    return NumbaCudaProgram(plan, cache=cache)
