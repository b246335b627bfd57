"""The reduction rule (row-wise kernels): each reduction, in graph order, merges with a
neighbouring cluster until none joins; reductions over other axes stay apart, with the reason."""
from __future__ import annotations

import numpy as np

from rule_graphs import clustering, context, home, nodes_of, ops_of
from kfuse.fusion.kinds import GroupKind
from kfuse.fusion.legality import reduce_key
from kfuse.fusion.reduction import RULE, anchor_order
from kfuse.fusion.rules import run_rule
from kfuse.ir.ops import Op


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def both_axes(x):
    y = x * 2
    return y.sum(axis=0), y.sum(axis=1)


def test_softmax_is_one_row_kernel():
    st = clustering(softmax, "f32[8,32]")
    assert RULE.name == "reduction" and RULE.fixpoint
    assert run_rule(RULE, st, context()) > 0
    (cid,) = {home(st, Op.MAX), home(st, Op.SUM), home(st, Op.TRUE_DIVIDE), home(st, Op.EXP)}
    assert st.shape(cid).kind is GroupKind.REDUCE and st.shape(cid).axes == (1,)


def test_candidates_follow_the_reductions_in_graph_order():
    st = clustering(softmax, "f32[8,32]")
    cands = list(RULE.match(st, context()))
    keys = [anchor_order(st, c) for c in cands]
    assert keys == sorted(keys) and {c[0].op for c in cands} == {Op.MAX, Op.SUM}


def test_reductions_over_other_axes_stay_apart():
    st = clustering(both_axes, "f32[8,32]")
    run_rule(RULE, st, context())
    assert home(st, Op.SUM, 0) != home(st, Op.SUM, 1)
    assert any("different axes" in r.reason for r in st.refused), st.refused


def centred_sum(x):
    return (x - x.max(axis=1, keepdims=True)).sum(axis=1)


def test_a_split_row_refuses_its_second_reduction():
    st = clustering(centred_sum, "f32[8,32]")
    run_rule(RULE, st, context())
    assert home(st, Op.MAX) == home(st, Op.SUM)
    st = clustering(centred_sum, "f32[8,32]")
    key = reduce_key(nodes_of(st, Op.MAX)[0])
    run_rule(RULE, st, context(no_rowwise=frozenset({key})))
    assert home(st, Op.MAX) != home(st, Op.SUM)
    assert any("splitting is cheaper" in r.reason for r in st.refused), st.refused


def test_a_matmul_neighbour_is_left_to_gemm_epilogue():
    st = clustering(lambda x, w: (x @ w).sum(axis=1), "f32[16,8]", "f32[8,4]")
    run_rule(RULE, st, context())
    assert home(st, Op.MATMUL) != home(st, Op.SUM) and not st.refused
    assert ops_of(st, home(st, Op.MATMUL)) == {Op.MATMUL}
