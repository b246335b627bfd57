"""The gemm_epilogue rule: each matmul, once, takes its operand casts and then its elementwise
consumers of its shape, until none joins."""
from __future__ import annotations

import numpy as np

from rule_graphs import clustering, context, home, nodes_of, ops_of
from kfuse.fusion.gemm_epilogue import RULE
from kfuse.fusion.kinds import GroupKind
from kfuse.fusion.rules import run_rule
from kfuse.ir.ops import Op


def linear_gelu(x, w, b):
    y = x @ w + b
    return 0.5 * y * (1 + np.tanh(0.79788456 * (y + 0.044715 * y ** 3)))


def two_layers(x, w1, w2):
    return np.maximum(x @ w1, 0) @ w2 * 2


def test_matches_each_matmul_once_in_graph_order():
    st = clustering(two_layers, "f32[16,8]", "f32[8,8]", "f32[8,4]")
    assert RULE.name == "gemm_epilogue" and not RULE.fixpoint
    assert list(RULE.match(st, context())) == nodes_of(st, Op.MATMUL)


def test_the_epilogue_joins_the_matmul():
    st = clustering(linear_gelu, "f32[16,8]", "f32[8,4]", "f32[4]")
    assert run_rule(RULE, st, context()) == 1
    cid = home(st, Op.MATMUL)
    assert {Op.ADD, Op.TANH, Op.MULTIPLY} <= ops_of(st, cid)
    assert st.shape(cid).kind is GroupKind.MATMUL and len(st.members) == 1


def test_a_matmul_feeding_another_keeps_its_own_kernel():
    st = clustering(two_layers, "f32[16,8]", "f32[8,8]", "f32[8,4]")
    run_rule(RULE, st, context())
    first, second = home(st, Op.MATMUL, 0), home(st, Op.MATMUL, 1)
    assert first != second and Op.MAXIMUM in ops_of(st, first) and Op.MULTIPLY in ops_of(st, second)
    assert any("two matmuls" in r.reason for r in st.refused), st.refused


def test_operand_casts_fold_unless_returned():
    def cast_operand(x, w):
        return x.astype(np.float32) @ w

    def cast_returned(x, w):
        a = x.astype(np.float32)
        return a @ w, a

    st = clustering(cast_operand, "f16[16,8]", "f32[8,4]")
    run_rule(RULE, st, context())
    assert Op.CAST in ops_of(st, home(st, Op.MATMUL))
    st = clustering(cast_returned, "f16[16,8]", "f32[8,4]")
    assert run_rule(RULE, st, context()) == 0
    assert Op.CAST not in ops_of(st, home(st, Op.MATMUL))


def test_apply_says_nothing_joined():
    st = clustering(lambda x, w: x @ w, "f32[16,8]", "f32[8,4]")
    (mm,) = RULE.match(st, context())
    assert RULE.apply(st, mm, context()) is False and not st.refused
