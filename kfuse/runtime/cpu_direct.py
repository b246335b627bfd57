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

A kernel large enough to take threads whose parallel variant is not yet worth getting
(``cpu_par_policy``'s rent rule) runs its sequential variant here too while its account's lease
holds, its time added to the rent inline; past the lease, tuned or on a busy machine it runs
through ``cpu.launch``.

It is built only for programs with nothing around their kernels (``build`` says what: no writes
into arguments or scatters, products, float16 views, empty outputs, constants); the caller
(``call_entry.Entry``) builds it only for an entry reached through its dispatch key and with nothing to
check, copy or write back. A kernel that took threads, or tuned, is run through ``cpu.launch`` (the thread
choice per call), as on the generic path.
"""
from __future__ import annotations

import time

import numpy as np

from ..codegen.cpu_layout import allocate
from ..ir.graph import unflatten_source
from . import cpu
from .cpu import BUSY_PAR_MIN_WORK, PAR_MIN_WORK, CpuProgram, launch
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
    ns: dict = {"empty": np.empty, "allocate": allocate, "asarray": np.asarray, "launch": launch,
                "clock": time.perf_counter, "busy": cpu.machine_busy}
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
            if perm:            # (allocate's, inline: the buffer in loop order, then its view)
                ns[f"S{name}"] = tuple(shape[d] for d in perm)
                ns[f"P{name}"] = tuple(int(d) for d in np.argsort(perm))
                lines.append(f"    {name}_l = empty(S{name}, D{name})")
                lines.append(f"    {name} = {name}_l.transpose(P{name})")
            else:
                lines.append(f"    {name} = empty(S{name}, D{name})")
            outs.append(name)
        lines += _kernel_call(i, k, ns, ins, outs, [values[n] for n in k.group.inputs + k.group.outputs], perm)
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


def _kernel_call(i: int, k, ns: dict, ins: list, outs: list, values: list, perm: tuple) -> list[str]:
    """The lines that run kernel ``i``: its sequential variant for these strides called directly
    (its arguments shaped as the schedule takes them: ``_Kernel.seq_form``) where the kernel stays
    on one thread, or, where it would take threads but rents (``cpu_par_policy``), while its
    account's lease holds (the call timed, its rent added); else ``cpu.launch`` (threads chosen
    per call). A tuning applied later (``CpuProgram.set_variant``) is seen through ``launch``.
    Where the sequential variant runs a native object (``cpu_native``) for these arguments, its
    C entry is called on the argument tuple, the dispatcher only where the entry refuses them
    (returns non-zero: another dtype or layout, or the kernel raised)."""
    ns[f"K{i}"] = k
    generic = f"launch(K{i}, [{', '.join(ins)}], [{', '.join(outs)}])"
    nin = len(ins)
    form = k.seq_form(values[:nin])
    if form is None:
        return [f"    {generic}"]
    fn, ops, extra = form
    ns[f"F{i}"] = fn
    names = ins + outs
    # (sizes and a schedule's extra integers as np.int64: what the native entry reads)
    scalars = [np.int64(z) if type(z) is int else z for z in list(k.size_args) + list(extra)]
    args = list(values) + scalars
    exprs = names + [_const(ns, f"Z{i}_{j}", z) for j, z in enumerate(scalars)]
    for j, p, shape in ops:
        args[j] = (args[j].transpose(p) if p else args[j]).reshape(shape)
        base = f"{names[j]}_l" if j >= nin and p and tuple(p) == tuple(perm) else \
            (f"{names[j]}.transpose({_const(ns, f'T{i}_{j}', tuple(p))})" if p else names[j])
        exprs[j] = f"{base}.reshape({_const(ns, f'R{i}_{j}', tuple(shape))})"
    call = f"F{i}({', '.join(exprs)})"
    native = fn.native_for(args) if isinstance(fn, NativeKernel) else None
    run = [call] if native is None else [f"if N{i}(({', '.join(exprs)},)):", f"    {call}"]
    if native is not None:
        ns[f"N{i}"] = native.call
    if k.work < PAR_MIN_WORK or not k.parallel_ok:
        return [f"    if K{i}.tuned:", f"        {generic}", "    else:"] + [f"        {r}" for r in run]
    ns[f"A{i}"] = k.variants.account(values[:nin])[0]
    lines = [f"    if K{i}.tuned:", f"        {generic}"]
    if k.work < BUSY_PAR_MIN_WORK * k.loops:         # (auto_threads: one thread, nothing rented)
        lines += ["    elif busy():"] + [f"        {r}" for r in run]
    work = _const(ns, f"W{i}", k.work)         # (a name: every size of a shape class writes one text)
    return lines + [f"    elif A{i}.rent < A{i}.lease and {work} < A{i}.lease_work:", "        t0 = clock()"] + \
        [f"        {r}" for r in run] + [f"        A{i}.rent += (clock() - t0) * A{i}.share",
                                      "    else:", f"        {generic}"]


def _const(ns: dict, name: str, value) -> str:
    """``name``, bound to ``value`` in the generated function's namespace."""
    ns[name] = value
    return name
