"""What the two GPU runtimes share: a per-group launcher base and the program that runs a plan.

Both code generators (CUDA C via NVRTC, and Numba-CUDA) emit kernels with one calling convention:
``(outputs..., inputs..., sizes..., input strides..., output strides..., variant scalars...)``,
strides in elements as int64 (a two-stage reduction adds its workspace last). :class:`LauncherBase`
memoises, per stride/alignment pattern of the arguments, the chosen variant, the loaded function,
the launch shape and that scalar tail, packed once into a host buffer CuPy passes by reference
(:func:`scalar_args`), so a hot call only builds a key and launches. :class:`GpuProgram` runs a
plan's groups in order on CuPy arrays (torch tensors as ``interop.tensor_view`` objects);
subclasses say how a group's launcher is made and what their stages are. A scatter kernel's output
starts as a copy of its base (:meth:`LauncherBase.start_from_bases`, before the launch, on the
same stream), or is the base's own buffer where the plan says nothing else reads it
(``Plan.scatters_in_place``), or is the argument it updates (``Plan.scatters_into_argument``:
``np.add.at(t, ids, g)`` writes the caller's CuPy array or torch tensor itself, after the index
checks computed by earlier kernels have been read back and found passing, see
:meth:`GpuProgram.buffers_in_place`; the call then copies nothing back into it). An elementwise
kernel computing an argument's final value (``x += y``, ``KernelGroup.in_place``) writes into the
argument the same way.
"""
from __future__ import annotations

import contextlib
import functools

import numpy as np

from ..codegen import kernel_ir as K
from ..codegen.lower import host_scalar_input
from ..errors import DeviceError
from ..ir.ops import Op
from . import device as devmod
from . import interop
from .check_flags import CheckFlags, HostFlag, check_first_order
from .cublas_matmul import contract


class LauncherBase:
    """One group's kernel. Subclasses implement ``_build(ins, outs, props) -> (info, func, grid,
    block)``: the variant for this argument pattern (``info`` is kept for reports and tests)."""

    def __init__(self, group, kir: K.KernelIR, arch: str, cache):
        self.group, self.kir, self.arch, self.cache = group, kir, arch, cache
        self.sizes = tuple(np.int64(s.value) for s in kir.sizes)
        self.size_of = {s.name: s.value for s in kir.sizes}
        self._variants: dict = {}
        # variant -> its emitted kernel, shared by this group's launchers at every size of one
        # shape class (GpuProgram.rebind): emitting depends on the IR's structure, not its sizes
        self.emitted: dict = {}

    def emit(self, variant, render):
        """``render()`` (the source of ``variant``), once per variant across sizes."""
        hit = self.emitted.get(variant)
        if hit is None:
            hit = self.emitted[variant] = render()
        return hit

    def extent(self, d: int) -> int:
        e = self.kir.domain[d]
        if isinstance(e, K.ILit):
            return e.value
        return self.size_of[e.name] if isinstance(e, K.IVar) else K.eval_expr(e, self.size_of)   # (a flat domain's product)

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
        """``(info, func, grid, block, tail, finish)`` for this stride/alignment pattern, memoised;
        ``tail`` is the scalar arguments, passed by reference (:func:`scalar_args`); ``finish``
        see :meth:`_finish`."""
        key = (*[(a.strides, a.data.ptr % 16 if a.data is not None else 0) for a in ins], *[a.strides for a in outs])
        hit = self._variants.get(key)
        if hit is None:
            info, func, grid, block = self._build(ins, outs, props)
            hit = self._variants[key] = (info, func, (grid,), (block,), scalar_args(self.tail(ins, outs, info)),
                                         self._finish(ins, outs, props, info))
        return hit

    def tail(self, ins, outs, info) -> list:
        """The scalar arguments after the pointers: sizes, every buffer's strides (in elements),
        then the variant's own (:meth:`extra_args`)."""
        tail = list(self.sizes)
        for a in ins + outs:
            tail += [np.int64(st // a.itemsize) for st in a.strides]
        return tail + self.extra_args(info)

    def _build(self, ins, outs, props) -> tuple:
        raise NotImplementedError

    def _finish(self, ins, outs, props, info):
        """For a variant that is more than one launch (a two-stage reduction): a callable
        ``(func, grid, block, tail, ins, outs)`` that makes all of them; else None."""
        return None

    def extra_args(self, info) -> list:
        """Scalars the variant ``info`` takes after the strides (none by default)."""
        return []

    def __call__(self, ins, outs, props) -> None:
        # nothing to write only when every output is empty: a reduction over an empty axis still
        # writes its identity (any() of a (0,) array is False), so it must launch
        if not outs[0].size and all(o.size == 0 for o in outs):
            return
        if self.kir.init_from and not self.start_from_bases(ins, outs):
            return
        _, func, grid, block, tail, finish = self.choose(ins, outs, props)
        if finish is None:
            func(grid, block, (*outs, *ins, *tail))
        else:
            finish(func, grid, block, tail, ins, outs)

    def start_from_bases(self, ins, outs) -> bool:
        """A scatter: each output listed in ``kir.init_from`` made a copy of its base input (on
        the current stream; none where it is the base's own buffer, ``Plan.scatters_in_place``).
        Whether the kernel has anything to write (an empty domain writes nothing)."""
        for o, i in self.kir.init_from:
            if outs[o].data.ptr != ins[i].data.ptr:
                copy_into(outs[o], ins[i])
        return all(self.extent(d) for d in range(len(self.kir.domain)))


def raise_failed_checks(graph, env) -> None:
    """NumPy's error for a check already computed (in ``env``: CuPy arrays or tensor views, read
    back on the current stream) that failed: called before a kernel writes into an argument in
    place, as ``runtime.cpu.raise_failed_checks`` is."""
    graph.raise_failed_checks(lambda k: bool(interop.as_cupy(env[graph.outputs[k]])))


def writable_layout(a) -> bool:
    """Whether no two elements of ``a`` (a CuPy array or a tensor view) share memory: its dims of
    extent above 1, by stride magnitude, each step past the whole extent of the smaller ones (the
    kernels take every buffer's strides, signs included, so any such layout is written as is)."""
    if not a.size:
        return True             # (NumPy gives an empty array zero strides: nothing is written)
    need = a.itemsize
    for stride, n in sorted((abs(st), n) for n, st in zip(a.shape, a.strides) if n > 1):
        if stride < need:
            return False
        need = stride * n
    return True


def copy_into(dst, src) -> None:
    """``dst`` (a C-contiguous output, a CuPy array or a tensor view) filled with ``src`` (same
    shape and dtype, any strides) on the current stream: one device-to-device copy where ``src``
    is C-contiguous too, else CuPy's strided copy."""
    import cupy
    if not src.size:
        return
    if tuple(src.strides) == tuple(dst.strides) or src.size == 1:
        rt = cupy.cuda.runtime
        rt.memcpyAsync(dst.data.ptr, src.data.ptr, src.size * src.itemsize, rt.memcpyDeviceToDevice,
                       cupy.cuda.get_current_stream().ptr)
    else:
        cupy.copyto(interop.as_cupy(dst), interop.as_cupy(src))


def fast_divisor(d: int) -> tuple[int, int]:
    """``(m, s)`` such that ``r // d == (((r * m) >> 32) + r) >> s`` for ``0 <= r < 2**31``
    (the kernels' ``kf_udiv``; Granlund-Montgomery round-up, as PyTorch's IntDivider)."""
    d = max(1, int(d))
    if d >= 2 ** 31:
        raise ValueError(f"kfuse: 32-bit index divisor {d} out of range")
    s = (d - 1).bit_length()
    return ((1 << 32) * ((1 << s) - d)) // d + 1, s


def scalar_args(values) -> tuple:
    """A kernel's scalar arguments (NumPy scalars) as CuPy ``CPointer``s into one host buffer
    made once per launch variant: CuPy passes a ``CPointer`` as it is, where it converts each
    NumPy scalar anew on every launch (10 scalars: most of a 9.4 µs launch, H200 2026-11-24).
    The driver copies the values at launch, so the buffer may be shared by queued launches."""
    buf = pack_scalars(values)
    host_scalar = _host_scalar_type()
    return tuple(host_scalar(buf, 8 * k, v) for k, v in enumerate(values))


def pack_scalars(values) -> np.ndarray:
    """NumPy scalars in a host buffer, one 8-byte slot each (aligned for any of them), each at
    its own width from the slot's start (little-endian, as the kernel reads its parameter)."""
    buf = np.zeros(max(1, len(values)), np.int64)
    raw = buf.view(np.uint8)
    for k, v in enumerate(values):
        b = np.asarray(v).tobytes()
        if len(b) > 8:
            raise ValueError(f"kfuse: kernel scalar {v!r} is wider than 8 bytes")
        raw[8 * k: 8 * k + len(b)] = np.frombuffer(b, np.uint8)
    return buf


@functools.cache
def _host_scalar_type():
    """CuPy's ``CPointer`` with the host buffer it points into kept alive (made at first use:
    this module is imported without CuPy too)."""
    from cupy.cuda.function import CPointer

    class HostScalar(CPointer):
        def __init__(self, buf, offset: int, value):
            self.address = buf.ctypes.data + offset     # (runtime.direct_launch's parameter block)
            super().__init__(self.address)
            self.buf, self.value = buf, value
    return HostScalar


def host_value(value):
    """A host scalar input (``Buffer.host``: a Python or NumPy scalar argument) as the launchers
    take it: ``value`` (a NumPy scalar of the graph input's dtype) packed in a host buffer and
    passed by value (CuPy hands a ``CPointer`` to the driver as it is; the driver copies the bytes
    at launch), with a 0-d array's ``shape``, ``strides``, ``dtype``, ``itemsize`` and ``size`` for the
    variant choice; ``data`` is None (no device memory)."""
    return _host_value_type()(value)


def as_host_value(a, dtype):
    """``a`` (a :func:`host_value` already, a Python or NumPy scalar, a 0-d host array, or a 0-d
    device array, read back) as the :func:`host_value` of ``dtype``."""
    if isinstance(a, _host_value_type()):
        return a
    if interop.kind_of(a)[0] != "numpy":
        a = interop.to_cupy(a).get()
    return host_value(np.asarray(a, dtype=dtype)[()])


@functools.cache
def _host_value_type():
    host_scalar = _host_scalar_type()

    class HostValue(host_scalar):
        shape, strides, ndim, size, data = (), (), 0, 1, None

        def __init__(self, value):
            super().__init__(pack_scalars([value]), 0, value)
            self.dtype, self.itemsize = value.dtype, value.dtype.itemsize

        def __repr__(self):
            return f"HostValue({self.value!r})"
    return HostValue


def host_inputs(plan, kirs) -> frozenset:
    """The graph inputs (their indices) a program takes on the host (:func:`host_value`): those
    every kernel reading them takes by value (``Buffer.host``), and host scalars no kernel reads,
    that are no output of the plan."""
    graph = plan.graph
    taken: dict = {}
    for g, kir in zip(plan.groups, kirs):
        for n, b in zip(g.inputs, kir.inputs):
            taken[n] = taken.get(n, True) and b.host
    kept = set(graph.outputs) | {o.inputs[0] for o in plan.views}
    return frozenset(k for k, n in enumerate(graph.inputs)
                     if taken.get(n, host_scalar_input(n)) and n not in kept)


class GpuProgram:
    """A compiled plan: ``program(list_of_arrays) -> list_of_arrays`` (graph order in and out).
    Subclasses set ``self.kirs`` and implement ``_launcher(group, kir)`` and ``stages``."""

    def __init__(self, plan, kirs, cache=None, arch: str | None = None):
        self.plan, self.kirs, self.cache = plan, kirs, cache
        self.arch = arch or (devmod.arch() if devmod.has_gpu() else "sm_90")
        self.launchers = None
        self._stages = None
        # what the hot path checks / allocates, computed once per program
        self._in_sig = [(tuple(n.shape), interop.storage_dtype(n.dtype), n) for n in plan.graph.inputs]
        self._out_sig = [[(tuple(o.shape), o.dtype) for o in g.outputs] for g in plan.groups]
        self._bf16_out = any(o.dtype == interop.BF16 for o in plan.graph.outputs)
        self._props: dict = {}
        # graph inputs passed on the host, by value (host_value): no device buffer, no upload
        self.host_inputs = host_inputs(plan, kirs)
        self._single = None             # _single_kernel(), decided when the launchers are made
        self._emitted = [{} for _ in plan.groups]   # per group: LauncherBase.emitted
        self.tuning_sources: dict[int, str] = {}    # kernel index -> its tuning key's text (autotune)
        self._mm_info: dict = {}        # matmul group id -> matmul_plan(group, kir); attention: its runner
        # scatter group id -> {output: base input} where it writes into its base's buffer
        self._in_place = {g.id: dict(k.init_from) for g, k in zip(plan.groups, kirs)
                          if plan.scatters_in_place(g)}
        # scatter group id -> its (output, base input) pairs where it may write into the argument
        self._into_argument = {g.id: k.init_from for g, k in zip(plan.groups, kirs)
                               if k.init_from and plan.scatters_into_argument(g)}
        self._order, self._flags = check_first_order(plan)

    def _launcher(self, group, kir) -> LauncherBase:
        raise NotImplementedError

    def rebind(self, plan, kirs, share: bool = True) -> "GpuProgram":
        """This program for ``plan``, the same plan at other sizes (each group's kernel IR equal to
        this program's but for its size values): its launchers share the kernels emitted so far,
        so a new size emits and compiles nothing it has seen (``runtime.shape_class``). Not
        ``share``: a program of ``kirs`` emitted afresh (other code, same plan)."""
        new = object.__new__(type(self))
        GpuProgram.__init__(new, plan, kirs, self.cache, self.arch)
        if share:       # (the same kernels at other sizes: the same code, the same tuning keys)
            new._emitted, new.tuning_sources = self._emitted, self.tuning_sources
        return new

    def __call__(self, arrays):
        import cupy
        graph = self.plan.graph
        if len(arrays) != len(graph.inputs):
            raise ValueError(f"kfuse: expected {len(graph.inputs)} arrays, got {len(arrays)}")
        host, sig = self.host_inputs, self._in_sig
        if host:        # scalars the kernels take by value; the rest are the device arrays
            arrays = [as_host_value(a, sig[k][2].dtype) if k in host else a for k, a in enumerate(arrays)]
            sig = [s for k, s in enumerate(sig) if k not in host]
        on_device = [a for k, a in enumerate(arrays) if k not in host] if host else arrays
        nd = cupy.ndarray
        if on_device and all(type(a) is nd for a in on_device):
            # hot path (all CuPy): no classification, device read off the memory pointers
            arrs, kind = list(on_device), "cupy"
            dev = on_device[0].data.device_id
            for a in on_device:
                if a.data.device_id != dev:
                    raise DeviceError(f"kfuse: arrays on different GPUs {sorted({x.data.device_id for x in on_device})} "
                                      "in one call")
        elif on_device:
            arrs, kind, dev = interop.to_device_arrays(list(on_device))
        else:                   # scalars only: CuPy's current device
            arrs, kind, dev = [], "cupy", cupy.cuda.runtime.getDevice()
        for a, (shape, dtype, n) in zip(arrs, sig):
            if a.shape != shape or a.dtype != dtype:
                raise ValueError(f"kfuse: argument {n.attr('name')!r} is {a.dtype}{list(a.shape)}, "
                                 f"the program was compiled for {n.dtype}{list(n.shape)}")
        if host:
            rest = iter(arrs)
            arrs = [a if k in host else next(rest) for k, a in enumerate(arrays)]
        if kind == "cupy" and self._bf16_out:
            interop.refuse_bf16_results_for_cupy(graph.outputs)
        here = dev == cupy.cuda.runtime.getDevice()
        if kind == "cupy" and here:
            return self._run(cupy, arrs, dev, interop.cupy_empty)
        with contextlib.nullcontext() if here else cupy.cuda.Device(dev):
            if kind == "cupy":
                return self._run(cupy, arrs, dev, interop.cupy_empty)
            return self._run_torch(cupy, arrs, dev)

    def run_checked(self, arrays, dev: int) -> list:
        """``self(arrays)`` for CuPy arrays on device ``dev`` whose dtypes and shapes the caller
        has checked already (kfuse.jit's dispatch key holds them): the hot path of a cached call."""
        import cupy
        if self._bf16_out or dev != cupy.cuda.runtime.getDevice():
            return self(arrays)
        return self._run(cupy, arrays, dev, interop.cupy_empty)

    def run_torch_checked(self, tensors, dev: int) -> list:
        """``self(tensors)`` for torch CUDA tensors on device ``dev`` whose dtypes and shapes the
        caller has checked (kfuse.jit's dispatch key holds them): a cached call's torch hot path."""
        import cupy
        if dev != cupy.cuda.runtime.getDevice():
            return self(tensors)
        host = self.host_inputs
        return self._run_torch(cupy, [t if k in host else interop.tensor_view(t) for k, t in enumerate(tensors)], dev)

    def _run_torch(self, cupy, views, dev) -> list:
        """Run on torch's current stream, outputs allocated by torch; torch tensors out."""
        outs = interop.TorchOutputs(dev)
        stream = interop.launch_stream(dev)
        # what was queued on CuPy's stream (scalar uploads) comes first; not while torch captures a
        # CUDA graph (torch.cuda.graph), where an event of another stream would end the capture
        if stream is not None and not interop.torch_capturing():
            stream.wait_event(cupy.cuda.get_current_stream().record())
        with stream if stream is not None else contextlib.nullcontext():
            results = self._run(cupy, views, dev, outs.empty)
        return [r if isinstance(r, HostFlag) else outs.result(r, o.dtype) for r, o in zip(results, self.plan.graph.outputs)]

    def _run(self, cupy, arrs, dev, empty) -> list:
        """Run the groups (those computing index checks first: ``check_flags``); ``empty(shape,
        dtype)`` allocates the kernels' outputs."""
        graph = self.plan.graph
        props = self._props.get(dev)
        if props is None:
            props = self._props[dev] = devmod.device_properties(dev)
        if self.launchers is None:
            self.arch = props["arch"]
            self.launchers = [self._launcher(g, k) for g, k in zip(self.plan.groups, self.kirs)]
            for launcher, emitted in zip(self.launchers, self._emitted):
                launcher.emitted = emitted
            self._single = self._single_kernel()
        if self._single is not None:        # one kernel whose outputs are the program's
            positions, launch, out_sig = self._single
            outs = [empty(shape, dtype) for shape, dtype in out_sig]
            launch([arrs[k] for k in positions], outs, props)
            return outs
        env = dict(zip(graph.inputs, arrs))
        flags = CheckFlags(cupy, len(self._flags)) if self._flags else None
        for i in self._order:
            g, kir, launch, out_sig = self.plan.groups[i], self.kirs[i], self.launchers[i], self._out_sig[i]
            ins = [env[n] for n in g.inputs]
            if kir.contraction is not None:     # CuPy and cuBLAS calls: CuPy arrays of tensor views
                outs = self._matmul(g, kir, launch, [interop.as_cupy(a) for a in ins], out_sig, props)
            elif kir.attention is not None:
                out = empty(*out_sig[0])
                self._attention(g, kir)([interop.as_cupy(a) for a in ins], interop.as_cupy(out))
                outs = [out]
            else:
                into = self.buffers_in_place(g, ins, env)
                outs = [into[k] if k in into else empty(shape, dtype)
                        for k, (shape, dtype) in enumerate(out_sig)]
                launch(ins, outs, props)
            env.update(zip(g.outputs, outs))
            if flags is not None:
                flags.read(self._flags, g.outputs, outs)
        results = []
        for o in graph.outputs:
            if flags is not None and self._flags.get(o) in flags.events:
                results.append(HostFlag(flags, self._flags[o]))
            elif o in env:
                results.append(env[o])
            elif o in self.plan.views:
                results.append(interop.reshaped(env[o.inputs[0]], o.shape))
            elif o.op is Op.CONST:
                # (bfloat16: its uint16 bits; a torch caller gets it back as torch.bfloat16)
                results.append(interop.host_to_device(np.asarray(o.attr("value"), dtype=o.dtype)))
            else:
                raise DeviceError(f"kfuse: output {o!r} was computed by no kernel of the plan")
        return results

    def buffers_in_place(self, g, ins, env) -> dict:
        """``{output: buffer}`` for the outputs of group ``g`` written into an existing buffer:
        a scatter's base dead after it (``Plan.scatters_in_place``), or an argument: the argument a
        scatter updates (``Plan.scatters_into_argument``) or whose final value an elementwise kernel
        computes (``KernelGroup.in_place``). For an argument, first the index checks (computed by
        earlier kernels) are read back, a host sync, and a failed one raises NumPy's IndexError
        before anything is written into it. An argument whose elements overlap in memory (a zero
        stride: a broadcast view) is written through a copy instead (NumPy would refuse to write
        it; the call's write-back then does what it does for any copy)."""
        if g.id in self._into_argument:
            written = [(o, ins[i]) for o, i in self._into_argument[g.id]]
        elif g.in_place:
            written = [(o, env[base]) for o, base in g.in_place]
        else:
            return {o: ins[i] for o, i in self._in_place.get(g.id, {}).items()}
        raise_failed_checks(self.plan.graph, env)
        return {o: a for o, a in written if writable_layout(a)}

    def _single_kernel(self):
        """``(input positions, launcher, output signature)`` when the plan is one non-matmul
        kernel whose outputs are the program's outputs, in order (the common case: its call then
        skips the value environment); else None."""
        if (len(self.plan.groups) != 1 or self.kirs[0].contraction is not None
                or self.kirs[0].attention is not None or self._into_argument
                or self.plan.groups[0].in_place):
            return None         # (a write into an argument: _run writes the argument itself)
        g, graph = self.plan.groups[0], self.plan.graph
        if tuple(graph.outputs) != tuple(g.outputs) or len(set(g.outputs)) != len(g.outputs):
            return None
        index = {n: k for k, n in enumerate(graph.inputs)}
        if any(n not in index for n in g.inputs):
            return None
        return [index[n] for n in g.inputs], self.launchers[0], self._out_sig[0]

    def _attention(self, g, kir):
        """An attention group's runner (``runtime.attention``), made on its first call."""
        run = self._mm_info.get(g.id)
        if run is None:
            from .attention import group_runner
            run = self._mm_info[g.id] = group_runner(g, kir)
        return run

    # -- matmul groups ------------------------------------------------------------------------
    allow_tf32 = False      # kfuse.jit(allow_tf32=True): f32 products through cuBLAS may use TF32

    def _matmul(self, g, kir, launch, ins, out_sig, props) -> list:
        """A matmul group, as the plan picked (``g.cost.impl``): ``"generated"`` runs the one
        fused GEMM kernel (kfuse.runtime.gemm); otherwise the cuBLAS product, then the group's
        epilogue kernel over it, writing in place into the product's buffer when that is safe."""
        import cupy
        info = self._mm_info.get(g.id)
        if info is None:
            info = self._mm_info[g.id] = matmul_plan(g, kir)
        gen, donor, epi = info
        if gen is not None:
            return [gen(ins, cupy.empty(out_sig[0][0], interop.storage_dtype(out_sig[0][1])), self.allow_tf32)]
        c = kir.contraction
        prod = contract(c, ins, self.allow_tf32, (kir.inputs[c.lhs].dtype, kir.inputs[c.rhs].dtype))
        if (epi is not None and donor is not None and len(out_sig) == 1 and prod.shape == out_sig[0][0]
                and prod.dtype == out_sig[0][1] and prod.flags.c_contiguous and prod.ndim in (2, 3)):
            return [epi(ins, prod)]      # the GEMM epilogue kernel, in place over the product
        ins.append(prod)
        outs = []
        for k, (shape, dtype) in enumerate(out_sig):
            if (k == donor and prod.shape == shape and prod.dtype == dtype
                    and prod.flags.c_contiguous):
                outs.append(prod)        # in place: each element is read, then written, by one thread
            else:
                outs.append(cupy.empty(shape, interop.storage_dtype(dtype)))   # bfloat16: its bits
        launch(ins, outs, props)
        return outs



# The cuBLAS path's epilogue: "gemm" = runtime.gemm's epilogue kernel in place over the product when
# the group's epilogue translates (measured faster than the group's elementwise kernel on an H200,
# 2026-11-22: benchmarks/GEMM_NOTES.md run 5); "group" = always the group's own kernel.
CUBLAS_EPILOGUE = "gemm"


def matmul_plan(g, kir) -> tuple:
    """``(generated, donor, epilogue)`` for one matmul group: ``generated`` is a callable
    ``(ins, out, allow_tf32) -> out`` when the plan picked the generated kernel (and it applies),
    else None; ``donor`` is the index of the output that may be written in place into the cuBLAS
    product's buffer, or None (see :func:`in_place_output`); ``epilogue`` a callable
    ``(ins, prod) -> prod`` running the epilogue in place with the GEMM epilogue kernel, or None."""
    impl = getattr(getattr(g, "cost", None), "impl", "")
    gen = epi = None
    if impl == "generated":
        from .gemm import group_runner
        gen = group_runner(g, kir)
    donor = in_place_output(g, kir)
    if gen is None and donor is not None and CUBLAS_EPILOGUE == "gemm":
        from .gemm import group_epilogue
        epi = group_epilogue(g, kir)
    return gen, donor, epi


def in_place_output(g, kir) -> int | None:
    """The output the epilogue kernel may write over the product it reads, or None. Safe when
    the product is read only at the output element's own index (an elementwise epilogue: each
    element is loaded, then stored, by the same thread; no other thread touches it), the product
    is not itself a group output, and exactly one output has the product's shape and dtype."""
    c = kir.contraction
    if c is None or g.anchor in g.outputs:
        return None
    rank = len(kir.domain)
    ident = tuple(K.IVar(f"i{d}") for d in range(rank))
    prod = kir.inputs[c.result]
    for ph in kir.phases:
        for st in tuple(ph.pre) + tuple(ph.body):
            if isinstance(st, K.Load) and st.buf == c.result and tuple(st.index) != ident:
                return None
        if ph.accs:
            return None
    cands = [k for k, o in enumerate(kir.outputs)
             if o.dtype == prod.dtype and tuple(o.shape) == tuple(prod.shape)]
    if len(cands) != 1:
        return None
    k = cands[0]
    for ph in kir.phases:
        for st in tuple(ph.pre) + tuple(ph.body):
            if isinstance(st, K.Store) and st.buf == k and tuple(st.index) != ident:
                return None
    return k
