"""The scan rule: scans, in graph order, take their producers and elementwise consumers of their
shape; scans along other axes and reductions stay apart, with the reason. Run together with the
reduction rule (``pipeline.RULES``), a reduction or a scan claims a shared producer in graph
order."""
from __future__ import annotations

import numpy as np

from rule_graphs import clustering, context, home, ops_of
from kfuse.fusion import pipeline, reduction
from kfuse.fusion.kinds import GroupKind
from kfuse.fusion.rules import Together, run_rule
from kfuse.fusion.scan import RULE
from kfuse.ir.ops import Op


def running(x, y):
    return np.cumsum(x * y, axis=1) / 3


def test_a_scan_takes_its_producer_and_consumer():
    st = clustering(running, "f32[8,32]", "f32[8,32]")
    assert RULE.name == "scan" and RULE.fixpoint
    assert run_rule(RULE, st, context()) > 0
    cid = home(st, Op.CUMSUM)
    assert {Op.MULTIPLY, Op.CUMSUM, Op.TRUE_DIVIDE} <= ops_of(st, cid) and len(st.members) == 1
    assert st.shape(cid).kind is GroupKind.SCAN and st.shape(cid).axes == (1,)


def test_scans_along_other_axes_stay_apart():
    st = clustering(lambda x: np.cumsum(x, axis=0) + np.cumsum(x, axis=1), "f32[8,32]")
    run_rule(RULE, st, context())
    assert home(st, Op.CUMSUM, 0) != home(st, Op.CUMSUM, 1)
    assert any("scans over different axes" in r.reason for r in st.refused), st.refused


def test_a_reduction_is_refused():
    st = clustering(lambda x: np.cumsum(x, axis=1) / x.sum(axis=1, keepdims=True), "f32[8,32]")
    run_rule(RULE, st, context())
    assert home(st, Op.CUMSUM) != home(st, Op.SUM)
    assert any("shares no kernel with a reduction" in r.reason for r in st.refused), st.refused


def shared(x):
    e = np.exp(x)
    return np.cumsum(e, axis=1), e.sum(axis=1)


def test_reductions_and_scans_claim_a_shared_producer_in_graph_order():
    rows = [r for r in pipeline.RULES if isinstance(r, Together)]
    assert len(rows) == 1 and set(rows[0].rules) == {RULE, reduction.RULE}
    st = clustering(shared, "f32[8,32]")
    first = min((Op.CUMSUM, Op.SUM), key=lambda op: st.order[next(n for n in st.order_list if n.op is op)])
    run_rule(rows[0], st, context())
    assert home(st, Op.EXP) == home(st, first) and home(st, Op.CUMSUM) != home(st, Op.SUM)
    alone = clustering(shared, "f32[8,32]")          # the scan rule first: the scan claims it
    run_rule(RULE, alone, context())
    run_rule(reduction.RULE, alone, context())
    assert home(alone, Op.EXP) == home(alone, Op.CUMSUM)
