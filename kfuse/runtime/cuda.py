"""The CUDA runtime: compile a fusion Plan to CUDA kernels and launch them on CuPy arrays.

``compile_plan(plan)`` lowers every group to KernelIR (``codegen.lower``), emits CUDA C
(``codegen.cuda``) and compiles it with NVRTC to a CUBIN for the device's exact arch (the PTX is
kept for dumps only: a CUDA 13.0 driver cannot JIT NVRTC 13.5's PTX). Calling the program picks a
kernel variant per call from the arrays' strides and alignment (vector width, 32/64-bit index
math, row/column reduction, register caching), loads the module once per source text (memoised
process-wide, so a new size never recompiles), and launches on the current CuPy stream.
Matmul groups run their contraction through ``cupy.matmul`` (cuBLAS) and the epilogue as a kernel.
"""
from __future__ import annotations

import math

import numpy as np

from ..codegen import cuda as cuda_emit
from ..codegen import kernel_ir as K
from ..codegen import nvrtc
from ..codegen.cuda import lower_for_cuda as lower_group
from ..errors import DeviceError
from ..ir.graph import unflatten  # noqa: F401  (re-exported for callers building results)
from ..ir.ops import Op
from . import device as devmod
from . import interop

# Process-wide memo of compiled and loaded code: (source, arch) -> CompiledCuda and
# (device, source) -> cupy Function. Caches only: dropping them changes nothing but speed.
_COMPILED: dict = {}
_LOADED: dict = {}
INT32_LIMIT = 2 ** 31 - 1
# Launch-shape knobs (benchmarks/gpu_quick.py --sweep measures them; autotune may set them later).
EW_BLOCKS_PER_SM = 1024       # elementwise grid cap (grid-stride beyond it); 8 was 7-10 points slower (sweep, H200)
ROW_UNITS_PER_THREAD = 4      # row reductions: vector units a thread holds
ROW_BARRIERS = 1              # row reductions: __syncthreads per block reduce (2: the pre-2026-11-22 code)


def compile_source(source: str, arch: str, cache=None) -> nvrtc.CompiledCuda:
    key = (source, arch)
    hit = _COMPILED.get(key)
    if hit is None and cache is not None:
        try:
            hit = cache.get(key) if hasattr(cache, "get") else None
        except Exception:
            hit = None
    if hit is None:
        hit = nvrtc.compile(source, arch)
        if cache is not None and hasattr(cache, "__setitem__"):
            try:
                cache[key] = hit
            except Exception:
                pass
    _COMPILED[key] = hit
    return hit


def _function(kernel: cuda_emit.CudaKernel, dev_id: int, arch: str, cache=None):
    key = (dev_id, kernel.source)
    f = _LOADED.get(key)
    if f is None:
        import cupy
        compiled = compile_source(kernel.source, arch, cache)
        mod = cupy.cuda.function.Module()
        mod.load(compiled.cubin)
        f = (mod, mod.get_function(kernel.name))
        _LOADED[key] = f
    return f[1]


def _max_offset(arr) -> int:
    return sum((s - 1) * abs(st) for s, st in zip(arr.shape, arr.strides)) // max(arr.itemsize, 1)


class _Launcher:
    """One group's kernel: picks a variant per stride/alignment pattern and launches it."""

    def __init__(self, group, kir: K.KernelIR, arch: str, cache):
        self.group, self.kir, self.arch, self.cache = group, kir, arch, cache
        self.sizes = tuple(np.int64(s.value) for s in kir.sizes)
        self.size_of = {s.name: s.value for s in kir.sizes}
        self._variants: dict = {}
        self.vec_ok = cuda_emit.vector_ok(kir)

    def extent(self, d: int) -> int:
        e = self.kir.domain[d]
        return e.value if isinstance(e, K.ILit) else self.size_of[e.name]

    def choose(self, ins, outs, props) -> tuple:
        """``(kernel, func, grid, block, tail)`` for this stride/alignment pattern, memoised: the
        pattern fixes the variant, the grid and the launch's scalar tail (sizes, then strides in
        elements, as int64), so a hot call only builds the key and launches."""
        key = tuple((a.strides, a.data.ptr % 16) for a in ins) + tuple(a.strides for a in outs)
        hit = self._variants.get(key)
        if hit is not None:
            return hit
        kir = self.kir
        sm = props["sm_count"]
        big = bool(max([_max_offset(a) for a in ins + outs] + [math.prod(self.extent(d) for d in range(len(kir.domain)))]
                  + [s.value for s in kir.sizes] + [0]) >= INT32_LIMIT // 2)
        if kir.kind == "reduce":
            variant, grid = self._reduce_variant(ins, outs, big, sm)
        else:
            variant, grid = self._ew_variant(ins, outs, big, sm)
        kernel = cuda_emit.emit_kernel(kir, variant)
        func = _function(kernel, props["device_id"], self.arch, self.cache)
        tail = list(self.sizes)
        for a in ins + outs:
            tail += [np.int64(st // a.itemsize) for st in a.strides]
        hit = (kernel, func, (grid,), (variant.block,), tuple(tail))
        self._variants[key] = hit
        return hit

    def _ew_variant(self, ins, outs, big, sm):
        kir = self.kir
        dims = kir.loop_dims(range(len(kir.domain)))
        vec = 1
        if self.vec_ok and dims:
            vec = max(1, 16 // cuda_emit.max_itemsize(kir))
            last = f"i{dims[-1]}"
            if self.extent(dims[-1]) % vec:
                vec = 1
            for s in kir.phases[0].pre:
                if vec == 1:
                    break
                if isinstance(s, (K.Load, K.Store)) and cuda_emit.vector_access(s.index, last):
                    a = ins[s.buf] if isinstance(s, K.Load) else outs[s.buf]
                    st = [x // a.itemsize for x in a.strides]
                    if st[-1] != 1 or any(x % vec for x in st[:-1]) or a.data.ptr % (vec * a.itemsize):
                        vec = 1
        total = math.prod(self.extent(d) for d in dims) if dims else 1
        units = total // vec
        grid = max(1, min(-(-units // 256), sm * EW_BLOCKS_PER_SM))
        return cuda_emit.Variant("elementwise", vec, big, 0, 256), grid

    def _reduce_variant(self, ins, outs, big, sm):
        kir = self.kir
        outer = kir.loop_dims(kir.outer)
        inner = kir.loop_dims(kir.inner)
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
                    st = {e.name: a.strides[d] // a.itemsize for d, e in enumerate(s.index) if isinstance(e, K.IVar)}
                    col = abs(st.get(lo, 0)) == 1 and abs(st.get(li, 0)) != 1
                    break
        if col:
            grid = max(1, min(-(-n_rows // 128), sm * 16))
            return cuda_emit.Variant("col", 1, big, 0, 128), grid
        vec = 1
        va = cuda_emit.vector_accesses(kir)
        if va is not None and inner:
            vec = max(1, 16 // cuda_emit.max_itemsize(kir))
            if self.extent(inner[-1]) % vec:
                vec = 1
            for st_ in va[1]:
                if vec == 1:
                    break
                a = ins[st_.buf] if isinstance(st_, K.Load) else outs[st_.buf]
                st = [x // a.itemsize for x in a.strides]
                if st[-1] != 1 or any(x % vec for x in st[:-1]) or a.data.ptr % (vec * a.itemsize):
                    vec = 1
        block, kc = cuda_emit.row_shape(L // vec, ROW_UNITS_PER_THREAD)
        grid = max(1, min(n_rows, sm * max(1, 2048 // block)))
        return cuda_emit.Variant("row", vec, big, kc, block, ROW_BARRIERS), grid

    def __call__(self, ins, outs, props) -> None:
        # nothing to write only when every output is empty: a reduction over an empty axis still
        # writes its identity (any() of a (0,) array is False), so it must launch
        if all(o.size == 0 for o in outs):
            return
        _, func, grid, block, tail = self.choose(ins, outs, props)
        func(grid, block, (*outs, *ins, *tail))


class CudaProgram:
    """A compiled plan: ``program(list_of_arrays) -> list_of_arrays`` (graph order in and out)."""

    def __init__(self, plan, cache=None, backend: str = "cuda", arch: str | None = None):
        if backend != "cuda":
            raise DeviceError(f"kfuse: runtime.cuda runs backend 'cuda', not {backend!r}")
        self.plan, self.cache = plan, cache
        self.arch = arch or (devmod.arch() if devmod.has_gpu() else "sm_90")
        self.kirs = [lower_group(g) for g in plan.groups]
        self.launchers = None
        self._stages = None
        # what the hot path checks / allocates, computed once per program
        self._in_sig = [(tuple(n.shape), n.dtype, n) for n in plan.graph.inputs]
        self._out_sig = [[(tuple(o.shape), o.dtype) for o in g.outputs] for g in plan.groups]
        self._props: dict = {}

    @property
    def stages(self) -> dict[str, str]:
        """Printable stages: "kernel" (KernelIR), "cuda" (default variants), "ptx"."""
        if self._stages is None:
            kernels = [cuda_emit.emit_kernel(k) for k in self.kirs]
            self._stages = {
                "kernel": "\n\n".join(k.as_text() for k in self.kirs),
                "cuda": "\n\n".join(k.source for k in kernels),
                "ptx": "\n\n".join(compile_source(k.source, self.arch, self.cache).ptx for k in kernels),
            }
        return self._stages

    def __call__(self, arrays):
        import cupy
        graph = self.plan.graph
        if len(arrays) != len(graph.inputs):
            raise ValueError(f"kfuse: expected {len(graph.inputs)} arrays, got {len(arrays)}")
        nd = cupy.ndarray
        if arrays and all(type(a) is nd for a in arrays):
            # hot path (all CuPy): no classification, device read off the memory pointers
            arrs, kind = list(arrays), "cupy"
            dev = arrays[0].data.device_id
            for a in arrays:
                if a.data.device_id != dev:
                    raise DeviceError(f"kfuse: arrays on different GPUs {sorted({x.data.device_id for x in arrays})} "
                                      "in one call")
        else:
            arrs, kind, dev = interop.to_device_arrays(list(arrays))
        for a, (shape, dtype, n) in zip(arrs, self._in_sig):
            if a.shape != shape or a.dtype != dtype:
                raise ValueError(f"kfuse: argument {n.attr('name')!r} is {a.dtype}{list(a.shape)}, "
                                 f"the program was compiled for {n.dtype}{list(n.shape)}")
        if dev == cupy.cuda.runtime.getDevice():
            results = self._run(cupy, arrs, dev)
        else:
            with cupy.cuda.Device(dev):
                results = self._run(cupy, arrs, dev)
        return results if kind == "cupy" else interop.from_device_arrays(results, kind)

    def _run(self, cupy, arrs, dev) -> list:
        graph = self.plan.graph
        props = self._props.get(dev)
        if props is None:
            props = self._props[dev] = devmod.device_properties(dev)
        if self.launchers is None:
            if props["arch"] != self.arch:
                self.arch = props["arch"]
            self.launchers = [_Launcher(g, k, self.arch, self.cache)
                              for g, k in zip(self.plan.groups, self.kirs)]
        env = dict(zip(graph.inputs, arrs))
        empty = cupy.empty
        for g, kir, launch, out_sig in zip(self.plan.groups, self.kirs, self.launchers, self._out_sig):
            ins = [env[n] for n in g.inputs]
            if kir.contraction is not None:
                ins.append(_contract(kir.contraction, ins))
            outs = [empty(shape, dtype) for shape, dtype in out_sig]
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
        return results


def _contract(c: K.Contraction, ins):
    import cupy

    def side(a, steps):
        for kind, arg in steps:
            a = a.astype(arg) if kind == "cast" else cupy.transpose(a, arg)
        return a
    return cupy.matmul(side(ins[c.lhs], c.lhs_steps), side(ins[c.rhs], c.rhs_steps)).astype(c.dtype, copy=False)


def compile_plan(plan, cache=None, backend: str = "cuda") -> CudaProgram:
    """Compile every group of ``plan`` for the current GPU (or sm_90 without one, for dumps)."""
    return CudaProgram(plan, cache=cache, backend=backend)
