"""How many dependent passes a row kernel makes: the reductions that wait on one another along a
row, and whether full-level work follows the last one. Read by the planner's re-read or split
decision (``reduction.row_decision``) and the GPU model's pass latency (``gpu_chunks``)."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node
from ..ir.ops import REDUCE, Op


def phases(nodes: set[Node], order: dict[Node, int], outputs=()) -> tuple[int, bool]:
    """(number of dependent reduction phases, whether full-level work follows the last one). A
    float32 sum of ``x - c`` (``c`` of the row level) is a phase after ``x``'s, not ``c``'s, and
    its shift no full-level work (codegen.shifted_sum sums ``x`` and subtracts ``n c`` after);
    so is a float32 sum of ``(x - c) ** 2`` beside a sum of ``x`` (codegen.variance folds it into
    that sum's pass), its deviation and square none either."""
    phase: dict[Node, int] = {}
    full = []                           # full-level nodes after a reduction, with their phase
    domain = next(iter(r.inputs[0].shape for r in nodes if r.op in REDUCE), None)
    users: dict[Node, list] = {}
    for n in nodes:
        for i in n.inputs:
            users.setdefault(i, []).append(n)
    variances = folded_variances(nodes, domain)
    folded = deviations(variances)
    for n in sorted(nodes, key=order.__getitem__):
        x = _shifted_operand(n, domain) or variances.get(n)
        p = max((phase[i] for i in ((x,) if x is not None else n.inputs) if i in phase), default=0)
        if n.op in REDUCE:
            phase[n] = p + 1
        elif p:
            phase[n] = p
            absorbed = n not in outputs and users.get(n) and all(
                _shifted_operand(u, domain) is not None or u in folded or u in variances for u in users[n])
            if n.shape == domain and not absorbed and n.op is not Op.BROADCAST:     # (a row-level value's view)
                full.append(p)
    last = max((v for k, v in phase.items() if k.op in REDUCE), default=0)
    # (full-level work on an earlier phase's result feeds a later reduction's pass: no pass of its own)
    return last, any(p == last for p in full)


def _shifted_operand(n: Node, domain) -> Node | None:
    """``x`` where ``n`` is a float32 sum of ``x - c``, ``x + c`` or ``c - x`` over its rows,
    ``c`` the same along them (a row-level value broadcast back); else None."""
    if n.op is not Op.SUM or n.dtype != np.float32 or not n.inputs:
        return None
    s, axes = n.inputs[0], tuple(n.attr("axes"))
    if s.op not in (Op.SUBTRACT, Op.ADD) or s.dtype != np.float32 or s.shape != domain or len(s.inputs) != 2:
        return None
    level = [_row_level(i, domain, axes) for i in s.inputs]
    return s.inputs[level.index(False)] if sorted(level) == [False, True] else None


def folded_variances(nodes, domain) -> dict[Node, Node]:
    """``{n: x}`` for each float32 sum ``n`` among ``nodes`` of ``(x - c) ** 2`` over its rows
    (``c`` the same along them, ``x`` float32) beside a float32 sum of ``x`` over the same rows
    among ``nodes``: the sum's pass ``codegen.variance`` folds ``n`` into."""
    sums = {(m.inputs[0], tuple(m.attr("axes"))) for m in nodes
            if m.op is Op.SUM and m.dtype == np.float32 and m.inputs}
    out = {}
    for n in nodes:
        x = _squared_deviation(n, domain)
        if x is not None and (x, tuple(n.attr("axes"))) in sums:
            out[n] = x
    return out


def deviations(variances: dict[Node, Node]) -> set[Node]:
    """The deviations ``x - c`` and their squares that the folded ``variances`` sum: computed in
    the pass of ``x``'s sum, no pass of their own."""
    return {v for n in variances for v in (n.inputs[0], n.inputs[0].inputs[0])}


def _squared_deviation(n: Node, domain) -> Node | None:
    """``x`` where ``n`` is a float32 sum of ``(x - c) ** 2`` over its rows, ``c`` the same along
    them and ``x`` float32; else None."""
    if n.op is not Op.SUM or n.dtype != np.float32 or not n.inputs:
        return None
    sq, axes = n.inputs[0], tuple(n.attr("axes"))
    if not (sq.op is Op.SQUARE or sq.op is Op.MULTIPLY and len(sq.inputs) == 2 and sq.inputs[0] is sq.inputs[1]):
        return None
    d = sq.inputs[0]
    if d.op is not Op.SUBTRACT or d.dtype != np.float32 or d.shape != domain or len(d.inputs) != 2:
        return None
    x, c = d.inputs
    if x.dtype != np.float32 or _row_level(x, domain, axes) or not _row_level(c, domain, axes):
        return None
    return x


def _row_level(c: Node, domain, axes) -> bool:
    """Whether ``c`` is the same along the reduced ``axes`` of ``domain``: of extent 1 there, or
    broadcast from such a shape."""
    while c.op is Op.BROADCAST and c.inputs:
        c = c.inputs[0]
    shape = (1,) * (len(domain) - len(c.shape)) + tuple(c.shape)
    return len(shape) == len(domain) and all(shape[a] == 1 for a in axes)
