"""What the two GPU runtimes share: a per-group launcher base and the program that runs a plan.

Both code generators (CUDA C via NVRTC, and Numba-CUDA) emit kernels with one calling convention:
``(outputs..., inputs..., sizes..., input strides..., output strides...)``, strides in elements as
int64. :class:`LauncherBase` memoises, per stride/alignment pattern of the arguments, the chosen
variant, the loaded function, the launch shape and that scalar tail, so a hot call only builds a
key and launches. :class:`GpuProgram` runs a plan's groups in order on CuPy arrays (torch tensors
through DLPack); subclasses say how a group's launcher is made and what their stages are.
"""
from __future__ import annotations

import numpy as np

from ..codegen import kernel_ir as K
from ..errors import DeviceError
from ..ir.ops import Op
from . import device as devmod
from . import interop


class LauncherBase:
    """One group's kernel. Subclasses implement ``_build(ins, outs, props) -> (info, func, grid,
    block)``: the variant for this argument pattern (``info`` is kept for reports and tests)."""

    def __init__(self, group, kir: K.KernelIR, arch: str, cache):
        self.group, self.kir, self.arch, self.cache = group, kir, arch, cache
        self.sizes = tuple(np.int64(s.value) for s in kir.sizes)
        self.size_of = {s.name: s.value for s in kir.sizes}
        self._variants: dict = {}

    def extent(self, d: int) -> int:
        e = self.kir.domain[d]
        return e.value if isinstance(e, K.ILit) else self.size_of[e.name]

    def column_reduction(self, ins) -> bool:
        """A reduce kernel whose first body load is unit-stride along the last outer dim and not
        along the last reduced one: reduce down columns, one thread per output (coalesced)."""
        kir = self.kir
        outer, inner = kir.loop_dims(kir.outer), kir.loop_dims(kir.inner)
        if not (outer and inner):
            return False
        lo, li = f"i{outer[-1]}", f"i{inner[-1]}"
        for ph in kir.phases:
            loads = [s for s in ph.body if isinstance(s, K.Load)]
            if loads:
                a = ins[loads[0].buf]
                st = {e.name: a.strides[d] // a.itemsize for d, e in enumerate(loads[0].index)
                      if isinstance(e, K.IVar)}
                return abs(st.get(lo, 0)) == 1 and abs(st.get(li, 0)) != 1
        return False

    def choose(self, ins, outs, props) -> tuple:
        """``(info, func, grid, block, tail)`` for this stride/alignment pattern, memoised."""
        key = tuple((a.strides, a.data.ptr % 16) for a in ins) + tuple(a.strides for a in outs)
        hit = self._variants.get(key)
        if hit is None:
            info, func, grid, block = self._build(ins, outs, props)
            tail = list(self.sizes)
            for a in ins + outs:
                tail += [np.int64(st // a.itemsize) for st in a.strides]
            hit = self._variants[key] = (info, func, (grid,), (block,), tuple(tail))
        return hit

    def _build(self, ins, outs, props) -> tuple:
        raise NotImplementedError

    def __call__(self, ins, outs, props) -> None:
        # nothing to write only when every output is empty: a reduction over an empty axis still
        # writes its identity (any() of a (0,) array is False), so it must launch
        if all(o.size == 0 for o in outs):
            return
        _, func, grid, block, tail = self.choose(ins, outs, props)
        func(grid, block, (*outs, *ins, *tail))


class GpuProgram:
    """A compiled plan: ``program(list_of_arrays) -> list_of_arrays`` (graph order in and out).
    Subclasses set ``self.kirs`` and implement ``_launcher(group, kir)`` and ``stages``."""

    def __init__(self, plan, kirs, cache=None, arch: str | None = None):
        self.plan, self.kirs, self.cache = plan, kirs, cache
        self.arch = arch or (devmod.arch() if devmod.has_gpu() else "sm_90")
        self.launchers = None
        self._stages = None
        # what the hot path checks / allocates, computed once per program
        self._in_sig = [(tuple(n.shape), n.dtype, n) for n in plan.graph.inputs]
        self._out_sig = [[(tuple(o.shape), o.dtype) for o in g.outputs] for g in plan.groups]
        self._props: dict = {}

    def _launcher(self, group, kir) -> LauncherBase:
        raise NotImplementedError

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
            self.arch = props["arch"]
            self.launchers = [self._launcher(g, k) for g, k in zip(self.plan.groups, self.kirs)]
        env = dict(zip(graph.inputs, arrs))
        empty = cupy.empty
        for g, kir, launch, out_sig in zip(self.plan.groups, self.kirs, self.launchers, self._out_sig):
            ins = [env[n] for n in g.inputs]
            if kir.contraction is not None:
                ins.append(contract(kir.contraction, ins))
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


def contract(c: K.Contraction, ins):
    """A matmul group's product through ``cupy.matmul`` (cuBLAS), read by its epilogue kernel."""
    import cupy

    def side(a, steps):
        for kind, arg in steps:
            a = a.astype(arg) if kind == "cast" else cupy.transpose(a, arg)
        return a
    return cupy.matmul(side(ins[c.lhs], c.lhs_steps), side(ins[c.rhs], c.rhs_steps)).astype(c.dtype, copy=False)
