"""The kernel DAG of the planner: a small directed graph of cluster ids and the few walks the
fusion rules need (descendants, ancestors, reachability, a cycle check and the keyed topological
order).

Why not networkx: importing it costs about 70 ms (more than the rest of ``import kfuse``), and every
process plans again before it can reuse a kernel from the disk cache, so it sat on the warm-cache
path of every first call. The graphs here are a few dozen clusters. :func:`topological_order` gives
networkx's ``lexicographical_topological_sort`` order exactly (ties of the key broken by insertion
order), so plans are unchanged; ``tests/fusion/test_dag.py`` checks every walk against networkx.
"""
from __future__ import annotations

import heapq
from typing import Callable, Hashable, Iterable, Iterator


class Dag:
    """Nodes in insertion order, each with its successor and predecessor sets."""

    __slots__ = ("succ", "pred")

    def __init__(self) -> None:
        self.succ: dict[Hashable, dict[Hashable, None]] = {}
        self.pred: dict[Hashable, dict[Hashable, None]] = {}

    def add_node(self, n: Hashable) -> None:
        if n not in self.succ:
            self.succ[n] = {}
            self.pred[n] = {}

    def add_nodes_from(self, nodes: Iterable[Hashable]) -> None:
        for n in nodes:
            self.add_node(n)

    def add_edge(self, a: Hashable, b: Hashable) -> None:
        self.add_node(a)
        self.add_node(b)
        self.succ[a][b] = None
        self.pred[b][a] = None

    def __contains__(self, n) -> bool:
        return n in self.succ

    def __iter__(self) -> Iterator:
        return iter(self.succ)

    def __len__(self) -> int:
        return len(self.succ)

    def successors(self, n) -> Iterator:
        return iter(self.succ[n])

    def predecessors(self, n) -> Iterator:
        return iter(self.pred[n])

    @property
    def edges(self) -> list[tuple]:
        return [(a, b) for a, bs in self.succ.items() for b in bs]


def _reach(adj: dict, start) -> set:
    seen: set = set()
    stack = list(adj[start])
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(adj[n])
    seen.discard(start)
    return seen


def descendants(dag: Dag, n) -> set:
    """Every node reachable from ``n``, ``n`` excluded."""
    return _reach(dag.succ, n)


def ancestors(dag: Dag, n) -> set:
    """Every node from which ``n`` is reachable, ``n`` excluded."""
    return _reach(dag.pred, n)


def has_path(dag: Dag, a, b) -> bool:
    """Whether ``b`` is reachable from ``a`` (a node reaches itself)."""
    return a == b or b in descendants(dag, a)


def topological_order(dag: Dag, key: Callable) -> list:
    """The nodes in topological order, among the ready ones the least ``key`` first, ties in
    insertion order (networkx's ``lexicographical_topological_sort``). Raises ``ValueError`` on a
    cycle."""
    index = {n: i for i, n in enumerate(dag.succ)}
    indegree = {n: len(p) for n, p in dag.pred.items()}
    ready = [(key(n), index[n], n) for n, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, _, n = heapq.heappop(ready)
        order.append(n)
        for c in dag.succ[n]:
            indegree[c] -= 1
            if indegree[c] == 0:
                heapq.heappush(ready, (key(c), index[c], c))
    if len(order) != len(dag.succ):
        raise ValueError("the graph has a cycle")
    return order


def is_acyclic(dag: Dag) -> bool:
    try:
        topological_order(dag, key=lambda n: 0)
    except ValueError:
        return False
    return True
