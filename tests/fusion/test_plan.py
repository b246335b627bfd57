"""Plan tests: the public workloads each become the kernels issue 3 asks for, every plan satisfies
the plan.py contract, and the refusals say why."""
from __future__ import annotations

import numpy as np
import pytest

import fusion_builders as fb
from kfuse.fusion import elementwise
from kfuse.fusion.explain import format_plan
from kfuse.fusion.legality import Clustering, verify_group
from kfuse.fusion.pipeline import check_plan, optimize, plan
from kfuse.ir.ops import Op

DEVICES = ["h100", "cpu", "l4"]


def _plan(graph, device="h100"):
    p = plan(optimize(graph), device)
    check_plan(p)
    return p


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("make,kind,nout", [
    (fb.p1, "elementwise", 1),
    (fb.softmax, "reduce", 1),
    (fb.layernorm, "reduce", 1),
    (fb.rownorm, "reduce", 1),
    (fb.matmul_bias_gelu, "matmul", 1),
    (fb.adam, "elementwise", 3),
    (fb.adam_runtime_scalars, "elementwise", 3),
    (fb.rmsnorm_residual, "reduce", 2),
    (fb.log_softmax, "reduce", 1),
])
def test_one_kernel(make, kind, nout, device):
    if make is fb.adam_runtime_scalars and device == "cpu":
        pytest.skip("CPU: per-element pow of run-time scalars costs more than a 0-d kernel")
    p = _plan(make(), device)
    assert len(p.kernels) == 1, str(p)
    (g,) = p.kernels
    assert g.kind == kind
    assert len(g.outputs) == nout
    assert set(g.outputs) == set(p.graph.outputs)
    assert g.cost is not None and g.cost.seconds > 0
    assert not verify_group(g)


def test_p6_adam_reads_four_writes_three():
    p = _plan(fb.adam(n=1 << 10))
    (g,) = p.kernels
    assert len(g.inputs) == 4 and len(g.outputs) == 3
    assert g.cost.bytes_read == 4 * 4 * 1024 and g.cost.bytes_written == 3 * 4 * 1024


def test_runtime_scalar_math_decided_by_cost_on_cpu():
    p = _plan(fb.adam_runtime_scalars(), "cpu")
    assert len(p.kernels) in (1, 2)
    if len(p.kernels) == 2:
        assert p.kernels[0].domain == () and any("recompute" in r.what for r in p.refused)


def test_p4_reduce_output_is_outer_level():
    p = _plan(fb.rownorm(64, 32))
    (g,) = p.kernels
    assert g.axes == (1,) and g.domain == (64, 32)
    assert g.outputs[0].op is Op.SQRT and g.outputs[0].shape == (64,)


def test_p5_operand_casts_fold_into_matmul():
    b = fb.B()
    x, w, bias = b.inp("x", "f4", (64, 32)), b.inp("w", "f4", (32, 16)), b.inp("b", "f2", (16,))
    mm = b.matmul(b.cast(x, "f2"), b.cast(w, "f2"))
    y = b.ew(Op.MAXIMUM, b.ew(Op.ADD, mm, bias), 0.0)
    p = _plan(b.graph("mm_casts", y))
    (g,) = p.kernels
    assert g.kind == "matmul" and g.anchor.op is Op.MATMUL
    assert sum(n.op is Op.CAST for n in g.nodes) == 2
    assert set(g.inputs) == {x, w, bias}


def test_diamond_through_matmul_is_split():
    p = _plan(fb.diamond())
    assert [g.kind for g in p.kernels] == ["elementwise", "matmul"]
    ew, mm = p.kernels
    assert [n.op for n in ew.outputs] == [Op.EXP]
    assert ew.outputs[0] in mm.inputs          # materialised, read by the matmul and its epilogue
    assert p.refused


def test_naive_elementwise_fusion_refuses_the_cycle():
    """Fusing exp with the add (same shape, producer->consumer) would wrap the matmul: refused."""
    g = optimize(fb.diamond())
    st = Clustering(g)
    elementwise.run(st)
    assert any("cycle" in r.reason and "matmul" in r.reason for r in st.refused), st.refused
    dag = st.dag()
    from kfuse.fusion.dag import is_acyclic
    assert is_acyclic(dag)
    assert len(st.members) == 3


def test_diamond_through_reduction_records_cycle():
    b = fb.B()
    x, w = b.inp("x", "f4", (128, 128)), b.inp("w", "f4", (128, 128))
    y = b.ew(Op.EXP, x)
    z = b.reduce(Op.SUM, b.matmul(y, w), 1, keepdims=True)
    p = _plan(b.graph("diamond2", b.ew(Op.ADD, y, z)))
    assert [g.kind for g in p.kernels] == ["elementwise", "matmul", "reduce"]
    assert any("cycle" in r.reason for r in p.refused), p.refused


def test_different_axes_are_separate_groups():
    b = fb.B()
    x = b.inp("x", "f4", (64, 32))
    e = b.ew(Op.EXP, x)
    s0 = b.reduce(Op.SUM, e, 0)
    s1 = b.reduce(Op.SUM, e, 1)
    p = _plan(b.graph("two_axes", s0, s1))
    assert len(p.kernels) == 2 and {g.axes for g in p.kernels} == {(0,), (1,)}
    assert any("different axes" in r.reason for r in p.refused)
    # exp is cheap: recomputed in both reductions rather than written out
    assert all(any(n.op is Op.EXP for n in g.nodes) for g in p.kernels)
    assert all(g.inputs == (x,) for g in p.kernels)


def test_expensive_shared_producer_is_materialised_on_cpu():
    """A big producer chain read by two kernels that cannot merge: written once if recomputing
    it costs more (CPU: special functions are dear)."""
    b = fb.B()
    x = b.inp("x", "f4", (512, 512))
    e = x
    for _ in range(8):
        e = b.ew(Op.TANH, b.ew(Op.EXP, e))
    p = _plan(b.graph("shared", b.reduce(Op.SUM, e, 0), b.reduce(Op.SUM, e, 1)), "cpu")
    assert len(p.kernels) == 2
    producer = [g for g in p.kernels if any(o.op is Op.TANH for o in g.outputs)]
    assert len(producer) == 1
    assert any("recompute" in r.what for r in p.refused)


def test_broadcast_scalar_input_and_const_output():
    b = fb.B()
    x = b.inp("x", "f4", (8,))
    c = b.const(2.5, "f4")
    p = _plan(b.graph("consts", x, c, b.ew(Op.MULTIPLY, x, 2.0)))
    assert p.passthrough == (x,)
    kinds = [(g.kind, g.domain) for g in p.kernels]
    assert ("elementwise", ()) in kinds and ("elementwise", (8,)) in kinds


def test_transposed_input_returned_needs_a_copy_kernel():
    b = fb.B()
    x = b.inp("x", "f4", (4, 8))
    from kfuse.ir.graph import Node
    t = Node(Op.PERMUTE, x.dtype, (8, 4), (x,), {"perm": (1, 0)})
    p = _plan(b.graph("transpose", t, b.ew(Op.EXP, t)))
    assert len(p.kernels) == 1 and len(p.kernels[0].outputs) == 2


def test_row_too_big_is_decided_by_cost():
    p = _plan(fb.softmax(8, 1 << 20), "h100")
    (g,) = p.kernels
    assert g.cost.passes == 3 and "re-read" in g.reason


def _kernel_ops(p):
    return [{n.op for n in g.nodes} for g in p.kernels]


def test_column_passes_past_l2_with_a_full_tail_split():
    """GPU columns past L2: re-reading them runs at REREAD_COLUMN_EFFICIENCY of the bandwidth where
    the last pass writes the whole domain, so a softmax over axis 0 runs a kernel a pass; a
    variance (no full-size result) keeps its one re-reading kernel."""
    from kfuse.fusion.gpu_chunks import REREAD_COLUMN_EFFICIENCY
    b = fb.B()
    x = b.inp("x", "f4", (4096, 8192))
    m = b.reduce(Op.MAX, x, 0, keepdims=True)
    e = b.ew(Op.EXP, b.ew(Op.SUBTRACT, x, b.bcast(m, (4096, 8192))))
    s = b.reduce(Op.SUM, e, 0, keepdims=True)
    p = _plan(b.graph("softmax0", b.ew(Op.TRUE_DIVIDE, e, b.bcast(s, (4096, 8192)))), "h200")
    ops = _kernel_ops(p)
    assert len(ops) == 3 and Op.MAX in ops[0] and Op.SUM in ops[1] and Op.TRUE_DIVIDE in ops[2], ops
    assert all(g.cost.passes == 1 for g in p.kernels)
    assert "exceed L2" in p.kernels[0].reason and "re-read 3x" in p.kernels[1].reason, p.kernels[0].reason
    assert REREAD_COLUMN_EFFICIENCY < 1.0
    b = fb.B()
    x = b.inp("x", "f4", (64, 1024, 1024))
    mu = b.reduce(Op.SUM, x, 1, keepdims=True)
    d = b.ew(Op.SUBTRACT, x, b.bcast(mu, (64, 1024, 1024)))
    p = _plan(b.graph("mad1", b.reduce(Op.SUM, b.ew(Op.ABSOLUTE, d), 1)), "h200")
    (g,) = p.kernels
    assert g.cost.passes == 2 and "re-read" in g.reason, g.reason
    # the sum of squared deviations folds into the sum's pass (codegen.variance): one pass
    p = _plan(b.graph("var1", b.reduce(Op.SUM, b.ew(Op.MULTIPLY, d, d), 1)), "h200")
    (g,) = p.kernels
    assert g.cost.passes == 1, g.reason


def test_split_columns_keep_a_folded_variance_with_its_mean():
    """Standardising columns past L2 splits into the statistics' one pass (mean and variance, the
    variance folded into the mean's sum) and the normalisation."""
    b = fb.B()
    x = b.inp("x", "f4", (65536, 1024))
    mu = b.bcast(b.reduce(Op.SUM, x, 0, keepdims=True), (65536, 1024))
    d = b.ew(Op.SUBTRACT, x, mu)
    var = b.bcast(b.reduce(Op.SUM, b.ew(Op.MULTIPLY, d, d), 0, keepdims=True), (65536, 1024))
    p = _plan(b.graph("std0", b.ew(Op.TRUE_DIVIDE, d, var)), "h200")
    ops = _kernel_ops(p)
    assert len(ops) == 2 and [o for o in ops[0] if o is Op.SUM] and Op.TRUE_DIVIDE in ops[1], ops
    assert sum(1 for n in p.kernels[0].nodes if n.op is Op.SUM) == 2


def test_groups_topological_and_inputs_produced():
    b = fb.B()
    x = b.inp("x", "f4", (32, 16))
    s = b.reduce(Op.SUM, x, 0, keepdims=True)     # column sums
    y = b.ew(Op.TRUE_DIVIDE, x, s)
    m = b.reduce(Op.MAX, y, 1)                    # then row max of the normalised values
    p = _plan(b.graph("chain", b.ew(Op.SQRT, m)))
    seen = set(p.graph.inputs)
    for g in p.kernels:
        assert set(g.inputs) <= seen
        seen |= set(g.outputs)


def test_explain_text():
    text = format_plan(_plan(fb.diamond(), "h100"))
    for word in ("kernel 0", "kernel 1", "bytes", "flops", "intensity", "predicted", "-bound",
                 "refused fusions", "matmul"):
        assert word in text, text


def test_plan_accepts_device_names_and_specs():
    from kfuse.fusion.cost import get_device_spec
    g = optimize(fb.p1(64, 64))
    assert plan(g, "h200").device.name == "h200"
    assert plan(g, get_device_spec("a100-40gb")).device.name == "a100-40gb"
    assert plan(g).device.name == "cpu"


def test_refusals_are_stated_once_between_final_kernels():
    # three reductions over different domains: while clusters grow, each refusal is considered
    # again from both sides; the plan says each (pair of kernels, reason) once, by kernel id
    b = fb.B()
    x = b.inp("x", "f4", (4, 2, 3))
    s1 = b.reduce(Op.SUM, b.ew(Op.EXP, x), 0)
    s2 = b.reduce(Op.SUM, b.ew(Op.SIN, s1), 0)
    s3 = b.reduce(Op.MAXIMUM, b.ew(Op.COS, s2), 0)
    p = _plan(b.graph("chain", s3))
    assert len(p.kernels) == 3
    pairs = [r for r in p.refused if r.what.startswith("fuse kernel")]
    assert pairs and len({(r.what, r.reason) for r in pairs}) == len(pairs)
    assert all("kernel 0" in r.what or "kernel 1" in r.what or "kernel 2" in r.what for r in pairs)
    assert len(pairs) <= 2
