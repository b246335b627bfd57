"""The hot path of a cached CPU call: one Python function, written for one dispatch key of one
program, that takes the caller's arguments and returns the caller's result.

The dispatch key (``api``) fixes every argument's type, dtype, shape and strides, so everything
the generic path (``call_entry.Entry._run`` and ``CpuProgram.__call__``) decides per call is decided
once here: which argument feeds which kernel input, how a Python scalar is converted, each
output's shape and dtype, which of a kernel's schedules the inputs' strides select (its compiled
Numba dispatcher, called directly), and how the outputs make the returned structure. What remains
per call is what must happen: scalar conversions, ``np.empty`` of each output, the kernel calls,
and the result. The function is generated as Python source (straight-line code: no loops, lists
or lookups per call), kept as its ``source`` attribute.

It is built only for programs with nothing around their kernels (``build`` says what: no writes
into arguments or scatters, products, float16 views, empty outputs, constants); the caller
(``call_entry.Entry``) builds it only for an entry reached through its dispatch key and with nothing to
check, copy or write back. A kernel large enough to take threads, or tuned, is run through
``cpu.launch`` (the thread choice per call), as on the generic path.
"""
from __future__ import annotations

import numpy as np

from ..codegen.cpu_layout import allocate
from ..ir.graph import unflatten_source
from .cpu import PAR_MIN_WORK, CpuProgram, launch
from .cpu_native import NativeKernel
from .generated import define



def build(program: CpuProgram, args: tuple, sources: list, out_tree, scalars: frozenset):
    """The direct call ``direct(args) -> result`` of ``program`` (which has run on ``args``) for
    their dispatch key, its text in ``direct.source``, or None where the program is not plain
    kernels over fresh outputs. ``sources``: for each graph input,
    ``(argument position, dtype to convert to or None)``; ``out_tree``: the traced graph's return
    structure over the program's outputs; ``scalars``: outputs returned as NumPy scalars."""
    if not isinstance(program, CpuProgram):
        return None
    plan = program.plan
    graph = plan.graph
    if len(sources) != len(graph.inputs) or any(not k.plain or k.f16 for k in program.kernels):
        return None
    ns: dict = {"empty": np.empty, "allocate": allocate, "asarray": np.asarray, "launch": launch}
    lines = ["def direct(args):"]
    names, values = {}, {}
    for j, (node, (pos, dtype)) in enumerate(zip(graph.inputs, sources)):
        names[node] = f"a{j}"
        if dtype is None:
            values[node] = args[pos]
            lines.append(f"    a{j} = args[{pos}]")
        else:
            ns[f"D{j}"] = np.dtype(dtype)
            values[node] = np.asarray(args[pos], dtype)
            lines.append(f"    a{j} = asarray(args[{pos}], D{j})")
    for i, k in enumerate(program.kernels):
        if any(n not in names for n in k.group.inputs):
            return None
        ins = [names[n] for n in k.group.inputs]
        perm = k.out_perm([values[n] for n in k.group.inputs])   # (fixed by the key's strides)
        outs = []
        for o, (node, (shape, dtype)) in enumerate(zip(k.group.outputs, k.out_specs)):
            name = names[node] = f"k{i}_{o}"
            ns[f"S{name}"], ns[f"D{name}"] = tuple(shape), np.dtype(dtype)
            values[node] = allocate(shape, dtype, perm)     # (for the strides that pick the schedule)
            if perm:
                ns[f"P{name}"] = perm
                lines.append(f"    {name} = allocate(S{name}, D{name}, P{name})")
            else:
                lines.append(f"    {name} = empty(S{name}, D{name})")
            outs.append(name)
        lines += _kernel_call(i, k, ns, ins, outs, [values[n] for n in k.group.inputs + k.group.outputs])
    results = []
    for o, node in enumerate(graph.outputs):
        if node in names:
            expr = names[node]
        elif node in plan.views and node.inputs[0] in names:
            ns[f"V{o}"] = tuple(node.shape)
            expr = f"{names[node.inputs[0]]}.reshape(V{o})"
        else:
            return None         # (a constant output: the generic path builds it)
        results.append(f"{expr}[()]" if o in scalars else expr)
    return define(lines, unflatten_source(out_tree, results, lambda k: f"args[{sources[k][0]}]", ns), ns)


def _kernel_call(i: int, k, ns: dict, ins: list, outs: list, values: list) -> list[str]:
    """The lines that run kernel ``i``: its sequential dispatcher for these strides called
    directly where the kernel stays on one thread, else ``cpu.launch`` (threads chosen per call);
    a tuning applied later (``CpuProgram.set_variant``) is seen through ``launch``. Where the
    sequential variant runs a native object (``cpu_native``) for these arguments, its C entry is
    called on the argument tuple, the dispatcher only where the entry refuses them (returns
    non-zero: another dtype or layout, or the kernel raised)."""
    ns[f"K{i}"] = k
    arrays = ", ".join(ins + outs)
    generic = f"launch(K{i}, [{', '.join(ins)}], [{', '.join(outs)}])"
    hit = k.variants.direct.get(tuple(a.strides for a in values[:len(ins)]))
    if hit is None or k.work >= PAR_MIN_WORK:
        return [f"    {generic}"]
    ns[f"F{i}"] = hit[0]
    sizes = []
    for j, z in enumerate(k.size_args):
        ns[f"Z{i}_{j}"] = z
        sizes.append(f"Z{i}_{j}")
    call = f"F{i}({', '.join([arrays] + sizes)})"
    native = hit[0].native_for(values + list(k.size_args)) if isinstance(hit[0], NativeKernel) else None
    if native is None:
        return [f"    if K{i}.tuned:", f"        {generic}", "    else:", f"        {call}"]
    ns[f"N{i}"] = native.call
    return [f"    if K{i}.tuned:", f"        {generic}",
            f"    elif N{i}(({', '.join([arrays] + sizes)},)):", f"        {call}"]
