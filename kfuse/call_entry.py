"""A built program and how to feed it a caller's arguments (``Entry``): argument conversion,
run-time checks, the written arguments' overlap test and write-backs, copies of returned
arguments and constants, NumPy scalar results, and the hot paths built after a first run (the
GPU's direct launch, the CPU's direct call)."""
from __future__ import annotations

import numpy as np

from .errors import UnsupportedError
from .ir.graph import Graph, copied_outputs, unflatten
from .ir.ops import Op
from .ir.specs import ScalarSpec
from .dispatch_guard import never
from .dispatch_keys import array_kind
from .runtime.interop import copy_array


def _buffer(a) -> tuple[int, int]:
    """(address of the first element, bytes) of a NumPy/CuPy array or torch tensor."""
    if isinstance(a, np.ndarray):
        return a.__array_interface__["data"][0], a.nbytes
    if hasattr(a, "data_ptr"):
        return a.data_ptr(), a.numel() * a.element_size()
    return a.data.ptr, a.nbytes


def _is_array(a) -> bool:
    """An array with a buffer (NumPy, CuPy, torch), not a scalar (a NumPy scalar has a shape too)."""
    return hasattr(a, "shape") and not isinstance(a, np.generic)


def _inside(a, buffers) -> bool:
    """Whether ``a`` starts inside one of ``buffers`` (a view of it, or it)."""
    if not _is_array(a):
        return False
    p = _buffer(a)[0]
    return any(start <= p < start + max(n, 1) for start, n in buffers)


def _overlap(a, b) -> bool:
    """Whether two arguments may share memory: NumPy's own test for host arrays, else the address
    ranges from each one's first element (a conservative test for strided views)."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.may_share_memory(a, b))
    (lo1, n1), (lo2, n2) = _buffer(a), _buffer(b)
    return lo1 < lo2 + max(n2, 1) and lo2 < lo1 + max(n1, 1)


def _fresh_outputs(graph: Graph, program) -> frozenset:
    """The outputs the function computed (``x * 1.0``, ``x + 0``) that the optimizer reduced to an
    argument itself: NumPy gives a new array there, so they are copied as ``x.copy()`` is, before
    the argument is written (``np.add.at(x, ...)`` later must not show in them). ``return x``
    itself stays ``x``."""
    plan = getattr(program, "plan", None)
    if plan is None or len(plan.graph.outputs) != len(graph.outputs):
        return frozenset()
    written = {k for _, k in graph.writebacks}
    return frozenset(k for k, (o, t) in enumerate(zip(plan.graph.outputs, graph.outputs))
                     if o.op is Op.INPUT and t is not o and k not in written)


def _numpy_scalar_outputs(graph: Graph) -> frozenset:
    """The returned outputs that eager NumPy would give as NumPy scalars: 0-d results of ufuncs,
    reductions and contractions, and an element picked by integer indices (``x[1, 2]``); not
    arguments, views of 0-d arrays, ``np.where``'s result, constants or copies."""
    from .trace.core import numpy_scalar_node

    def scalar(n) -> bool:
        if n.op is Op.WHERE:                    # np.where returns an ndarray, 0-d too
            return False
        if n.op is Op.RESHAPE and n.inputs[0].op in (Op.MATMUL, Op.SLICE):
            return True                         # a vector product, x[i, j]
        return numpy_scalar_node(n)

    def leaves(tree):
        if isinstance(tree, int):
            yield tree
        elif tree[0] in ("tuple", "list"):
            for t in tree[1]:
                yield from leaves(t)
        elif tree[0] == "dict":
            for _, t in tree[1]:
                yield from leaves(t)
    return frozenset(k for k in leaves(graph.out_tree)
                     if graph.outputs[k].shape == () and scalar(graph.outputs[k]))


class Entry:
    """A built program plus how to feed it the caller's arguments."""

    __slots__ = ("program", "graph", "positions", "specs", "backend", "_scalar_dtypes", "_torch_cpu",
                 "_device_arrays_only", "_cupy_device", "_torch_device", "_constants", "_host_checks", "_host_passes", "_by_value", "_copied",
                 "_scalars", "_seeds", "run", "keyed", "guard")

    def __init__(self, program, graph, positions, specs, backend, seeds=None):
        self.program = program
        self._seeds = seeds         # random ops' seed inputs (runtime.seeds), drawn every call
        self.graph = graph
        self.positions = positions
        self.specs = specs
        self.backend = backend
        self._scalar_dtypes = [s.dtype if isinstance(s, ScalarSpec) else None for s in specs]
        self._torch_cpu = False
        self._device_arrays_only = False
        self._cupy_device = None        # the device of an all-CuPy key's arrays (checked by the key)
        self._torch_device = None       # the same for an all-torch-CUDA key
        self._constants = {}            # (array kind, device) -> the graph's array constants there
        # graph inputs a GPU program's kernels take by value on the host (gpu_launch.host_value)
        self._by_value = getattr(program, "host_inputs", frozenset())
        self._host_checks = None        # reference.evaluator of the host checks (GPU backends)
        self._host_passes = None        # their pass test as straight Python (runtime.host_checks)
        if graph.host_checks:
            from .runtime.host_checks import compile_passes
            from .trace.reference import evaluator
            self._host_checks = evaluator([n for n, *_ in graph.host_checks])
            self._host_passes = compile_passes(graph, positions)
        # outputs returned as copies of an argument: x.copy(), and x * 1.0 optimized to x
        self._copied = copied_outputs(graph.out_tree) | _fresh_outputs(graph, program)
        # 0-d outputs that NumPy gives as NumPy scalars (x.sum(), np.exp of a 0-d array), returned
        # as such on NumPy inputs; CuPy and torch keep their 0-d arrays and tensors
        self._scalars = _numpy_scalar_outputs(graph) if backend.on_host else frozenset()
        # reached only through its dispatch key (JitFunction sets it), which holds each
        # argument's type, dtype, shape and strides: what the CPU's direct call is built for
        self.keyed = False
        self.run = self._dispatch       # a call: the first, then a direct call or the generic path
        self.guard = None               # the hot path's guard (dispatch_guard), made at a second call

    def guard_for(self, args: tuple):
        """The guard running this entry's generated hot path for calls with ``args``' dispatch
        key (made once, after the first call), or ``dispatch_guard.never`` where there is none."""
        if self.guard is None:
            if self.run == self._dispatch:
                return never
            from .dispatch_guard import make_guard
            self.guard = (make_guard(args, self.run) if hasattr(self.run, "source") else None) or never
        return self.guard

    def _dispatch(self, args: tuple):
        """The first call: the generic path, after which ``run`` becomes the direct call built
        for this entry where one applies (the GPU's direct launch; the CPU's direct call, for an
        entry reached through its dispatch key), else stays the generic path."""
        outs = self._run(args)
        if self.keyed and not self.backend.on_host and self._cupy_device is None and self._torch_device is None:
            self._device_of_arrays(args)
        if self._cupy_device is not None or self._torch_device is not None:
            self.run = self._direct_launch(args) or self._run
        elif self.keyed and self.backend.on_host:
            self.run = self._host_direct(args) or self._run
        else:
            self.run = self._run
        return outs

    def _device_of_arrays(self, args: tuple) -> None:
        """For a key of device arrays of one kind and host scalars the kernels take by value
        (``program.host_inputs``): the arrays' device, as ``kfuse.api`` sets it for a key of
        device arrays alone (the key holds every array's type and device, and each scalar's type)."""
        host = self._by_value
        arrays = [args[pos] for k, pos in enumerate(self.positions) if k not in host]
        if not host or not arrays:
            return
        kinds = {array_kind(a) for a in arrays}
        if kinds == {"cupy"}:
            devices = {a.data.device_id for a in arrays}
            self._cupy_device = devices.pop() if len(devices) == 1 else None
        elif kinds == {"torch"}:
            devices = {a.get_device() for a in arrays}
            self._torch_device = devices.pop() if len(devices) == 1 else None

    def _plain(self) -> bool:
        """Nothing to check, copy, draw or write back around the program's run."""
        g = self.graph
        return not (g.host_checks or g.writebacks or g.checks or g.constants or self._copied
                    or self._seeds is not None)

    def _host_direct(self, args: tuple):
        """The CPU's direct call (``runtime.cpu_direct``) for this entry's dispatch key, built
        after a run on ``args``; None where the entry is not plain or the arguments are not all
        NumPy (a CPU tensor is viewed per call)."""
        if self._torch_cpu or not self._plain():
            return None
        from .runtime.cpu_direct import build
        sources = [(pos, sdt if sdt is not None or not isinstance(args[pos], np.generic) else args[pos].dtype)
                   for pos, sdt in zip(self.positions, self._scalar_dtypes)]
        return build(self.program, args, sources, self.graph.out_tree, self._scalars)

    def _direct_launch(self, args: tuple):
        """The GPU's direct launch (``runtime.direct_launch``) of a one-kernel program over device
        arrays passed as they are and host scalars, with nothing to copy, draw or read back around
        it: host checks as generated lines, a write into an argument only where the kernel itself
        writes it in place; None where that does not hold."""
        g = self.graph
        if g.checks or g.constants or self._copied or self._seeds is not None or self._scalars:
            return None
        from .runtime.direct_launch import build
        checks = None
        if g.host_checks:
            from .runtime.host_checks import check_lines
            names: dict = {}
            lines = check_lines(g, self.positions, "return generic(args)", names)
            if lines is None:
                return None
            checks = (lines, names)
        kind, dev = ("cupy", self._cupy_device) if self._cupy_device is not None else ("torch", self._torch_device)
        return build(self.program, args, self.positions, kind, dev, g.out_tree, self._run, checks, g.writebacks)

    def _run(self, args: tuple):
        # x[i] of a Python int i: raise before any kernel (NumPy's error, from the evaluator)
        if self._host_checks is not None and not (self._host_passes is not None and self._host_passes(args)):
            self.graph.raise_failed_host_checks(
                self._host_checks(lambda n: args[self.positions[n.attr("index")]]))
        if self.graph.writebacks:
            self._check_written(args)
        seeds = self._seeds.draw(args) if self._seeds is not None else None
        arrays = self.arrays(args, seeds)
        if self._cupy_device is not None:
            outs = self.program.run_checked(arrays, self._cupy_device)
        elif self._torch_device is not None and seeds is None:     # (seeds are CuPy arrays: the general path)
            outs = self.program.run_torch_checked(arrays, self._torch_device)
        else:
            outs = self.program(arrays)
        if self._torch_cpu:
            import torch
            outs = [torch.from_numpy(np.ascontiguousarray(o)) for o in outs]
        self.graph.raise_failed_checks(lambda k: bool(outs[k]))    # raise, write nothing back
        if self._copied:            # x.copy() of an argument: a new array, before x is written
            outs = [copy_array(o) if k in self._copied else o for k, o in enumerate(outs)]
        if self.graph.constants:       # a returned constant (or a view of one) is the caller's own copy
            buffers = self._constant_buffers()
            outs = [copy_array(o) if _inside(o, buffers) else o for o in outs]
        for i, k in self.graph.writebacks:  # every kernel has run: now the arguments written into
            arg, new = args[self.positions[i]], outs[k]
            if _buffer(new) == _buffer(arg) and tuple(new.shape) == tuple(arg.shape):
                continue                    # written in place (a scatter into the argument)
            if _inside(new, [_buffer(arg)]):
                new = copy_array(new)       # (a view of the argument itself: x[...] = x[::-1])
            if hasattr(arg, "copy_"):
                arg.copy_(new)
            else:
                arg[...] = new
        if self._scalars and not self._torch_cpu:
            outs = [o[()] if k in self._scalars else o for k, o in enumerate(outs)]
        return unflatten(self.graph.out_tree, outs, lambda k: args[self.positions[k]])

    def _check_written(self, args: tuple) -> None:
        """Before any kernel runs: an argument the function writes into must be writable and must
        not share memory with another argument (NumPy would let each write show in the other)."""
        arrays = [(self.graph.inputs[i].attr("name"), args[pos]) for i, pos in enumerate(self.positions)
                  if _is_array(args[pos])]
        for i, _ in self.graph.writebacks:
            name, arg = self.graph.inputs[i].attr("name"), args[self.positions[i]]
            if isinstance(arg, np.ndarray) and not arg.flags.writeable:
                raise ValueError(f"{self.graph.name}(): argument {name!r} is written into but is "
                                 "read-only (assignment destination is read-only)")
            for other, a in arrays:
                if other != name and _overlap(arg, a):
                    raise UnsupportedError(
                        f"kfuse: {self.graph.name}() writes into argument {name!r}, which shares "
                        f"memory with argument {other!r}: pass separate arrays (a copy of one)")

    def _constant_buffers(self) -> list[tuple[int, int]]:
        """(address, bytes) of every copy of the array constants handed to the program."""
        copies = [list(self.graph.constants)] + list(self._constants.values())
        return [_buffer(c) for cs in copies for c in cs]

    def arrays(self, args: tuple, seeds: list | None = None) -> list:
        """The program's inputs (graph.inputs order) from the caller's arguments; ``seeds``: the
        call's draws for its random ops (None: the placeholders, zero)."""
        if seeds is not None:
            arrays = self.arrays(args)
            k = len(arrays) - len(self.graph.constants)
            return arrays[:k] + self._seeds.place(arrays[k:], seeds, None if self.backend.on_host else self._on_device)
        if self._device_arrays_only and not self._by_value:
            arrays = [args[pos] for pos in self.positions]
            return arrays + self._constants_like(arrays) if self.graph.constants else arrays
        arrays = []
        on_host = self.backend.on_host
        for k, (pos, sdt) in enumerate(zip(self.positions, self._scalar_dtypes)):
            a = args[pos]
            if k in self._by_value:
                from .runtime.gpu_launch import as_host_value
                a = as_host_value(a, self.graph.inputs[k].dtype)
            elif sdt is not None or isinstance(a, np.generic):
                a = np.asarray(a, dtype=sdt)
                if not on_host:
                    from .runtime.interop import host_to_device
                    a = host_to_device(a)
            elif on_host and type(a) is not np.ndarray and array_kind(a) == "torch-cpu":
                a = a.detach().resolve_conj().resolve_neg().numpy()   # zero-copy view of a CPU tensor
                #   (a copy where a lazy conjugate or negative bit is set: numpy() refuses those)
                self._torch_cpu = True
            arrays.append(a)
        return arrays + self._constants_like(arrays) if self.graph.constants else arrays

    def _on_device(self, a):
        """A host scalar (a seed) on the GPU: the device of an all-CuPy key's arrays, else CuPy's."""
        from .runtime.interop import host_to_device
        if self._cupy_device is None:
            return host_to_device(a)
        import cupy
        with cupy.cuda.Device(self._cupy_device):
            return host_to_device(a)

    def _constants_like(self, arrays: list) -> list:
        """The traced function's array constants, copied once to where its arguments live (host
        arrays for the CPU backend; else the device of the first device argument, as torch
        tensors when that is one, else CuPy arrays)."""
        if self.backend.on_host:
            return list(self.graph.constants)
        kinds = [(k, a) for a in arrays if (k := array_kind(a)) in ("cupy", "torch")]
        kind, first = kinds[0] if kinds else ("cupy", None)
        import cupy
        dev = (first.get_device() if kind == "torch" else first.data.device_id) if first is not None \
            else cupy.cuda.Device().id
        have = self._constants.get((kind, dev))
        if have is None:
            from .runtime.interop import host_to_device
            with cupy.cuda.Device(dev):
                have = [host_to_device(c) for c in self.graph.constants]
            if kind == "torch":
                import torch
                from .ir.dtypes import BF16
                have = [torch.from_dlpack(d).view(torch.bfloat16) if c.dtype == BF16 else torch.from_dlpack(d)
                        for c, d in zip(self.graph.constants, have)]
            self._constants[(kind, dev)] = have
        return have
