"""The recompute rule: a cluster other kernels read is recomputed inside them where the cost
model prices that no slower than writing it once and reading it back; otherwise the refusal says
both prices. Each producer is decided once, consumers first."""
from __future__ import annotations

import numpy as np

from rule_graphs import clustering, context, home
from kfuse.fusion import elementwise, reduction
from kfuse.fusion.recompute import RULE
from kfuse.fusion.rules import PlanContext, run_rule
from kfuse.ir.ops import Op


def two_reductions(x):
    y = x * 2
    return y.sum(axis=0), y.max(axis=1)


def _clustered(fn, *specs):
    st = clustering(fn, *specs)
    run_rule(reduction.RULE, st, context())
    run_rule(elementwise.RULE, st, context())
    return st


def test_a_cheap_producer_is_recomputed_in_its_readers():
    st = _clustered(two_reductions, "f32[64,64]")
    p, reader = home(st, Op.MULTIPLY), home(st, Op.MAX)     # the sum took x * 2 as its prologue
    assert p == home(st, Op.SUM) != reader and not RULE.fixpoint and RULE.name == "recompute"
    assert run_rule(RULE, st, context()) == 1
    mul = next(n for n in st.order_list if n.op is Op.MULTIPLY)
    assert mul in st.pulled[reader] and not st.pulled[p]
    assert any("recomputed in 1 reader kernel(s)" in n for n in st.notes[p])


def test_a_costlier_recompute_is_refused_and_undone():
    st = _clustered(two_reductions, "f32[64,64]")
    price = lambda state, cid, extra=frozenset(): 1.0 + sum(len(state.pulled[c]) for c in state.pulled)  # noqa: E731
    assert run_rule(RULE, st, PlanContext(cost_of=price)) == 0
    assert not any(st.pulled.values())
    assert any(r.what.startswith("recompute ") and "materialised" in r.reason for r in st.refused)


def test_producers_are_matched_consumers_first():
    st = _clustered(lambda x: np.exp(x * 2).sum(axis=0) + (x * 2).max(axis=0), "f32[64,64]")
    order = RULE.match(st, context())
    first = {c: min(st.order[n] for n in st.members[c]) for c in order}
    dag = st.dag()
    pos = {c: k for k, c in enumerate(order)}
    assert all(pos[b] < pos[a] for a, b in dag.edges)    # a reader before what it reads
    assert set(first) == set(st.members)
