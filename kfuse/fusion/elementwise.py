"""Elementwise fusion and the recompute-or-materialise decision.

* :func:`run`: producer->consumer chains of one shape merge, and so do siblings of one shape that
  read a common buffer, so an elementwise chain with broadcast inputs and several outputs is one
  kernel (the Adam step: 4 reads, 3 writes).
* :func:`recompute`: an elementwise cluster whose values other kernels read is either written
  once and read back (materialised) or recomputed inside each reader (pulled), whichever the
  roofline model predicts faster; broadcast-shaped producers (scalars, bias rows) usually get
  recomputed, a big producer read by two kernels gets materialised.
"""
from __future__ import annotations

import networkx as nx

from ..ir.graph import Node
from ..ir.ops import ELEMENTWISE, LEAF, LOOKUP, MOVEMENT
from .legality import Clustering

name = "elementwise"


def _ew(state: Clustering, c: int) -> bool:
    return state.shape(c).kind == "elementwise"


def run(state: Clustering, device=None) -> None:
    changed = True
    while changed:
        changed = False
        dag = state.dag()
        for c in state.clusters():
            if c not in state.members or not _ew(state, c):
                continue
            _, succ = state.neighbours(c, dag)
            for s in succ:
                same = _ew(state, s) and state.shape(s).domain == state.shape(c).domain
                if same or (not _ew(state, s) and state.shape(s).domain == state.shape(c).domain):
                    if state.merge(c, s, dag):      # a refused one is recorded with its reason
                        changed = True
                        break
            if changed:
                break
        if changed:
            continue
        # siblings: same domain, a common buffer read by both
        readers: dict[Node, list[int]] = {}
        for c in state.clusters():
            if not _ew(state, c):
                continue
            ns = state.nodeset(c)
            for i in {i for n in ns for i in n.inputs if i not in ns}:
                while i.op not in LEAF and i in state.free:
                    i = i.inputs[0]
                readers.setdefault(i, []).append(c)
        for i, cs in readers.items():
            cs = [c for c in dict.fromkeys(cs) if c in state.members]
            for a in range(len(cs)):
                for b in range(a + 1, len(cs)):
                    ca, cb = cs[a], cs[b]
                    if ca in state.members and cb in state.members and \
                            state.shape(ca).domain == state.shape(cb).domain:
                        if state.merge(ca, cb, record=False):
                            changed = True
            if changed:
                break


def _subtree(state: Clustering, p: int, needed: set[Node]) -> set[Node]:
    """The nodes of cluster ``p`` that computing ``needed`` takes."""
    out, stack = set(), list(needed)
    while stack:
        n = stack.pop()
        if n in out:
            continue
        out.add(n)
        stack.extend(i for i in n.inputs if i in state.members[p])
    return out


def _recomputable(state: Clustering, p: int) -> set[Node]:
    """Nodes of cluster ``p`` another kernel could recompute: elementwise/movement work that does
    not depend (inside ``p``) on a reduction or a matmul (the whole of an elementwise cluster, the
    prologue of a reduction)."""
    out: set[Node] = set()
    for n in sorted(state.members[p], key=state.order.__getitem__):
        if n.op in ELEMENTWISE | MOVEMENT and all(i in out or i not in state.members[p]
                                                   for i in n.inputs):
            out.add(n)
    return out


def _pull_allowed(state: Clustering, c: int, nodes: set[Node]) -> bool:
    if any(n.op in LOOKUP and n.inputs[0] in nodes for n in state.nodeset(c)):
        return False                # a searched table stays a buffer
    shape = state.shape(c)
    if shape.kind == "elementwise":
        return True
    if shape.kind == "reduce":
        return all(n.shape == shape.domain for n in nodes)
    if shape.kind == "scatter":     # (never the array it writes into: copied before it runs)
        return shape.anchor.inputs[0] not in nodes
    return False


def recompute(state: Clustering, device, cost_of) -> None:
    """Decide, per elementwise cluster read by other kernels, recompute vs materialise.
    ``cost_of(state, cid, extra_pulled=set()) -> seconds`` prices one kernel (0 if it writes
    nothing)."""
    dag = state.dag()
    for p in reversed(list(nx.lexicographical_topological_sort(
            dag, key=lambda c: min(state.order[n] for n in state.members[c])))):
        if p not in state.members:
            continue
        cand = _recomputable(state, p)
        readers: dict[int, set[Node]] = {}
        for c in state.members:
            if c == p:
                continue
            ns = state.nodeset(c)
            got = {i for n in ns for i in n.inputs if i in state.members[p] and i not in ns}
            if not got <= cand:
                continue
            if got:
                readers[c] = got
        if not readers:
            continue
        pulls = {c: _subtree(state, p, need) for c, need in readers.items()}
        pulls = {c: s for c, s in pulls.items() if _pull_allowed(state, c, s)}
        if not pulls:
            continue
        before = cost_of(state, p) + sum(cost_of(state, c) for c in pulls)
        saved = {c: set(state.pulled[c]) for c in pulls}
        for c, s in pulls.items():
            state.pulled[c] |= s
        after = cost_of(state, p) + sum(cost_of(state, c) for c in pulls)
        if after <= before:
            state.notes[p].append(f"recomputed in {len(pulls)} reader kernel(s) "
                                  f"({after * 1e6:.1f} us vs {before * 1e6:.1f} us materialised)")
        else:
            for c in pulls:
                state.pulled[c] = saved[c]
            state.refuse(f"recompute {state.describe(p)} in {len(pulls)} reader kernel(s)",
                         f"cost: {after * 1e6:.1f} us recomputed vs {before * 1e6:.1f} us materialised")
