"""Interleaved reads of the CPU rows order's innermost loop (:mod:`kfuse.codegen.cpu_schedule`).

``x[:, ::2] * x[:, 1::2]`` reads one buffer at ``start_a + 2*i`` and ``start_b + 2*i`` along its
last axis: the starts are run-time sizes, so LLVM cannot see that the two loads are neighbours
and leaves them scalar (a gather where it could prove the indices non-negative: slower still).
Where the starts differ by a known ``d`` with ``0 <= d < step`` at the call's sizes (the schedule
is chosen per sizes, as the pieces are), the loads read one row view that begins at the smaller
start, at ``step*j + d``: literal offsets, which LLVM's interleaved-access vectoriser turns into
wide loads and shuffles (a 2048x1024 f32 even*odd product: 0.29 -> 0.12 ms). The values read
are the same elements.
"""
from __future__ import annotations

from . import kernel_ir as K
from .cpu_pieces import affine


def _linear(e, loop_vars, sizes: dict):
    """``e`` as (coefficient value per loop variable, constant value) at these sizes, or None."""
    coefs, rest = [], e
    for v in loop_vars:
        a = affine(rest, v)
        if a is None:
            return None
        coefs.append(a[0])
        rest = a[1]
    if any(v.startswith("i") for v in K.expr_vars(rest)):
        return None
    return tuple(coefs), K.eval_expr(rest, sizes)


def groups(kir: K.KernelIR, dim: int, indices: dict, sizes: dict) -> tuple:
    """``((load dst, group, step, offset), ...)``: the loads of the innermost loop ``i<dim>`` that
    read one buffer's last axis at one step >= 2 and starts a known offset apart (their other
    indices equal at these sizes, affine in the outer loop variables); group numbers
    count from 0 and each group's smallest start has offset 0."""
    var, loop_vars = f"i{dim}", [f"i{d}" for d in range(len(kir.domain))]
    cands: dict = {}
    for ph in kir.phases:
        for s in ph.pre + ph.body:
            if not isinstance(s, K.Load) or s.dst in indices or not s.index or K.gathers(s.index) \
                    or any(var in K.expr_vars(e) for e in s.index[:-1]):
                continue
            a = affine(s.index[-1], var)
            if a is None or a[0] < 2:
                continue
            lin = _linear(a[1], loop_vars, sizes)
            others = tuple(_linear(e, loop_vars, sizes) for e in s.index[:-1])    # (equal values)
            if lin is not None and None not in others:
                cands.setdefault((s.buf, others, a[0], lin[0]), []).append((s.dst, lin[1]))
    out, g = [], 0
    for (_, _, step, _), members in cands.items():
        low = min(c for _, c in members)
        if len(members) < 2 or any(c - low >= step for _, c in members):
            continue
        out += [(dst, g, step, c - low) for dst, c in members]
        g += 1
    return tuple(out)


def row_view(load: K.Load, base_rest) -> str:
    """The row view a group reads: the load's buffer at its other indices, from the start."""
    head = "".join(f"{e}, " for e in load.index[:-1])
    return f"in{load.buf}[{head}max({base_rest}, 0):]"
