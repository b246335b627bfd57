"""Independent reductions in one pass: a pure rewrite of a reduce kernel's phases, for schedules
that read their rows from memory again in every pass (as ``codegen.variance``'s: a column pass,
rows too long to hold on chip).

Lowering gives every reduction a phase of its own, in graph order. A phase that reads nothing the
previous phase's accumulators produce (``x.min(0)`` beside ``x.max(0)``; a masked sum beside its
count) joins that phase's loop: its statements before the loop run before the joined loop, its
body and accumulators inside it, so the row is read once for both. Each accumulator still combines
its elements in the same order, so results are unchanged bit for bit. The planner's cost model
already counts dependent reduction levels only (``fusion.row_phases.phases``); this makes the
kernels match it: ``(x - x.min(0)) / (x.max(0) - x.min(0))`` over 65536x1024 float32 is two passes,
not three.
"""
from __future__ import annotations

import dataclasses

from . import kernel_ir as K
from .shifted_sum import shifted_sums
from .variance import one_pass_variance


def rereading_form(kir: K.KernelIR) -> K.KernelIR:
    """The kernel IR a schedule that reads memory again in every pass renders (a CUDA C column
    pass or uncached row, the CPU's ``cols`` order): a variance's two passes folded into one
    (``codegen.variance``), sums shifted by a row-level value freed of it (``codegen.shifted_sum``),
    then independent reductions joined (:func:`merge_independent_phases`)."""
    return merge_independent_phases(shifted_sums(one_pass_variance(kir)))


def merge_independent_phases(kir: K.KernelIR) -> K.KernelIR:
    """``kir`` with every reduction phase that does not read its predecessor's accumulators joined
    to it (module docstring); unchanged where no phase joins or a body stores or scans."""
    if any(isinstance(s, (K.Store, K.Scan)) for ph in kir.phases for s in ph.body if ph.accs):
        return kir
    out: list[K.Phase] = []
    for ph in kir.phases:
        last = out[-1] if out else None
        if last is not None and last.accs and ph.accs and not (_reads(ph) & {a.dst for a in last.accs}):
            out[-1] = K.Phase(last.pre + ph.pre, last.accs + ph.accs, last.body + ph.body)
        else:
            out.append(ph)
    if len(out) == len(kir.phases):
        return kir
    return dataclasses.replace(kir, phases=tuple(out))


def _reads(ph: K.Phase) -> set[str]:
    """Every statement variable ``ph`` reads: its statements', and its accumulators' sources and masks."""
    names = {n for s in ph.pre + ph.body for n in K.stmt_reads(s)}
    names |= {a.src for a in ph.accs} | {a.mask for a in ph.accs if a.mask is not None}
    return names
