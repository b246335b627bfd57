"""The elementwise rule: chains of one shape merge (an elementwise cluster into a consumer of its
domain), and siblings of one shape reading a common buffer merge, chains first."""
from __future__ import annotations

import numpy as np

from rule_graphs import clustering, context, home, ops_of
from kfuse.fusion.elementwise import RULE
from kfuse.fusion.kinds import GroupKind
from kfuse.fusion.rules import run_rule
from kfuse.ir.ops import Op


def test_a_chain_is_one_cluster():
    st = clustering(lambda x, b: np.exp(x) * 2 + b, "f32[8,32]", "f32[32]")
    assert RULE.name == "elementwise" and RULE.fixpoint
    assert run_rule(RULE, st, context()) == 2
    (cid,) = st.members
    assert st.shape(cid).kind is GroupKind.ELEMENTWISE and {Op.EXP, Op.MULTIPLY, Op.ADD} <= ops_of(st, cid)


def test_siblings_reading_one_buffer_merge():
    st = clustering(lambda x: (x + 1, x * 2), "f32[8,32]", )
    kinds = [c[0] for c in RULE.match(st, context())]
    assert kinds and set(kinds) == {"siblings"}     # no chain between them
    run_rule(RULE, st, context())
    assert home(st, Op.ADD) == home(st, Op.MULTIPLY)


def test_chains_are_tried_before_siblings():
    st = clustering(lambda x: (np.exp(x) + 1, x * 2), "f32[8,32]")
    kinds = [c[0] for c in RULE.match(st, context())]
    assert kinds and kinds == sorted(kinds) and kinds[0] == "chain" and "siblings" in kinds


def test_a_producer_joins_a_reduction_consumer_of_its_domain():
    st = clustering(lambda x: (x * 2).sum(axis=1), "f32[8,32]")
    run_rule(RULE, st, context())
    assert home(st, Op.MULTIPLY) == home(st, Op.SUM)


def test_other_shapes_stay_apart():
    st = clustering(lambda x, y: (x * 2, y + 1), "f32[8,32]", "f32[4,4]")
    assert run_rule(RULE, st, context()) == 0 and len(st.members) == 2
