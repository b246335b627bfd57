"""The planner's per-matmul-group pick between the generated fused GEMM and cuBLAS + epilogue:
made per shape bucket by the cost model, shown by the plan / explain, and the facts the runtime
relies on (in-place epilogue, transposed operands folded as views). CPU only."""
from __future__ import annotations

import numpy as np
import pytest

import fusion_builders as fb
from kfuse.fusion.cost import choose_gemm, gemm_bucket, get_device_spec
from kfuse.fusion.pipeline import optimize, plan
from kfuse.ir.graph import Node
from kfuse.ir.ops import Op


def _pick(M, N, K, dt="f2", dev="h200"):
    (g,) = plan(optimize(fb.matmul_bias_gelu(M, K, N, dt)), dev).kernels
    return g


@pytest.mark.parametrize("dev", ["h100", "h200"])
def test_big_f16_gemm_picks_cublas_and_plan_shows_it(dev):
    for M, N, K in ((4096, 4096, 4096), (8192, 1024, 4096)):
        g = _pick(M, N, K, dev=dev)
        assert g.cost.impl == "cublas+epilogue"
        names = dict(g.cost.candidates)
        assert set(names) == {"cublas+epilogue", "generated"}
        assert names["cublas+epilogue"] < names["generated"]
        text = str(plan(optimize(fb.matmul_bias_gelu(M, K, N)), dev))
        assert "impl:   cublas+epilogue" in text and "generated" in text and "bucket" in text


def test_small_gemm_picks_generated():
    g = _pick(1, 7, 33)
    assert g.cost.impl == "generated"
    assert g.cost.seconds == pytest.approx(dict(g.cost.candidates)["generated"])
    assert "impl:   generated" in str(plan(optimize(fb.matmul_bias_gelu(1, 33, 7)), "h200"))


def test_pick_is_per_bucket():
    """Every shape of a power-of-two bucket gets the same pick."""
    d = get_device_spec("h200")
    for dims in ((1, 700, 900, 1000), (1, 3000, 3000, 3000), (4, 100, 60, 200)):
        bucket = gemm_bucket(*dims)
        lo = tuple(v // 2 + 1 for v in bucket)
        picks = {choose_gemm(*s, np.float16, 0, 0, 2 * s[0] * s[1] * s[2], d)[0] for s in (dims, bucket, lo)}
        assert len(picks) == 1, (dims, picks)


def test_f32_without_tf32_uses_simt_peak():
    g = _pick(2048, 2048, 2048, "f4")
    d = get_device_spec("h200")
    assert g.cost.seconds >= 2 * 2048 ** 3 / d.peak(np.float32)         # not TF32 tensor cores
    fast = choose_gemm(1, 2048, 2048, 2048, np.float32, 0, 0, 0, d, allow_tf32=True)[1]
    slow = choose_gemm(1, 2048, 2048, 2048, np.float32, 0, 0, 0, d)[1]
    assert fast["cublas+epilogue"] < slow["cublas+epilogue"] / 3
    assert fast["generated"] == slow["generated"]                      # the generated kernel stays FMA


def test_generated_unavailable_is_explained():
    b = fb.B()
    x, w = b.inp("x", "f4", (256, 128)), b.inp("w", "f4", (128, 64))
    mm = b.matmul(b.cast(x, "f2"), b.cast(w, "f2"))
    (g,) = plan(optimize(b.graph("cast_mm", b.ew(Op.ADD, mm, mm))), "h200").kernels
    assert g.cost.impl == "cublas+epilogue" and "operand casts" in g.cost.impl_note
    assert "generated" not in dict(g.cost.candidates)


def test_cpu_plan_has_no_gpu_pick():
    assert _pick(64, 64, 64, dev="cpu").cost.impl == ""


def test_transposed_weight_is_folded_not_copied():
    """x @ w.T: the PERMUTE stays index math of the matmul group (a view for cuBLAS, strides for
    the generated kernel), not a copy kernel."""
    b = fb.B()
    x, w = b.inp("x", "f2", (64, 32)), b.inp("w", "f2", (48, 32))
    p = plan(optimize(b.graph("xwT", b.ew(Op.MAXIMUM, b.matmul(x, Node(Op.PERMUTE, w.dtype, (32, 48), (w,), {"perm": (1, 0)})), 0.0))), "h200")
    assert [g.kind for g in p.kernels] == ["matmul"]
    from kfuse.codegen.lower import lower_group
    kir = lower_group(p.kernels[0])
    assert kir.contraction.rhs_steps == (("permute", (1, 0)),)


def test_in_place_output_analysis():
    from kfuse.codegen.lower import lower_group
    from kfuse.runtime.gpu_launch import in_place_output
    (g,) = plan(optimize(fb.matmul_bias_gelu(256, 128, 64)), "h200").kernels
    assert in_place_output(g, lower_group(g)) == 0
    # the product is itself an output: never overwritten
    b = fb.B()
    x, w, bias = b.inp("x", "f2", (64, 32)), b.inp("w", "f2", (32, 48)), b.inp("b", "f2", (48,))
    mm = b.matmul(x, w)
    p = plan(optimize(b.graph("two", mm, b.ew(Op.ADD, mm, bias))), "h200")
    for g in p.kernels:
        if g.kind == "matmul":
            assert in_place_output(g, lower_group(g)) is None
    # f32 output of an f16 product: a different dtype, no donor
    b = fb.B()
    x, w = b.inp("x", "f2", (64, 32)), b.inp("w", "f2", (32, 48))
    p = plan(optimize(b.graph("up", b.ew(Op.ADD, b.cast(b.matmul(x, w), "f4"), 1.0))), "h200")
    (g,) = [k for k in p.kernels if k.kind == "matmul"]
    assert in_place_output(g, lower_group(g)) is None
