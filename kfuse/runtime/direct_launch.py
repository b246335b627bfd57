"""The hot path of a cached GPU call whose plan is one kernel, launched once: its parameter block
(the buffers' addresses, then the sizes, strides and variant scalars) is built after the first
call, and each later call with the same dispatch key only allocates the outputs, writes the
buffers' addresses into the block and calls ``cuLaunchKernel`` on the caller's stream (CuPy's
current stream, or torch's for torch tensors, whose pointers are passed without CuPy views).

It replaces, per call, the program's generic path (argument checks the dispatch key already made,
the launcher's variant lookup, CuPy's argument conversion): 1024-element CuPy call 14.6 µs against
``cupy.ElementwiseKernel``'s 8.5 µs before it (H200, 2026-11-27). A call it cannot take (another
current device or 16-byte alignment of an input than the block was built for) returns
None, and the caller takes the generic path, which picks the variant for it. Torch callers: the
tensors' device is in the key; the current device, where the kernel's module is loaded, is
checked here."""
from __future__ import annotations

import threading

import numpy as np


class DirectLaunch:
    """``launch(args) -> outputs | None`` for one kernel of a program, built by :func:`build`. The
    caller reaches it only through the dispatch key it was built under (``call_entry.Entry``: one entry
    a key), which holds the arguments' types, dtypes, shapes, strides and device; the launch checks
    what the key does not: the inputs' 16-byte alignment (a vector variant's), and the device."""

    def __init__(self, func, grid, block, tail, positions, mods, outs, order, kind: str, dev: int):
        import ctypes
        from cupy.cuda import driver
        self._func, self._tail = func, tail     # kept alive: the block holds the handle and points into tail
        n = len(outs) + len(positions)
        self._slots = (ctypes.c_uint64 * max(n, 1))()          # the buffers' addresses
        base = ctypes.addressof(self._slots)
        self._params = np.array([base + 8 * k for k in range(n)] + [t.address for t in tail], np.uint64)
        g, b = _dim3(grid), _dim3(block)
        self._head = (func.ptr, *g, *b, 0)      # cuLaunchKernel's arguments before the stream
        self._params_ptr = int(self._params.ctypes.data)
        self._launch = driver.launchKernel
        self._positions = positions             # argument positions of the kernel's inputs, in order
        self._mods = mods                       # address % 16 of each, as built
        self._n_out = len(outs)
        self._order = None if order == list(range(len(outs))) else order   # the program's outputs, by kernel output
        self._kind, self._dev = kind, dev
        self._lock = threading.Lock()           # the slots are shared: one writer-and-launcher at a time
        if kind == "torch":
            import torch
            from .interop import _torch_dtype
            self._torch, self._stream = torch, torch._C._cuda_getCurrentRawStream
            self._getdev = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
            self._outs = [(shape, _torch_dtype(dt)) for shape, dt in outs]
        else:
            import cupy
            from .interop import storage_dtype
            self._cupy, self._getdev = cupy, cupy.cuda.runtime.getDevice
            self._outs = [(shape, storage_dtype(dt)) for shape, dt in outs]

    def __call__(self, args):
        if self._kind == "torch":
            return self._call_torch(args)
        cupy = self._cupy
        if self._getdev() != self._dev:
            return None
        ptrs = [args[p].data.ptr for p in self._positions]
        for p, mod in zip(ptrs, self._mods):
            if p % 16 != mod:
                return None
        outs = [cupy.ndarray(shape, dt) for shape, dt in self._outs]
        stream = cupy.cuda.get_current_stream().ptr
        slots, k = self._slots, self._n_out
        with self._lock:                        # the driver copies the parameters at launch
            for i, o in enumerate(outs):
                slots[i] = o.data.ptr
            for i, p in enumerate(ptrs):
                slots[k + i] = p
            self._launch(*self._head, stream, self._params_ptr, 0)
        return outs if self._order is None else [outs[j] for j in self._order]

    def _call_torch(self, args):        # (the CuPy path's twin, written out: one shared body through
        # per-kind callables measured 7.7 -> 10.2 us a call on an H200, 2026-11-27)
        if self._getdev() != self._dev:     # (the function's module is loaded in that device's context)
            return None
        ptrs = [args[p].data_ptr() for p in self._positions]
        for p, mod in zip(ptrs, self._mods):
            if p % 16 != mod:
                return None
        torch, dev = self._torch, self._dev
        outs = [torch.empty(shape, dtype=tdt, device=dev) for shape, tdt in self._outs]
        slots, k = self._slots, self._n_out
        with self._lock:
            for i, o in enumerate(outs):
                slots[i] = o.data_ptr()
            for i, p in enumerate(ptrs):
                slots[k + i] = p
            self._launch(*self._head, self._stream(dev), self._params_ptr, 0)
        return outs if self._order is None else [outs[j] for j in self._order]


def _dim3(d) -> tuple:
    d = tuple(d) if isinstance(d, (tuple, list)) else (d,)
    if len(d) == 1 and isinstance(d[0], (tuple, list)):
        d = tuple(d[0])
    return tuple(int(x) for x in d) + (1,) * (3 - len(d))


def build(program, args, positions, kind: str, dev: int):
    """The direct launch of ``program`` (a ``GpuProgram`` that has run) for arguments ``args`` just
    run through it, whose graph inputs are ``args`` at ``positions`` (device arrays all, of
    ``kind`` "cupy" or "torch" on device ``dev``); None where the program is not one plain launch
    (several kernels, a product, a write into an argument, a two-stage reduction, a bfloat16 result
    for CuPy, a torch tensor with a lazy conjugate or negative bit)."""
    plan, graph = program.plan, program.plan.graph
    if (len(plan.groups) != 1 or program.launchers is None or program._into_argument
            or plan.groups[0].in_place or program._bf16_out and kind == "cupy"):
        return None
    g, launcher, out_sig = plan.groups[0], program.launchers[0], program._out_sig[0]
    index = {n: k for k, n in enumerate(graph.inputs)}
    if (launcher.kir.init_from or launcher.kir.contraction is not None
            or any(n not in index for n in g.inputs) or any(o not in g.outputs for o in graph.outputs)):
        return None
    from . import interop
    from .device import device_properties
    kargs = [args[positions[index[n]]] for n in g.inputs]
    if kind == "torch":
        if (any(interop._torch_dtype(dt) is None for _, dt in out_sig)
                or any(t.is_conj() or t.is_neg() for t in kargs)):     # resolved into a copy first
            return None
        views = [interop.tensor_view(t) for t in kargs]
        outs = [interop.TorchOutputs(dev).empty(shape, dt) for shape, dt in out_sig]
        mods = [t.data_ptr() % 16 for t in kargs]
    else:
        views = kargs
        outs = [interop.cupy_empty(shape, dt) for shape, dt in out_sig]
        mods = [a.data.ptr % 16 for a in kargs]
    if any(o.size == 0 for o in outs):
        return None
    _, func, grid, block, tail, finish = launcher.choose(views, outs, device_properties(dev))
    if finish is not None or not all(hasattr(t, "address") for t in tail):
        return None
    order = [list(g.outputs).index(o) for o in graph.outputs]
    return DirectLaunch(func, grid, block, tail, [positions[index[n]] for n in g.inputs], mods,
                        [(tuple(shape), dt) for shape, dt in out_sig], order, kind, dev)
