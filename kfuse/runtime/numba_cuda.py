"""The Numba-CUDA runtime: compile a fusion Plan with ``kfuse.codegen.numba_cuda`` and launch on CuPy arrays.

``compile_plan(plan)`` lowers every group (``codegen.cuda.lower_for_cuda``, the same KernelIR as the
CUDA C path), emits numba.cuda Python source per kernel variant, compiles it to PTX with
``numba.cuda.compile_ptx`` (libNVVM; numba-cuda 0.30.4 with a CUDA 13.0 NVVM emits PTX ISA 9.0, which
the CUDA 13.0 driver JIT-compiles to the device's exact arch), loads the PTX as a CuPy module (the
driver's JIT makes the CUBIN; memoised process-wide per device and source text) and launches it with
CuPy on the current stream. The kernels take raw pointers, sizes and element strides in the same
order as the NVRTC kernels (outputs, inputs, sizes, input strides, output strides), so the launch is
CuPy's ``Function.__call__``: no numba dispatcher is on the call path.

Importing numba.cuda fails with NumPy >= 2.5 (numba-cuda 0.30): :func:`compile_plan` raises one
:class:`~kfuse.errors.DeviceError` naming the versions and the fix; ``available()`` reports it.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..codegen import kernel_ir as K
from ..codegen import numba_cuda as nc
from ..codegen.cuda import lower_for_cuda as lower_group
from ..errors import DeviceError, UnsupportedError
from ..ir.ops import Op
from . import device as devmod
from . import interop

_LOADED: dict = {}          # (device, source) -> (module, function, seconds to load)
COMPILE_SECONDS: dict = {}  # source -> seconds spent in compile_ptx (for benchmarks)


def available() -> tuple[bool, str]:
    """Whether this backend can run here: numba.cuda imports and a GPU is visible."""
    ok, why = nc.numba_cuda_available()
    if not ok:
        return False, why
    if not devmod.has_gpu():
        return False, "kfuse: no CUDA GPU / CuPy for the numba-cuda backend"
    return True, ""


def ptx_for(source: str, arch: str, cache=None) -> str:
    key = ("numba-cuda", source, arch)
    if cache is not None and hasattr(cache, "get"):
        try:
            hit = cache.get(key)
            if isinstance(hit, str):
                return hit
        except Exception:
            pass
    t = time.perf_counter()
    ptx = nc.compile_ptx(source, nc.FN_NAME, arch)
    COMPILE_SECONDS.setdefault(source, time.perf_counter() - t)
    if cache is not None and hasattr(cache, "__setitem__"):
        try:
            cache[key] = ptx
        except Exception:
            pass
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


class _Launcher:
    """One group's kernel: picks a variant per stride pattern and launches it."""

    def __init__(self, group, kir: K.KernelIR, arch: str, cache):
        self.group, self.kir, self.arch, self.cache = group, kir, arch, cache
        self.sizes = tuple(np.int64(s.value) for s in kir.sizes)
        self.size_of = {s.name: s.value for s in kir.sizes}
        self._variants: dict = {}

    def extent(self, d: int) -> int:
        e = self.kir.domain[d]
        return e.value if isinstance(e, K.ILit) else self.size_of[e.name]

    def choose(self, ins, outs, props):
        key = tuple(a.strides for a in ins) + tuple(a.strides for a in outs)
        hit = self._variants.get(key)
        if hit is None:
            sm = props["sm_count"]
            variant, grid = self._reduce(ins, sm) if self.kir.kind == "reduce" else self._ew(sm)
            src = nc.emit(self.kir, variant)
            hit = (variant, _function(src, props["device_id"], self.arch, self.cache), grid, src)
            self._variants[key] = hit
        return hit

    def _ew(self, sm):
        kir = self.kir
        dims = kir.loop_dims(range(len(kir.domain)))
        total = math.prod(self.extent(d) for d in dims) if dims else 1
        ilp = 4 if total >= 4 * 256 * sm else 1
        grid = max(1, min(-(-total // 256), sm * 8))
        return nc.NVariant("elementwise", ilp, 0, 256), grid

    def _reduce(self, ins, sm):
        kir = self.kir
        outer, inner = kir.loop_dims(kir.outer), kir.loop_dims(kir.inner)
        n_rows = math.prod(self.extent(d) for d in outer) if outer else 1
        L = math.prod(self.extent(d) for d in inner) if inner else 1
        col = False
        if outer and inner:
            lo, li = f"i{outer[-1]}", f"i{inner[-1]}"
            for ph in kir.phases:
                loads = [s for s in ph.body if isinstance(s, K.Load)]
                if loads:
                    s = loads[0]
                    a = ins[s.buf]
                    st = {e.name: a.strides[d] // a.itemsize for d, e in enumerate(s.index)
                          if isinstance(e, K.IVar)}
                    col = abs(st.get(lo, 0)) == 1 and abs(st.get(li, 0)) != 1
                    break
        if col:
            return nc.NVariant("col", 1, 0, 128), max(1, min(-(-n_rows // 128), sm * 16))
        v = nc.row_variant(L)
        return v, max(1, min(n_rows, sm * max(1, 2048 // v.block)))

    def __call__(self, ins, outs, props) -> None:
        # nothing to write only when every output is empty: a reduction over an empty axis still
        # writes its identity (any() of a (0,) array is False), so it must launch
        if all(o.size == 0 for o in outs):
            return
        variant, func, grid, _ = self.choose(ins, outs, props)
        args = list(outs) + list(ins) + list(self.sizes)
        for a in ins + outs:
            args += [np.int64(st // a.itemsize) for st in a.strides]
        func((grid,), (variant.block,), tuple(args))


class NumbaCudaProgram:
    """A compiled plan: ``program(list_of_arrays) -> list_of_arrays`` (graph order in and out)."""

    def __init__(self, plan, cache=None, arch: str | None = None):
        nc.import_numba_cuda()          # one clear DeviceError when numba.cuda cannot import
        self.plan, self.cache = plan, cache
        self.arch = arch or (devmod.arch() if devmod.has_gpu() else "sm_90")
        for g in plan.groups:
            if g.kind == "matmul":
                raise UnsupportedError("kfuse: matmul is not supported by the numba-cuda backend; use backend='cuda'")
        self.kirs = [lower_group(g) for g in plan.groups]
        self.launchers = None
        self._stages = None

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

    def __call__(self, arrays):
        import cupy
        graph = self.plan.graph
        if len(arrays) != len(graph.inputs):
            raise ValueError(f"kfuse: expected {len(graph.inputs)} arrays, got {len(arrays)}")
        arrs, kind, dev = interop.to_device_arrays(list(arrays))
        for a, n in zip(arrs, graph.inputs):
            if tuple(a.shape) != tuple(n.shape) or a.dtype != n.dtype:
                raise ValueError(f"kfuse: argument {n.attr('name')!r} is {a.dtype}{list(a.shape)}, "
                                 f"the program was compiled for {n.dtype}{list(n.shape)}")
        with cupy.cuda.Device(dev):
            props = devmod.device_properties(dev)
            if self.launchers is None:
                self.arch = props["arch"]
                self.launchers = [_Launcher(g, k, self.arch, self.cache)
                                  for g, k in zip(self.plan.groups, self.kirs)]
            env = {n: a for n, a in zip(graph.inputs, arrs)}
            for g, launch in zip(self.plan.groups, self.launchers):
                ins = [env[n] for n in g.inputs]
                outs = [cupy.empty(o.shape, o.dtype) for o in g.outputs]
                launch(ins, outs, props)
                env.update(zip(g.outputs, outs))
            results = []
            for o in graph.outputs:
                if o in env:
                    results.append(env[o])
                elif o.op is Op.CONST:
                    results.append(cupy.asarray(np.asarray(o.attr("value"), dtype=o.dtype)))
                else:
                    raise DeviceError(f"kfuse: output {o!r} was computed by no kernel of the plan")
        return interop.from_device_arrays(results, kind)


def compile_plan(plan, cache=None) -> NumbaCudaProgram:
    """Compile every group of ``plan`` for the current GPU (or sm_90 without one, for dumps)."""
    return NumbaCudaProgram(plan, cache=cache)
