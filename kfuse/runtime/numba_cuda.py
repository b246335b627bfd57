"""The Numba-CUDA runtime: compile a fusion Plan with ``kfuse.codegen.numba_cuda`` and launch on CuPy arrays.

``compile_plan(plan)`` lowers every group (``codegen.lower.lower_group``, the same KernelIR as the
CUDA C path), emits numba.cuda Python source per kernel variant, compiles it to PTX with
``numba.cuda.compile_ptx`` (libNVVM; numba-cuda 0.30.4 with a CUDA 13.0 NVVM emits PTX ISA 9.0, which
the CUDA 13.0 driver JIT-compiles to the device's exact arch), loads the PTX as a CuPy module (the
driver's JIT makes the CUBIN; memoised process-wide per device and source text) and launches it with
CuPy on the current stream. The kernels take raw pointers, sizes and element strides in the same
order as the NVRTC kernels (outputs, inputs, sizes, input strides, output strides), so the launch is
CuPy's ``Function.__call__``: no numba dispatcher is on the call path. A scatter kernel's output
starts as a copy of its base, or is the base's own buffer (a dead intermediate, or the argument the
call updates, once its index checks passed: ``gpu_launch``); a ``ufunc.at`` that no numba atomic
computes exactly is refused when the plan is compiled (``codegen.numba_cuda_scatter``).

Importing numba.cuda fails with NumPy >= 2.5 (numba-cuda 0.30): :func:`compile_plan` raises one
:class:`~kfuse.errors.DeviceError` naming the versions and the fix;
``codegen.numba_cuda.numba_cuda_available()`` reports it.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..codegen import kernel_ir as K
from ..codegen import numba_cuda as nc
from ..codegen.lower import lower_group
from ..codegen.numba_cuda_scatter import refuse_unsupported
from ..errors import UnsupportedError
from ..fusion.kinds import ROW_KINDS, GroupKind
from . import gpu_store
from .gpu_launch import GpuProgram, LauncherBase, fast_divisor

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


class _Launcher(LauncherBase):
    """One group's Numba-CUDA kernel: a variant per argument pattern (elementwise, row, column)."""

    def _build(self, ins, outs, props) -> tuple:
        sm = props["sm_count"]
        variant, grid = self._reduce(ins, sm) if self.kir.kind in ROW_KINDS else self._ew(sm)
        src = self.emit(variant, lambda: nc.emit(self.kir, variant))
        return variant, _function(src, props["device_id"], self.arch, self.cache), grid, variant.block

    def _ew(self, sm):
        kir = self.kir
        dims = kir.loop_dims(range(len(kir.domain)))
        total = math.prod(self.extent(d) for d in dims) if dims else 1
        ilp = 4 if total >= 4 * 256 * sm else 1
        grid = max(1, min(-(-total // 256), sm * 8))
        return nc.NVariant("elementwise", ilp, 0, 256, fastdiv=nc.fastdiv_fits(kir, total)), grid

    def extra_args(self, variant) -> list:
        """A fastdiv kernel's (multiplier, shift) pair for each dim it divides by."""
        if not variant.fastdiv:
            return []
        return [np.uint32(x) for d in nc.fast_div_dims(self.kir) for x in fast_divisor(self.extent(d))]

    def _reduce(self, ins, sm):
        kir = self.kir
        outer, inner = kir.loop_dims(kir.outer), kir.loop_dims(kir.inner)
        n_rows = math.prod(self.extent(d) for d in outer) if outer else 1
        L = math.prod(self.extent(d) for d in inner) if inner else 1
        if K.has_scan(kir) or self.column_reduction(ins):       # a scan: a thread a row, in order
            return nc.NVariant("col", 1, 0, 128), max(1, min(-(-n_rows // 128), sm * 16))
        v = nc.row_variant(L)
        return v, max(1, min(n_rows, sm * max(1, 2048 // v.block)))


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
