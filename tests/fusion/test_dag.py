"""The planner's kernel DAG (kfuse.fusion.dag) against networkx on random graphs: the same
descendants, ancestors, reachability, cycle answer and keyed topological order (the order decides
the plan's kernel order, so it must be networkx's exactly, ties included)."""
import random

import networkx as nx
import pytest

from kfuse.fusion import dag as D


def _pair(seed: int, n: int, p: float, cyclic: bool = False):
    rng = random.Random(seed)
    ids = list(range(n))
    rng.shuffle(ids)                     # insertion order differs from the id order
    ours, ref = D.Dag(), nx.DiGraph()
    ours.add_nodes_from(ids)
    ref.add_nodes_from(ids)
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < p:
                a, b = (ids[j], ids[i]) if cyclic and rng.random() < 0.1 else (ids[i], ids[j])
                ours.add_edge(a, b)
                ref.add_edge(a, b)
    return ours, ref, rng


@pytest.mark.parametrize("seed", range(40))
def test_walks_match_networkx(seed):
    ours, ref, rng = _pair(seed, rng_n := 3 + seed % 25, 0.2)
    assert list(ours) == list(ref) and sorted(ours.edges) == sorted(ref.edges)
    for n in ref:
        assert D.descendants(ours, n) == nx.descendants(ref, n)
        assert D.ancestors(ours, n) == nx.ancestors(ref, n)
        assert sorted(ours.predecessors(n)) == sorted(ref.predecessors(n))
        assert sorted(ours.successors(n)) == sorted(ref.successors(n))
    for _ in range(20):
        a, b = rng.randrange(rng_n), rng.randrange(rng_n)
        assert D.has_path(ours, a, b) == nx.has_path(ref, a, b)
    assert D.is_acyclic(ours)


@pytest.mark.parametrize("seed", range(40))
def test_topological_order_matches_networkx_with_ties(seed):
    ours, ref, rng = _pair(seed, 2 + seed % 30, 0.15)
    keys = {n: rng.randrange(4) for n in ref}          # few key values: many ties
    key = keys.__getitem__
    assert D.topological_order(ours, key) == list(nx.lexicographical_topological_sort(ref, key=key))


@pytest.mark.parametrize("seed", range(20))
def test_cycles_are_found(seed):
    ours, ref, _ = _pair(seed, 12, 0.3, cyclic=True)
    assert D.is_acyclic(ours) == nx.is_directed_acyclic_graph(ref)
    if not D.is_acyclic(ours):
        with pytest.raises(ValueError):
            D.topological_order(ours, key=lambda n: 0)


def test_a_cycle_is_not_acyclic():
    g = D.Dag()
    g.add_edge(1, 2)
    assert D.is_acyclic(g)
    g.add_edge(2, 1)
    assert not D.is_acyclic(g) and D.descendants(g, 1) == {2}
