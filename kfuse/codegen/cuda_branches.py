"""Where-arms as branches (CUDA emitter, elementwise kernels): a ``where`` whose condition is computed
from loop indices alone (a concatenation's or a pad's piece test: ``(i1 + s) // span == block``, a
triangular mask) and one of whose arms computes more than cheap arithmetic runs only the arm it
selects. The statements that feed one arm and nothing else move into an ``if``/``else`` around it,
so an element of ``concatenate([x, x * x, sin(z)], 1)`` loads and computes only its own piece
instead of every piece's values and a chain of selects (285 -> 161 µs, H200). Pieces span whole
runs of the index, so a warp takes one side but at a piece's edge. Arms of loads and cheap ops
stay selects (a branch a lane cost rotary embeddings 20%: the measurements below).

Only pure statements move (loads, constants, indices, ops); a kernel holding a scan, search or
combining store keeps its straight-line form. The arms' values are the ``where``'s own (its casts):
rendered as ``where(c, a, a)`` in the taken branch."""
from __future__ import annotations

import dataclasses
from typing import Callable

from . import kernel_ir as K

_PURE = (K.Load, K.Const, K.Index, K.Op)
# Tunables, chosen on an H200 (2026-11-28, kfuse alone, µs, select / an arm's own load worth a
# branch / only a costly op worth one): concat([x, x*x, sin(z)]) 285 / 163 / 161, rotary 3-D 86 /
# 106 / 84, rotary 4-D 156 / 200 / 151, x - roll(x, 1, -1) 138 / 117 / 138, pad(exp(x)) 143 / 150 /
# 151, triu(exp(x)) 178 / 175 / 177; the loads left before the branch: concat 190, rotary 84, pad 137.
ENABLED = True          # False keeps every where a select
LOAD_WORTH = False      # an arm's own load (not fetched before) makes it worth a branch
SINK_LOADS = True       # an arm's own loads move into it (False: they run before the branch)


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
        if isinstance(s, _PURE) and users.get(s.dst) and (SINK_LOADS or not isinstance(s, K.Load)) and \
                all(u in mine or (u == at and s.dst == value) for u in users[s.dst]):
            mine.add(k)
    return mine


# ops a select of both arms costs no more than a branch: an arm of these stays a select
CHEAP = frozenset({"negative", "positive", "add", "subtract", "multiply", "cast", "where", "equal",
                   "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
                   "logical_or", "logical_not", "minimum", "maximum", "absolute"})


def _worth(stmts, arm: set[int], fetched) -> bool:
    """Whether arm ``arm`` computes more than cheap ops (or, with ``LOAD_WORTH``, reads memory of
    its own: a load not already fetched)."""
    return any((LOAD_WORTH and isinstance(stmts[j], K.Load) and stmts[j].dst not in fetched)
               or (isinstance(stmts[j], K.Op) and stmts[j].op not in CHEAP) for j in arm)


def sink(stmts, fetched=frozenset()) -> dict | None:
    """``{where position: (then positions, else positions)}`` of the wheres worth branching, or
    None where nothing moves (the kernel renders as straight lines). ``fetched``: loads the
    emitter reads before the statements (vector fetches), which cost an arm nothing."""
    stmts = list(stmts)
    if not ENABLED or not all(isinstance(s, _PURE) or (isinstance(s, K.Store) and not s.combine) for s in stmts):
        return None
    pos = {s.dst: k for k, s in enumerate(stmts) if not isinstance(s, K.Store)}
    users: dict[str, list[int]] = {}
    for k, s in enumerate(stmts):
        for r in K.stmt_reads(s):
            users.setdefault(r, []).append(k)
    indexed = _index_only(stmts)
    out = {}
    for k, s in enumerate(stmts):
        if not (isinstance(s, K.Op) and s.op == "where" and s.args[0] in indexed) or s.dtype.startswith("complex"):
            continue                # (a complex where keeps its select: its arms are two-part values)
        then = _arm(stmts, pos, users, s, s.args[1], s.args[2])
        other = _arm(stmts, pos, users, s, s.args[2], s.args[1])
        if _worth(stmts, then, fetched) or _worth(stmts, other, fetched):
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
