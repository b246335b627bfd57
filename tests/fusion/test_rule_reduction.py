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


def minmax_scale(x):
    lo, hi = x.min(axis=0), x.max(axis=0)
    return (x - lo) / (hi - lo + 1e-12)


def test_a_split_reduction_keeps_its_pass_and_refuses_the_next():
    """Split: the minimum and maximum of the columns are one pass (one kernel, with the row-level
    ``hi - lo``); the normalisation reading them over the whole domain is the next pass."""
    st = clustering(minmax_scale, "f32[64,16]")
    key = reduce_key(nodes_of(st, Op.MAX)[0])
    run_rule(RULE, st, context(no_rowwise=frozenset({key})))
    assert home(st, Op.MIN) == home(st, Op.MAX)
    assert home(st, Op.TRUE_DIVIDE) != home(st, Op.MAX)
    run_rule(RULE, st := clustering(minmax_scale, "f32[64,16]"), context())
    assert home(st, Op.TRUE_DIVIDE) == home(st, Op.MAX)


def test_a_matmul_neighbour_is_left_to_gemm_epilogue():
    st = clustering(lambda x, w: (x @ w).sum(axis=1), "f32[16,8]", "f32[8,4]")
    run_rule(RULE, st, context())
    assert home(st, Op.MATMUL) != home(st, Op.SUM) and not st.refused
    assert ops_of(st, home(st, Op.MATMUL)) == {Op.MATMUL}


def test_row_level_ops_of_row_level_inputs_join_the_row_kernel():
    """``0.8 * vr`` (an input of the rows' shape) is computed once a row by the kernel whose row
    mean it is added to, not in a kernel of its own (Adafactor: 5 kernels before, 3 now); the
    same on the columns' side (``0.8 * vc`` in the column kernel). Results against NumPy."""
    import kfuse
    from test_partial_recompute import adafactor
    rng = np.random.default_rng(4)
    for device, backend in [("h200", "cuda"), ("cpu", "cpu")]:
        plan = kfuse.jit(adafactor).lower("f32[512,256]", "f32[512,256]", "f32[512]", "f32[256]",
                                          device=device, backend=backend).plan
        assert [g.kind for g in plan.groups] == [GroupKind.REDUCE] * 3, plan
    for shape in [(64, 48), (37, 129), (1000, 3)]:
        args = [rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32),
                rng.random(shape[0]).astype(np.float32), rng.random(shape[1]).astype(np.float32)]
        got = kfuse.jit(adafactor, backend="cpu")(*args)
        for a, b in zip(got, adafactor(*args)):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)
