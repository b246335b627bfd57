"""Attention fusion in the plan (``fusion.attention``): which NumPy-style attention functions
become one ``attention`` kernel on a GPU device, the causal offset read off a constant mask, why
the others are not fused (a plan note), the parts a backend without the kernel runs, and the
kernel IR's score function. No GPU needed."""
import math

import numpy as np
import pytest

import kfuse
from kfuse.fusion.kinds import GroupKind

from attention_fns import plain, softmax as _softmax

SPEC = "f16[2,4,256,64]"


def causal_triu(q, k, v):
    T = q.shape[-2]
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    return _softmax(np.where(np.triu(np.ones((T, T), dtype=bool), k=1), -np.inf, s)) @ v


def causal_tril(q, k, v):
    T = q.shape[-2]
    s = q @ np.swapaxes(k, -1, -2) * 0.125
    return _softmax(np.where(np.tril(np.ones((T, T), dtype=bool), k=2), s, -np.inf)) @ v


def softcap_bias(q, k, v, bias):
    s = q @ np.swapaxes(k, -1, -2) * 0.125 + bias
    return _softmax(30.0 * np.tanh(s / 30.0)) @ v


def kt_given(q, kt, v):
    return _softmax(q @ kt * 0.125) @ v


def float64_scale(q, k, v):            # np.sqrt of an int is a float64 scalar: NumPy computes in float64
    return _softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])) @ v


def scores_returned(q, k, v):
    p = _softmax(q @ np.swapaxes(k, -1, -2) * 0.125)
    return p @ v, p


def not_softmax(q, k, v):
    s = q @ np.swapaxes(k, -1, -2)
    return (s / s.sum(-1, keepdims=True)) @ v


def _plan(fn, *specs, device="h100", backend="cuda"):
    return kfuse.jit(fn).lower(*specs, device=device, backend=backend).plan


@pytest.mark.parametrize("fn, specs, causal", [
    (plain, (SPEC,) * 3, None),
    (causal_triu, (SPEC,) * 3, 0),
    (causal_tril, (SPEC,) * 3, 2),
    (softcap_bias, (SPEC,) * 3 + ("f16[256,256]",), None),
    (kt_given, (SPEC, "f16[2,4,64,256]", SPEC), None),
    (plain, ("bf16[8,100,128]",) * 3, None),
    (plain, ("f16[2,4,3,64,64]", "f16[2,4,1,64,64]", "f16[2,4,1,64,64]"), None),     # grouped-query
])
def test_attention_is_one_kernel(fn, specs, causal):
    p = _plan(fn, *specs)
    assert [g.kind for g in p.groups] == [GroupKind.ATTENTION], str(p)
    g = p.groups[0]
    assert g.attention.causal == causal
    assert [x.kind for x in g.attention.parts] == [GroupKind.MATMUL, GroupKind.REDUCE, GroupKind.MATMUL]
    assert "attention" in str(p) and g.cost.bytes_written == g.outputs[0].nbytes
    scores = g.attention.parts[0].anchor          # (..., M, N); two products of 2*M*N*d FLOPs a batch
    assert g.cost.flops == 4 * np.prod(scores.shape) * g.outputs[0].shape[-1]


@pytest.mark.parametrize("fn, why", [
    (float64_scale, "share one dtype"),
    (scores_returned, "returned"),
])
def test_not_attention_says_why(fn, why):
    p = _plan(fn, SPEC, SPEC, SPEC)
    assert GroupKind.ATTENTION not in [g.kind for g in p.groups]
    assert any(why in n for n in p.notes), p.notes


def test_not_a_softmax_is_left_alone():
    p = _plan(not_softmax, SPEC, SPEC, SPEC)
    assert GroupKind.ATTENTION not in [g.kind for g in p.groups]


def test_cpu_plans_keep_three_kernels():
    p = _plan(plain, SPEC, SPEC, SPEC, device="cpu", backend="cpu")
    assert [g.kind for g in p.groups] == [GroupKind.MATMUL, GroupKind.REDUCE, GroupKind.MATMUL]


def test_backend_without_the_kernel_runs_the_parts():
    p = _plan(plain, SPEC, SPEC, SPEC, backend="numba-cuda")
    assert [g.kind for g in p.groups] == [GroupKind.MATMUL, GroupKind.REDUCE, GroupKind.MATMUL]
    assert [g.id for g in p.groups] == [0, 1, 2]
    assert any("numba-cuda" in n and "attention" in n for n in p.notes)


def test_kernel_ir_prints_the_score():
    text = kfuse.jit(softcap_bias).lower(SPEC, SPEC, SPEC, "f16[256,256]", device="h100",
                                         backend="cuda").as_text("kernel")
    assert "[attention]" in text and "head dim 64" in text
    for op in ("multiply", "add", "divide", "tanh"):
        assert f"= {op}(" in text
    assert "load in0[0, m, n]" in text           # the bias, broadcast over the batch


def test_score_varying_over_two_batch_dims_is_refused_clearly():
    def per_head_bias(q, k, v, bias):
        return _softmax(q @ np.swapaxes(k, -1, -2) * 0.125 + bias) @ v
    p = _plan(per_head_bias, SPEC, SPEC, SPEC, "f16[2,4,256,256]")
    assert GroupKind.ATTENTION not in [g.kind for g in p.groups]
    assert any("batch dim" in n for n in p.notes), p.notes


def test_cpu_backend_result_is_numpys():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 40, 16)).astype(np.float32) for _ in range(3))
    np.testing.assert_allclose(kfuse.jit(causal_triu)(q, k, v), causal_triu(q, k, v), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("fn", [causal_triu, causal_tril])
def test_causal_mask_is_tested_by_index_not_loaded(fn):
    text = kfuse.jit(fn).lower(SPEC, SPEC, SPEC, device="h100", backend="cuda").as_text("kernel")
    assert "causal: keys n <= m + " in text
    assert "load" not in text.split("score(b, m, n):")[1]       # the constant mask is never read


def causal_additive(q, k, v):
    T = q.shape[-2]
    s = q @ np.swapaxes(k, -1, -2) * 0.125 + np.triu(np.full((T, T), -np.inf, dtype=np.float16), 1)
    return _softmax(s) @ v


def not_causal_additive(q, k, v):       # a band, not a triangle: loaded as any score array
    T = q.shape[-2]
    band = np.where(np.abs(np.arange(T)[:, None] - np.arange(T)[None, :]) > 8, -np.inf, 0).astype(np.float16)
    return _softmax(q @ np.swapaxes(k, -1, -2) * 0.125 + band) @ v


def test_additive_causal_mask():
    g = _plan(causal_additive, SPEC, SPEC, SPEC).groups[0]
    assert g.kind == GroupKind.ATTENTION and g.attention.causal == 0 and g.attention.keep == 0.0
    text = kfuse.jit(causal_additive).lower(SPEC, SPEC, SPEC, device="h100", backend="cuda").as_text("kernel")
    assert "load" not in text.split("score(b, m, n):")[1]
    g = _plan(not_causal_additive, SPEC, SPEC, SPEC).groups[0]
    assert g.kind == GroupKind.ATTENTION and g.attention.causal is None


def float32_softmax(q, k, v):       # the scores upcast for the softmax, the weights cast back
    p = _softmax((q @ np.swapaxes(k, -1, -2)).astype(np.float32) * 0.125)
    return p.astype(q.dtype) @ v


def test_softmax_in_float32_between_float16_products():
    p = _plan(float32_softmax, SPEC, SPEC, SPEC)
    assert [g.kind for g in p.groups] == [GroupKind.ATTENTION], str(p)
    assert p.groups[0].outputs[0].dtype == np.float16
