"""The attention kernel's operands as the runtime builds them (``runtime.attention.operand_views``)
from a plan's views (``fusion.attention.view_of``), checked with NumPy arrays against the operands
NumPy's own expression gives: q, k, v permuted from (B, S, H, D), k given as k^T, k and v shared
across heads (a batch stride 0), float16. No GPU needed: the same code runs on CuPy."""
import numpy as np
import pytest

import kfuse
from kfuse.runtime.attention import operand_views
from kfuse.trace.reference import evaluate_nodes

from attention_fns import bshd, softmax as _softmax


def kt_given(q, kt, v):
    return _softmax(q @ kt * 0.125) @ v


def gqa(q, k, v):           # q (B, Hkv, G, S, D); k, v (B, Hkv, 1, S, D)
    return _softmax(q @ np.swapaxes(k, -1, -2) * 0.125) @ v


def gqa_bshd(q, k, v):      # q (B, S, Hkv, G, D); k, v (B, S, Hkv, 1, D)
    q, k, v = (np.transpose(x, (0, 2, 3, 1, 4)) for x in (q, k, v))
    return _softmax(q @ np.swapaxes(k, -1, -2) * 0.125) @ v


CASES = [
    (bshd, [(2, 40, 3, 64)] * 3),
    (kt_given, [(2, 3, 40, 64), (2, 3, 64, 56), (2, 3, 56, 64)]),
    (gqa, [(2, 3, 4, 40, 64), (2, 3, 1, 40, 64), (2, 3, 1, 40, 64)]),
    (gqa_bshd, [(2, 40, 3, 4, 64), (2, 40, 3, 1, 64), (2, 40, 3, 1, 64)]),
]


@pytest.mark.parametrize("fn, shapes", CASES)
def test_operand_views_equal_numpys_operands(fn, shapes):
    specs = [f"f16[{','.join(map(str, s))}]" for s in shapes]
    low = kfuse.jit(fn).lower(*specs, device="h100", backend="cuda")
    (g,) = low.plan.groups
    a = low.kernels()[0].attention
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float16) for s in shapes]
    ins = [arrays[low.plan.graph.inputs.index(n)] for n in g.inputs]
    q, k, v = operand_views(ins, a, np)
    # NumPy's operands: the products' inputs, evaluated by the reference interpreter
    mm1, mm2 = g.attention.parts[0].anchor, g.attention.parts[2].anchor
    value = dict(zip(low.plan.graph.inputs, arrays))
    want_q, want_kt, want_v = evaluate_nodes([mm1.inputs[0], mm1.inputs[1], mm2.inputs[1]], value.__getitem__)
    batch = want_q.shape[:-2]
    flat = (-1,) + want_q.shape[-2:]
    assert np.array_equal(q.reshape(flat), want_q.reshape(flat))
    assert np.array_equal(k.reshape((-1,) + k.shape[-2:]),
                          np.swapaxes(np.broadcast_to(want_kt, batch + want_kt.shape[-2:]), -1, -2).reshape((-1,) + k.shape[-2:]))
    assert np.array_equal(v.reshape((-1,) + v.shape[-2:]),
                          np.broadcast_to(want_v, batch + want_v.shape[-2:]).reshape((-1,) + v.shape[-2:]))
