"""The hot path of a cached GPU call whose plan is one kernel, launched once: one Python function,
generated for one dispatch key of one program, that takes the caller's arguments and returns the
caller's result (the CPU's twin is ``runtime.cpu_direct``).

The kernel's parameter block (the buffers' addresses, then the sizes, strides and variant scalars)
is built after the first call; the dispatch key fixes every argument's type, dtype, shape, strides
and device, so per call the function only checks the current device and the inputs' 16-byte
alignment (what the key does not hold: the variant chosen was built for them), allocates the
outputs, writes the buffers' addresses and the host scalars' values (``Buffer.host``: a Python or
NumPy scalar argument, a by-value kernel parameter) into the block and calls ``cuLaunchKernel`` on
the caller's stream (CuPy's current stream, or torch's for torch tensors, whose pointers are passed
without CuPy views), then returns the user's structure. Straight-line code: no loops, lists or
lookups. An entry whose host scalars index an axis (``x[:, t] = k``) checks them first
(``runtime.host_checks``' lines); a kernel that writes into an argument in place (a scatter into
it, ``x += y``) checks that argument's address range against every other array argument's.
Where a check does not pass, the call takes the generic path, which raises NumPy's error.

It replaces, per call, the program's generic path (argument checks the dispatch key already made,
the launcher's variant lookup, CuPy's argument conversion, the output tree): a 1024-element CuPy
call 14.6 µs against ``cupy.ElementwiseKernel``'s 8.5 µs before the direct launch, 9.9 against
7.6 with it as a class walking lists (H200, 2026-11-27). A call it cannot take (another current
device, another alignment, a Python int past int64) goes to the generic path, which picks the
variant for it."""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from ..ir.graph import unflatten_source
from .generated import define

# a host scalar's slot in the parameter block, by dtype (a 16-bit float: its bits)
_CTYPE = {"bool": ctypes.c_bool, "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
          "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32,
          "uint64": ctypes.c_uint64, "float32": ctypes.c_float, "float64": ctypes.c_double,
          "float16": ctypes.c_uint16, "bfloat16": ctypes.c_uint16}



def _dim3(d) -> tuple:
    d = tuple(d) if isinstance(d, (tuple, list)) else (d,)
    if len(d) == 1 and isinstance(d[0], (tuple, list)):
        d = tuple(d[0])
    return tuple(int(x) for x in d) + (1,) * (3 - len(d))


def build(program, args, positions, kind: str, dev: int, out_tree, generic, checks=None, writebacks=()):
    """The direct call ``direct(args) -> result`` of ``program`` (a ``GpuProgram`` that has run)
    for arguments ``args`` just run through it, whose graph inputs are ``args`` at ``positions``
    (device arrays of ``kind`` "cupy" or "torch" on device ``dev``, and host scalars the kernel
    takes by value), returning ``out_tree`` (the traced graph's return structure); ``generic(args)``
    is the call's general path, taken where the launch does not fit. ``checks``: ``(lines, names)``
    of the entry's host checks (``host_checks.check_lines`` failing to ``return generic(args)``);
    ``writebacks``: the graph's ``(input, output)`` writes into arguments, each of which must be
    the kernel writing that argument in place. Its text is ``direct.source``. None where the
    program is not one plain launch (several kernels, a product, a scatter into a copy, a
    two-stage reduction, run-time checks read back, a bfloat16 result for CuPy, a torch tensor
    with a lazy conjugate or negative bit)."""
    plan, graph = program.plan, program.plan.graph
    if (len(plan.groups) != 1 or program.launchers is None or graph.checks
            or program._bf16_out and kind == "cupy"):
        return None
    g, launcher, out_sig = plan.groups[0], program.launchers[0], program._out_sig[0]
    index = {n: k for k, n in enumerate(graph.inputs)}
    written = _written(program, g)
    if (written is None or launcher.kir.contraction is not None or launcher.kir.attention is not None or any(n not in index for n in g.inputs)
            or any(o not in g.outputs for o in graph.outputs)
            or any(not _written_in_place(graph, i, k, g, written) for i, k in writebacks)):
        return None
    from . import interop
    from .device import device_properties
    from .gpu_launch import as_host_value, writable_layout
    host = program.host_inputs
    kargs = [as_host_value(args[positions[index[n]]], n.dtype) if index[n] in host else args[positions[index[n]]]
             for n in g.inputs]
    dev_in = [j for j, n in enumerate(g.inputs) if index[n] not in host]
    torch_kind = kind == "torch"
    if torch_kind:
        if (any(interop._torch_dtype(dt) is None for _, dt in out_sig)
                or any(kargs[j].is_conj() or kargs[j].is_neg() for j in dev_in)):     # resolved into a copy first
            return None
        views = [interop.tensor_view(a) if j in dev_in else a for j, a in enumerate(kargs)]
        fresh = interop.TorchOutputs(dev).empty
        mods = {j: kargs[j].data_ptr() % 16 for j in dev_in}
    else:
        views, fresh = kargs, interop.cupy_empty
        mods = {j: kargs[j].data.ptr % 16 for j in dev_in}
    outs = [views[written[o]] if o in written else fresh(shape, dt) for o, (shape, dt) in enumerate(out_sig)]
    if (any(o.size == 0 for o in outs) or not all(writable_layout(views[j]) for j in written.values())
            or not all(launcher.extent(d) for d in range(len(launcher.kir.domain)))):
        return None
    _, func, grid, block, tail, finish = launcher.choose(views, outs, device_properties(dev))
    if finish is not None or not all(hasattr(t, "address") for t in tail):
        return None
    ins = [("host", positions[index[n]], n.dtype.name) if index[n] in host
           else ("dev", positions[index[n]], mods[j]) for j, n in enumerate(g.inputs)]
    overlaps = _overlaps(positions, args, written, g, index, torch_kind)
    return _generate(func, _dim3(grid), _dim3(block), tail, ins,
                     [("arg", written[o]) if o in written else ("new", tuple(shape), dt) for o, (shape, dt) in enumerate(out_sig)],
                     [g.outputs.index(o) for o in graph.outputs], kind, dev, out_tree, positions, kargs, generic,
                     checks, overlaps)


def _written(program, g) -> dict | None:
    """``{kernel output: kernel input}`` for the outputs group ``g`` writes into an argument's own
    buffer (a scatter into the argument it updates, ``x += y``); None where the kernel writes
    into a copy of one of its inputs (a scatter's base, copied first: the generic path)."""
    if g.id in program._into_argument:
        return dict(program._into_argument[g.id])
    if program.launchers[0].kir.init_from:
        return None
    if g.in_place:
        if any(base not in g.inputs for _, base in g.in_place):
            return None
        return {o: g.inputs.index(base) for o, base in g.in_place}
    return {}


def _written_in_place(graph, i, k, g, written) -> bool:
    """Whether the write-back of graph output ``k`` into graph input ``i`` is the kernel's own write."""
    if not (k < len(graph.outputs) and i < len(graph.inputs) and graph.outputs[k] in g.outputs):
        return False
    o = g.outputs.index(graph.outputs[k])
    return o in written and g.inputs[written[o]] is graph.inputs[i]


def _overlaps(positions, args, written, g, index, torch_kind) -> list:
    """``(written argument's position, its bytes, other argument's position, its bytes)`` for
    every written argument and every other array argument (``call_entry._overlap``'s test, on
    the address of each first element and the byte count the dispatch key fixes)."""
    def nbytes(a):
        return a.numel() * a.element_size() if torch_kind else a.nbytes
    targets = {positions[index[g.inputs[j]]] for j in written.values()}
    arrays = [p for p in positions if hasattr(args[p], "shape") and not isinstance(args[p], np.generic)]
    return [(w, nbytes(args[w]), p, nbytes(args[p])) for w in sorted(targets) for p in arrays if p != w]


def _generate(func, grid, block, tail, ins, outs, order, kind, dev, out_tree, positions, kargs, generic,
              checks, overlaps):
    """The source of the direct call and its function (see :func:`build`). ``ins``: per kernel
    input ``("dev", argument position, address mod 16)`` or ``("host", position, dtype name)``;
    ``outs``: per kernel output ``("new", shape, dtype)`` or ``("arg", kernel input)``."""
    from cupy.cuda import driver
    n_out, n = len(outs), len(outs) + len(ins)
    slots = (ctypes.c_uint64 * max(n, 1))()         # the buffers' addresses and host values, written per call
    params = (ctypes.c_uint64 * max(n + len(tail), 1))(
        *[ctypes.addressof(slots) + 8 * k for k in range(n)], *[t.address for t in tail])
    ns = {"generic": generic, "launch": driver.launchKernel, "F": func.ptr, "PARAMS": ctypes.addressof(params),
          "SLOTS": slots, "LOCK": threading.Lock(), "KEEP": (func, tail, params), "U16": np.uint16}
    head = ["def direct(args):"] + [f"    a{j} = args[{p}]" for j, (_, p, _) in enumerate(ins)]
    head += ["    " + x for x in (checks[0] if checks else ())]
    ns.update(checks[1] if checks else {})
    dev_in = [j for j, (how, _, _) in enumerate(ins) if how == "dev"]
    lines, ptr, out_ptr, stream = _outputs(kind, dev, outs, kargs, ns)
    # (the checks before the outputs are allocated: a miss allocates nothing here)
    check = [f"getdev() != {dev}"] + [f"p{j} % 16 != {ins[j][2]}" for j in dev_in]
    check += [f"not -9223372036854775808 <= a{j} <= 9223372036854775807" for j, (how, _, dt) in enumerate(ins)
              if how == "host" and dt == "int64"]       # (a Python int past int64: NumPy's OverflowError)
    head += [f"    p{j} = {ptr.format(f'a{j}')}" for j in dev_in]
    at = {p: f"p{j}" for j, (how, p, _) in enumerate(ins) if how == "dev"}     # argument position -> address
    for w, nw, p, np_ in overlaps:         # a written argument sharing memory with another one
        for q in (w, p):
            if q not in at:
                at[q] = f"q{q}"
                head.append(f"    q{q} = {ptr.format(f'args[{q}]')}")
        ns[f"N{w}_{p}"], ns[f"N{p}_{w}"] = max(nw, 1), max(np_, 1)
        check.append(f"({at[p]} < {at[w]} + N{w}_{p} and {at[w]} < {at[p]} + N{p}_{w})")
    head += [f"    if {' or '.join(check)}:", "        return generic(args)"]
    lines = head + lines
    lines.append("    with LOCK:                # (the slots are shared; the driver copies the block at launch)")
    lines += [f"        SLOTS[{i}] = {out_ptr.format(i)}" for i, o in enumerate(outs) if o[0] == "new"]
    lines += [f"        SLOTS[{i}] = p{o[1]}" for i, o in enumerate(outs) if o[0] == "arg"]
    lines += [f"        SLOTS[{n_out + j}] = p{j}" for j in dev_in]
    for j, (how, _, dt) in enumerate(ins):
        if how == "host":
            ns[f"V{j}"] = _CTYPE[dt].from_buffer(slots, 8 * (n_out + j))
            value = f"int(a{j}.view(U16))" if dt in ("float16", "bfloat16") else f"a{j}"
            lines.append(f"        V{j}.value = {value}")
    dims = ["GX", "GY", "GZ", "BX", "BY", "BZ"]     # (names: every size of a shape class writes one text)
    ns.update(zip(dims, grid + block))
    lines.append(f"        launch(F, {', '.join(dims)}, 0, {stream}, PARAMS, 0)")
    results = [f"a{outs[k][1]}" if outs[k][0] == "arg" else f"o{k}" for k in order]
    return define(lines, unflatten_source(out_tree, results, lambda k: f"args[{positions[k]}]", ns), ns)


def _outputs(kind, dev, outs, kargs, ns) -> tuple:
    """``(allocation lines, address of an array expression, address of output i, stream
    expression)`` for ``kind`` (format strings); the names the lines use go into ``ns``."""
    lines = []
    if kind == "torch":
        import torch
        from .interop import _torch_dtype
        ns.update(getdev=getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device), empty=torch.empty,
                  empty_like=torch.empty_like, stream=torch._C._cuda_getCurrentRawStream)
        for i, o in enumerate(outs):
            if o[0] != "new":
                continue
            shape, dt = o[1], o[2]
            ns[f"S{i}"], ns[f"D{i}"] = shape, _torch_dtype(dt)
            like = next((j for j, a in enumerate(kargs) if hasattr(a, "is_contiguous") and tuple(a.shape) == shape
                         and a.dtype == ns[f"D{i}"] and a.is_contiguous()), None)  # (empty_like: 1.7 against 2.0 us, H200)
            alloc = f"empty_like(a{like})" if like is not None else f"empty(S{i}, dtype=D{i}, device={dev})"
            lines.append(f"    o{i} = {alloc}")
        return lines, "{}.data_ptr()", "o{}.data_ptr()", f"stream({dev})"
    import cupy
    from .interop import storage_dtype
    ns.update(getdev=cupy.cuda.runtime.getDevice, ndarray=cupy.ndarray, current=cupy.cuda.get_current_stream)
    for i, o in enumerate(outs):
        if o[0] == "new":
            ns[f"S{i}"], ns[f"D{i}"] = o[1], storage_dtype(o[2])
            lines.append(f"    o{i} = ndarray(S{i}, D{i})")
    return lines, "{}.data.ptr", "o{}.data.ptr", "current().ptr"
