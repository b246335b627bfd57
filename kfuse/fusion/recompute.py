"""Recompute or materialise (the rule ``RULE``, a ``rules.Rule``, after the fusion rules): an
elementwise cluster whose values other kernels read is either written once and read back
(materialised) or recomputed inside each reader (pulled), whichever the roofline model predicts
faster; broadcast-shaped producers (scalars, bias rows) usually get recomputed, a big producer
read by two kernels gets materialised. Each producer is decided once, consumers first.
"""
from __future__ import annotations

from ..ir.graph import Node
from ..ir.ops import ELEMENTWISE, LOOKUP, MOVEMENT, RANDOM
from .dag import topological_order
from .gemm_epilogue import side_inputs_ok
from .kinds import GroupKind
from .legality import Clustering
from .rules import PlanContext, Rule


def _subtree(state: Clustering, p: int, needed: set[Node], cand: set[Node]) -> set[Node]:
    """The nodes of cluster ``p`` that computing ``needed`` takes, down to what the reader reads
    from memory (nodes outside ``cand``: a reduction's result a broadcast reads)."""
    out, stack = set(), list(needed)
    while stack:
        n = stack.pop()
        if n in out:
            continue
        out.add(n)
        stack.extend(i for i in n.inputs if i in state.members[p] and i in cand)
    return out


def _recomputable(state: Clustering, p: int) -> set[Node]:
    """Nodes of cluster ``p`` another kernel could recompute: elementwise work that does not
    depend (inside ``p``) on a reduction or a matmul (the whole of an elementwise cluster, the
    prologue of a reduction), and a movement to the cluster's domain of anything (a reduction's
    result broadcast back: the reader reads the result and broadcasts it itself, no full-size
    copy). Random bits count: their value is a function of the position and the seed
    (``ir/philox.py``), the same in every kernel that computes them."""
    out: set[Node] = set()
    domain = state.shape(p).domain
    for n in sorted(state.members[p], key=state.order.__getitem__):
        if n.op in ELEMENTWISE | MOVEMENT | RANDOM and all(i in out or i not in state.members[p]
                                                   for i in n.inputs):
            out.add(n)
        elif n.op in MOVEMENT and tuple(n.shape) == tuple(domain):
            out.add(n)          # a result broadcast back over the domain: the reader broadcasts it
    return out


def _pull_allowed(state: Clustering, c: int, nodes: set[Node]) -> bool:
    if any(n.op in LOOKUP and n.inputs[0] in nodes for n in state.nodeset(c)):
        return False                # a searched table stays a buffer
    shape = state.shape(c)
    if shape.kind == GroupKind.ELEMENTWISE:
        return True
    if shape.kind in (GroupKind.REDUCE, GroupKind.SCAN):
        return all(n.shape == shape.domain for n in nodes)
    if shape.kind == GroupKind.SCATTER:     # (never the array it writes into: copied before it runs)
        return shape.anchor.inputs[0] not in nodes
    if shape.kind == GroupKind.MATMUL:      # values its epilogue reads (a scale cast to float64)
        return side_inputs_ok(shape.anchor, nodes)
    return False


def _pulls(state: Clustering, p: int) -> dict[int, set[Node]]:
    """The nodes of producer cluster ``p`` each reader cluster would recompute: the recomputable
    values it reads of ``p`` (where it may pull them); what else it reads of ``p`` (a reduction's
    result) it goes on reading from memory. Adafactor's column pass reads ``g * g`` and the row
    statistics of the row pass: it recomputes the first from ``g`` and reads the second."""
    cand = _recomputable(state, p)
    readers: dict[int, set[Node]] = {}
    for c in state.members:
        if c == p:
            continue
        ns = state.nodeset(c)
        got = {i for n in ns for i in n.inputs if i in state.members[p] and i not in ns} & cand
        if got:
            readers[c] = got
    pulls = {c: _subtree(state, p, need, cand) for c, need in readers.items()}
    return {c: s for c, s in pulls.items() if _pull_allowed(state, c, s)}


TIE = 1e-6     # relative: costs this close are a tie, which recomputing wins (a 4-element index
               # was decided by 2e-11 s of 1e-5, and flipped with the order the sums were added in)


class Recompute(Rule):
    """Per producer cluster, consumers first: pull its values into the readers when the model
    prices that no slower than writing and reading them back; else record the refusal.
    ``ctx.cost_of(state, cid, extra_pulled=set()) -> seconds`` prices one kernel."""
    name = "recompute"
    fixpoint = False

    def match(self, state: Clustering, ctx: PlanContext):
        dag = state.dag()
        order = topological_order(
            dag, key=lambda c: min(state.order[n] for n in state.members[c]))
        return [p for p in reversed(order)]

    def apply(self, state: Clustering, p: int, ctx: PlanContext) -> bool:
        if p not in state.members:
            return False
        pulls = _pulls(state, p)
        if not pulls:
            return False
        cost_of = ctx.cost_of
        before = cost_of(state, p) + sum(cost_of(state, c) for c in pulls)
        saved = {c: set(state.pulled[c]) for c in pulls}
        for c, s in pulls.items():
            state.pulled[c] |= s
        after = cost_of(state, p) + sum(cost_of(state, c) for c in pulls)
        if after <= before * (1 + TIE):
            state.notes[p].append(f"recomputed in {len(pulls)} reader kernel(s) "
                                  f"({after * 1e6:.1f} us vs {before * 1e6:.1f} us materialised)")
            return True
        for c in pulls:
            state.pulled[c] = saved[c]
        state.refuse(f"recompute {state.describe(p)} in {len(pulls)} reader kernel(s)",
                     f"cost: {after * 1e6:.1f} us recomputed vs {before * 1e6:.1f} us materialised")
        return False


RULE = Recompute()
