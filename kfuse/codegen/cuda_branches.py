"""Where-arms as branches (CUDA emitter, elementwise kernels): a ``where`` whose condition is computed
from loop indices alone (a concatenation's or a pad's piece test: ``(i1 + s) // span == block``)
runs only the arm it selects. The statements that feed one arm and nothing else move into an
``if``/``else`` around it, so an element of ``concatenate([x, x * x, sin(z)], 1)`` loads and
computes only its own piece instead of every piece's values and a chain of selects. Pieces span
whole runs of the index, so a warp takes one side but at a piece's edge.

Only pure statements move (loads, constants, indices, ops); a kernel holding a scan, search or
combining store keeps its straight-line form. The arms' values are the ``where``'s own (its casts):
rendered as ``where(c, a, a)`` in the taken branch."""
from __future__ import annotations

import dataclasses
from typing import Callable

from . import kernel_ir as K

_PURE = (K.Load, K.Const, K.Index, K.Op)


def _reads(s) -> set[str]:
    """The value names statement ``s`` reads (an index expression's value dependencies too)."""
    if isinstance(s, K.Op):
        return set(s.args)
    out = set()
    index = s.index if isinstance(s, (K.Load, K.Store)) else (s.expr,) if isinstance(s, K.Index) else ()
    for e in index:
        out |= K.expr_vars(e)
    if isinstance(s, K.Store):
        out.add(s.src)
    return out


def _index_only(stmts) -> set[str]:
    """The values computed from loop indices, sizes and constants alone."""
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, (K.Index, K.Const)) or (isinstance(s, K.Op) and set(s.args) <= out):
            out.add(s.dst)
    return out


def _arm(stmts, pos: dict, users: dict, w: K.Op, value: str, other: str) -> set[int]:
    """Positions of the statements before ``w`` whose values reach ``w`` only through its arm
    ``value`` (directly or through each other); none where the arm is also the condition or the
    other arm."""
    if value in (other, w.args[0]) or value not in pos:
        return set()
    at = pos[w.dst]
    mine: set[int] = set()
    for k in range(at - 1, -1, -1):
        s = stmts[k]
        if isinstance(s, _PURE) and users.get(s.dst) and \
                all(u in mine or (u == at and s.dst == value) for u in users[s.dst]):
            mine.add(k)
    return mine


def sink(stmts, complex_ok: bool = False) -> dict | None:
    """``{where position: (then positions, else positions)}`` of the wheres worth branching, or
    None where nothing moves (the kernel renders as straight lines)."""
    stmts = list(stmts)
    if not all(isinstance(s, _PURE) or (isinstance(s, K.Store) and not s.combine) for s in stmts):
        return None
    pos = {s.dst: k for k, s in enumerate(stmts) if not isinstance(s, K.Store)}
    users: dict[str, list[int]] = {}
    for k, s in enumerate(stmts):
        for r in _reads(s):
            users.setdefault(r, []).append(k)
    indexed = _index_only(stmts)
    out = {}
    for k, s in enumerate(stmts):
        if not (isinstance(s, K.Op) and s.op == "where" and s.args[0] in indexed) or \
                (not complex_ok and s.dtype.startswith("complex")):
            continue
        then = _arm(stmts, pos, users, s, s.args[1], s.args[2])
        other = _arm(stmts, pos, users, s, s.args[2], s.args[1])
        if any(isinstance(stmts[j], (K.Load, K.Op)) for j in then | other):
            out[k] = (then, other)
    return out or None


def render(stmts, plan: dict, line: Callable, declare: Callable) -> list[str]:
    """The statements' lines with each planned where as ``if (c) {...} else {...}``: ``line(s)``
    renders one statement, ``declare(w)`` the branch's result variable (``T v;``)."""
    stmts = list(stmts)
    owner: dict[int, int] = {}
    for w in sorted(plan):                  # an inner where (earlier) claims its arms first
        for j in plan[w][0] | plan[w][1]:
            owner.setdefault(j, w)

    def block(members: list[int]) -> list[str]:
        out: list[str] = []
        for k in members:
            s = stmts[k]
            if k not in plan:
                out.append(line(s))
                continue
            then, other = plan[k]
            out.append(declare(s))
            for head, arm, value in (("if", then, s.args[1]), ("} else", other, s.args[2])):
                c = s.args[0]
                out.append(f"if ({c}) {{" if head == "if" else "} else {")
                inner = block(sorted(j for j in arm if owner.get(j) == k))
                tmp = dataclasses.replace(s, dst=f"{s.dst}_{'t' if head == 'if' else 'f'}", args=(c, value, value))
                out += ["  " + x for x in "\n".join(inner + [line(tmp), f"{s.dst} = {tmp.dst};"]).split("\n")]
            out.append("}")
        return out
    return block([k for k in range(len(stmts)) if k not in owner])
