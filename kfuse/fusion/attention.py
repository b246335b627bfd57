"""Attention fusion: ``softmax(score(q @ k^T)) @ v`` as one kernel group.

A pass over the grouped plan (``pipeline.plan``, GPU devices). Three groups that the rules leave
apart (a matmul and a reduction cannot share a kernel) become one ``attention`` group when:

* the first is a matmul group ``q @ k^T`` (``k^T`` a transpose of the last two axes of a read
  array, or an array read as it is) with an elementwise epilogue (the score: scaling, bias or mask
  arrays, ``np.where`` masks, soft-capping), writing one array read by nothing but
* a row-wise softmax over the last axis (``e = exp(x - x.max(-1))``, ``e / e.sum(-1)``; ``x`` the
  score or a cast of it), writing one array read by nothing but
* the left operand of a plain matmul group ``p @ v`` (``p`` maybe cast), the program's value;
* q, k and v are float16 or bfloat16 of one dtype, k's and v's batch dims broadcasting to q's
  (grouped-query: k and v shared across heads), head dims equal and a multiple of 16 up to 256
  (``HEAD_DIMS``), the products in their dtype (bfloat16: float32, as NumPy's loop).

Elementwise groups that only move an operand there (a broadcast of k or v over the heads, k's
transpose) are absorbed: the kernel reads their input through strides. The group keeps what it
stands for (``Match.parts``, ``Match.copies``): a backend without the attention kernel runs those
instead (:func:`unfuse`). Why a candidate did not match is a plan note (``kfuse.explain``).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..ir.ops import Op
from .cost import Cost
from .kinds import GroupKind
from .plan import KernelGroup

HEAD_DIMS = (16, 32, 64, 96, 128, 160, 192, 256)      # multiples of 16 the attention kernel's fragments tile
DTYPES = ("float16", "bfloat16")
# Achieved share of the device's f16 tensor rate (the kernel is mma.sync, online softmax, one
# exp per score). H200, (32, 2048, 128) f16: 227 TFLOP/s of 4*B*M*N*D against the spec's 693.
EFFICIENCY = 0.31


def _strip(n, ops=(Op.BROADCAST, Op.RESHAPE)):
    while n.op in ops:
        n = n.inputs[0]
    return n


def _last_axis_reduce(n, op) -> bool:
    return n.op is op and tuple(n.attr("axes")) == (len(n.inputs[0].shape) - 1,)


def softmax_input(p):
    """``x`` when ``p`` is NumPy-style softmax of ``x`` over its last axis, else None."""
    if p.op is not Op.TRUE_DIVIDE:
        return None
    e, s = p.inputs[0], _strip(p.inputs[1])
    if e.op is not Op.EXP or not _last_axis_reduce(s, Op.SUM) or s.inputs[0] is not e:
        return None
    d = e.inputs[0]
    if d.op is not Op.SUBTRACT:
        return None
    x, mx = d.inputs[0], _strip(d.inputs[1])
    if not _last_axis_reduce(mx, Op.MAX) or mx.inputs[0] is not x:
        return None
    return x


def _swapped(n) -> bool:
    r = len(n.shape)
    return n.op is Op.PERMUTE and tuple(n.attr("perm")) == tuple(range(r - 2)) + (r - 1, r - 2)


def _widened(n):
    """``n``'s input when ``n`` casts bfloat16 to float32 (NumPy's bfloat16 matmul loop), else ``n``."""
    if n.op is Op.CAST and n.inputs[0].dtype.name == "bfloat16" and n.dtype == np.float32:
        return n.inputs[0]
    return n


def view_of(n) -> tuple:
    """``(base, perm)`` with a product's operand ``n`` equal to ``base`` transposed by ``perm`` then
    broadcast to ``n``'s shape, seen through bfloat16 widening casts, permutes (a (B, S, H, D)
    array's ``transpose(0, 2, 1, 3)``) and broadcasts of batch dims (k or v shared across heads);
    ``perm`` is None where there is no such view (a matrix dim broadcast, a permute moving a dim
    a broadcast added)."""
    perm = tuple(range(len(n.shape)))
    while True:
        if _widened(n) is not n:
            n = _widened(n)
        elif n.op is Op.PERMUTE:
            p = n.attr("perm")
            perm, n = tuple(p[j] for j in perm), n.inputs[0]
        elif n.op is Op.BROADCAST:
            src = n.inputs[0]
            added = len(n.shape) - len(src.shape)
            if (any(j < added or src.shape[j - added] != n.shape[j] for j in perm[-2:])
                    or tuple(perm[:added]) != tuple(range(added))):
                return n, None      # a matrix dim broadcast, or a permute of an added dim
            perm, n = tuple(x - added for x in perm[added:]), src
        else:
            return n, perm


def _chain(n, base) -> set:
    """The nodes from a product's operand ``n`` down to the array ``base`` it views."""
    out = set()
    while n is not base:
        out.add(n)
        n = n.inputs[0]
    return out


def operands(mm1, mm2) -> tuple:
    """``((q, perm), (k^T, perm), (v, perm))``: the arrays a triple's products read and the views
    of them the products take (:func:`view_of`; the second is ``k`` seen as (..., d, n))."""
    return view_of(mm1.inputs[0]), view_of(mm1.inputs[1]), view_of(mm2.inputs[1])


def _copies(mm1, mm2, home, users, returned) -> tuple:
    """The elementwise groups materialising a product's operand by movement alone (a broadcast
    of k or v over the heads, k's transpose) that nothing else reads: the attention kernel reads
    their input through strides instead."""
    out = []
    for n, (base, _) in zip((mm1.inputs[0], mm1.inputs[1], mm2.inputs[1]), operands(mm1, mm2)):
        g = home.get(n)
        if (g is not None and g.kind == GroupKind.ELEMENTWISE and g.outputs == (n,) and n not in returned
                and users.get(n, set()) <= {mm1, mm2} and base in g.inputs
                and all(x.op in (Op.BROADCAST, Op.PERMUTE, Op.CAST) for x in g.nodes if x not in g.inputs)):
            out.append(g)
    return tuple(dict.fromkeys(out))


def _match(g1, g2, g3, copies, users, returned) -> str | None:
    """Why ``(g1, g2, g3)`` (reading ``copies``' outputs) is not attention, or None when it is."""
    mm1, mm2 = g1.anchor, g3.anchor
    if len(g1.outputs) != 1 or len(g2.outputs) != 1:
        return "the scores or the softmax have another consumer"
    score, p = g1.outputs[0], g2.outputs[0]
    if score in returned or p in returned:
        return "the scores or the softmax are returned"
    x = softmax_input(p)
    if x is None or _strip(x, (Op.CAST,)) is not score:
        return "the row-wise kernel is not a softmax of the scores over their last axis"
    if users.get(score, set()) - set(g2.nodes) or users.get(p, set()) - set(g3.nodes):
        return "the scores or the softmax have another consumer"
    views = operands(mm1, mm2)
    if any(perm is None for _, perm in views):
        return "q, k or v is no strided view of an array (a matrix dim broadcast)"
    (q, _), (k, _), (v, _) = views
    if len({q.dtype, k.dtype, v.dtype}) != 1 or q.dtype.name not in DTYPES:
        return f"q, k and v must share one dtype of {DTYPES}"
    read = set(g1.inputs + g3.inputs).union(*(c.inputs for c in copies))
    if not {q, k, v} <= read:
        return "q, k and v must be arrays read by the products (not computed in their kernels)"
    products = {q.dtype} | ({np.dtype(np.float32)} if q.dtype.name == "bfloat16" else set())
    if mm1.dtype not in products or mm2.dtype not in products:
        return "the products must be computed in the operands' dtype (NumPy's float16/bfloat16 loops)"
    allowed = {mm2, mm2.inputs[0]} | _chain(mm2.inputs[1], v)        # (v's view: permutes, casts)
    if _strip(mm2.inputs[0], (Op.CAST,)) is not p or not set(g3.nodes) <= allowed:
        return "the second product has an epilogue or its left operand is not the softmax"
    q_op, kt_op, v_op = mm1.inputs[0], mm1.inputs[1], mm2.inputs[1]      # (the views' shapes)
    r = len(q_op.shape)
    if r < 3 or not q_op.shape[:-2] == kt_op.shape[:-2] == v_op.shape[:-2] or kt_op.shape[-2] != q_op.shape[-1]:
        return "q needs rank 3 or more, k and v its batch dims and q and k one head dim"
    operand_reads = {q, k, q_op, kt_op}.union(*(c.outputs for c in copies))
    for x in g1.inputs:
        if x not in operand_reads and len(x.shape) > 2 and r > 3 and any(e != 1 for e in x.shape[:-2]):
            return "a score array varies along more than one batch dim"
    d = q_op.shape[-1]
    if d not in HEAD_DIMS or v_op.shape[-1] != d:
        return f"head dims {d} (q, k) and {v_op.shape[-1]} (v) must be equal and in {HEAD_DIMS}"
    return None


@dataclasses.dataclass(frozen=True, eq=False)
class Match:
    """An attention group's make-up: ``parts`` the matmul, softmax and matmul groups it stands
    for, ``copies`` the movement-only groups before them it absorbed; ``causal``: the offset ``c`` when the score masks exactly the keys ``n > m + c`` with
    ``-inf`` (a constant boolean mask, ``np.triu(ones, c + 1)``-style), so that whole key tiles past
    the diagonal need not be computed; None otherwise."""
    parts: tuple
    causal: int | None = None
    mask: Any = None            # causal: the constant mask array's node, and the mask value
    keep: Any = False           # that keeps a score (the kernel tests n <= m + causal instead)
    copies: tuple = ()          # groups that only moved an operand (read through strides instead)


def _is_neg_inf(n) -> bool:
    n = _strip(n)
    return n.op is Op.CONST and n.attr("value") == float("-inf")


def causal_mask(g1, graph) -> tuple:
    """``(c, mask node, keep)`` when the score group masks exactly the keys ``n > m + c`` with a
    constant (M, N) array: ``where(mask, -inf, x)`` (``keep`` False), ``where(mask, x, -inf)``
    (``keep`` True) or ``x + mask`` of a float mask of ``-inf`` and zeros (``keep`` 0.0); ``keep``
    is the mask's value where a score is kept. Else ``(None, None, False)``."""
    consts = dict(zip(graph.inputs[len(graph.inputs) - len(graph.constants):], graph.constants))
    for n in g1.nodes:
        if n.op is Op.WHERE:
            cond, a, b = n.inputs
            node, keep = _strip(cond), _is_neg_inf(b) and not _is_neg_inf(a)
            if not (keep or _is_neg_inf(a)):
                continue
        elif n.op is Op.ADD:
            node = next((_strip(x) for x in n.inputs if _strip(x) in consts), None)
            keep = 0.0
        else:
            continue
        value = consts.get(node)
        if value is None or value.ndim != 2:
            continue
        if value.dtype == np.bool_:
            masked = value == (not keep)
        elif value.dtype.kind == "f" and isinstance(keep, float):
            masked = np.isneginf(value)
            if not np.all(masked | (value == 0)):
                continue
        else:
            continue
        c = _diagonal_offset(masked)
        if c is not None:
            return c, node, keep
    return None, None, False


def _diagonal_offset(masked) -> int | None:
    """``c`` when ``masked`` is exactly ``n > m + c`` over its (M, N) indices, else None."""
    M, N = masked.shape
    c = int(np.argmax(masked[0])) - 1 if masked[0].any() else N - 1
    return c if np.array_equal(masked, np.arange(N)[None, :] > np.arange(M)[:, None] + c) else None


def _cost(g1, g3, inputs, device) -> Cost:
    mm1, mm2 = g1.anchor, g3.anchor
    flops = 2.0 * (np.prod(mm1.shape) * mm1.inputs[0].shape[-1] + np.prod(mm2.shape) * mm1.shape[-1])
    reads = sum(n.nbytes for n in inputs)
    writes = sum(n.nbytes for n in g3.outputs)
    mem = (reads + writes) / device.bandwidth
    comp = flops / (device.peak(np.float16, "tensor") * EFFICIENCY)
    body = max(mem, comp)
    return Cost(int(reads), int(writes), float(flops), body + device.launch_overhead,
                "memory" if mem >= comp else "compute", 1, mem, comp)


def fuse(groups: list[KernelGroup], device, graph) -> tuple[list[KernelGroup], list[str]]:
    """The plan's groups with each attention triple as one group (ids renumbered), and a note
    per softmax-between-products that did not match, saying why."""
    if device.kind != "gpu":
        return groups, []
    home = {o: g for g in groups for o in g.outputs}
    users: dict = {}
    for g in groups:
        for i in g.inputs:
            users.setdefault(i, set()).update(n for n in g.nodes if i in n.inputs)
    merged, notes, gone, returned = {}, [], set(), set(graph.outputs)
    for g3 in groups:
        if g3.kind != GroupKind.MATMUL:
            continue
        p = _strip(g3.anchor.inputs[0], (Op.CAST,))
        g2 = home.get(p)
        if g2 is None or g2.kind != GroupKind.REDUCE:
            continue
        x = softmax_input(p) if p in g2.outputs else None
        g1 = home.get(_strip(x, (Op.CAST,))) if x is not None else None
        if g1 is None or g1.kind != GroupKind.MATMUL:
            continue
        copies = _copies(g1.anchor, g3.anchor, home, users, returned)
        why = _match(g1, g2, g3, copies, users, returned)
        if why:
            notes.append(f"attention: kernels {g1.id}, {g2.id}, {g3.id} not fused: {why}")
            continue
        made = {o for c in copies for o in c.outputs} | set(g2.outputs)
        ins = [i for i in dict.fromkeys(sum((c.inputs for c in copies), ()) + g1.inputs + g3.inputs)
               if i not in made]
        match = Match((g1, g2, g3), *causal_mask(g1, graph), copies=copies)
        merged[g3.id] = KernelGroup(
            id=g3.id, kind=GroupKind.ATTENTION, nodes=sum((c.nodes for c in copies), ()) + g1.nodes + g2.nodes + g3.nodes,
            inputs=tuple(ins), outputs=g3.outputs, domain=g3.domain, anchor=g3.anchor,
            cost=_cost(g1, g3, ins, device), attention=match, reason=_reason(match))
        gone |= {g1.id, g2.id} | {c.id for c in copies}
    if not merged:
        return groups, notes
    out = [merged.get(g.id, g) for g in groups if g.id not in gone]
    return renumber(out), notes


def _reason(match: Match) -> str:
    why = ("attention: softmax(score(q @ k^T)) @ v in one kernel (the scores stay on chip; online "
           "softmax; tensor cores for both products)")
    if match.causal is not None:
        why += f"; causal mask: keys n > m + {match.causal} skipped, the mask not read"
    if match.copies:
        why += f"; {len(match.copies)} operand copy kernel(s) read through strides instead (a broadcast k or v, a transpose)"
    return why


def renumber(groups) -> list[KernelGroup]:
    """The groups with ids 0, 1, ... in their order (their parts too)."""
    return [dataclasses.replace(g, id=k) for k, g in enumerate(groups)]


def unfuse(groups) -> list[KernelGroup]:
    """Each attention group replaced by the three groups it holds (ids renumbered)."""
    out = []
    for g in groups:
        out.extend(g.attention.copies + g.attention.parts if g.kind == GroupKind.ATTENTION else (g,))
    return renumber(out) if len(out) != len(groups) else list(groups)


def without_attention(plan, backend: str):
    """``plan`` with its attention groups run as their parts (a backend without the kernel)."""
    fused = [g for g in plan.groups if g.kind == GroupKind.ATTENTION]
    if not fused:
        return plan
    note = (f"attention: kernel(s) {', '.join(str(g.id) for g in fused)} run as a product, a softmax "
            f"and a product on the {backend} backend (it has no attention kernel)")
    return dataclasses.replace(plan, groups=tuple(unfuse(plan.groups)), notes=plan.notes + (note,))
