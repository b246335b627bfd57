"""Elementwise fusion (the rule ``RULE``, a ``rules.Rule``).

Producer->consumer chains of one shape merge (an elementwise cluster with a consumer of its
domain, elementwise or not), and so do siblings of one shape that read a common buffer, so an
elementwise chain with broadcast inputs and several outputs is one kernel (the Adam step: 4 reads,
3 writes). Siblings are tried only when no chain merges; after any merge, chains again.
The recompute-or-materialise decision that follows is ``recompute.py``'s.
"""
from __future__ import annotations

from ..ir.graph import Node
from ..ir.ops import LEAF
from .kinds import GroupKind
from .legality import Clustering
from .rules import PlanContext, Rule, run_rule


def _ew(state: Clustering, c: int) -> bool:
    return state.shape(c).kind == GroupKind.ELEMENTWISE


def _chains(state: Clustering):
    """("chain", c, s): elementwise cluster c and a successor s over the same domain."""
    dag = state.dag()
    for c in state.clusters():
        if c not in state.members or not _ew(state, c):
            continue
        _, succ = state.neighbours(c, dag)
        for s in succ:
            if state.shape(s).domain == state.shape(c).domain:
                yield "chain", (c, s), dag


def _siblings(state: Clustering):
    """("siblings", clusters): the elementwise clusters reading one buffer (index math over a
    leaf counts as the leaf), for each buffer."""
    readers: dict[Node, list[int]] = {}
    for c in state.clusters():
        if not _ew(state, c):
            continue
        ns = state.nodeset(c)
        for i in {i for n in ns for i in n.inputs if i not in ns}:
            while i.op not in LEAF and i in state.free:
                i = i.inputs[0]
            readers.setdefault(i, []).append(c)
    for cs in readers.values():
        yield "siblings", cs, None


def _merge_siblings(state: Clustering, cs: list[int]) -> bool:
    """Merge every pair of clusters ``cs`` over one domain that can (no refusal recorded)."""
    cs = [c for c in dict.fromkeys(cs) if c in state.members]
    changed = False
    for a in range(len(cs)):
        for b in range(a + 1, len(cs)):
            ca, cb = cs[a], cs[b]
            if ca in state.members and cb in state.members and \
                    state.shape(ca).domain == state.shape(cb).domain:
                if state.merge(ca, cb, record=False):
                    changed = True
    return changed


class Elementwise(Rule):
    name = "elementwise"
    fixpoint = True

    def match(self, state: Clustering, ctx: PlanContext):
        yield from _chains(state)
        yield from _siblings(state)

    def apply(self, state: Clustering, candidate, ctx: PlanContext) -> bool:
        what, arg, dag = candidate
        if what == "chain":
            return state.merge(*arg, dag)       # a refused one is recorded with its reason
        return _merge_siblings(state, arg)


RULE = Elementwise()


def run(state: Clustering, device=None) -> None:
    run_rule(RULE, state, PlanContext(device))
