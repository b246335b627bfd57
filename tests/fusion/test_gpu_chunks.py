"""The GPU cost model's fixed terms (fusion.gpu_chunks): a reduce kernel's dependent passes and a
two-stage reduction's second launch, priced by the rule the CUDA runtime launches by."""
from __future__ import annotations

import numpy as np

import kfuse
from kfuse.fusion import gpu_chunks
from kfuse.fusion.cost import get_device_spec

H200 = get_device_spec("h200")


def _one_kernel(fn, *specs):
    (g,) = kfuse.explain(fn, *specs, device="h200").groups
    return g


def _beyond_roofline(g) -> float:
    return g.cost.seconds - max(g.cost.memory_seconds, g.cost.compute_seconds)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_a_tiny_softmax_pays_a_launch_and_three_dependent_passes():
    g = _one_kernel(softmax, "f32[6,40]")
    assert abs(_beyond_roofline(g) - (H200.launch_overhead + 3 * gpu_chunks.PASS_LATENCY_S)) < 1e-12


def test_a_full_sum_too_short_of_rows_runs_in_two_launches():
    one_row = _one_kernel(lambda x: x.sum(), "f32[1048576]")        # 1 row of 262144 units: 64 chunks
    many = _one_kernel(lambda x: x.sum(axis=1), "f32[1024,1024]")   # 1024 rows: a block a row
    assert gpu_chunks.row_chunks(1, 1048576 // 4, False, H200.sms) >= 2
    assert abs(_beyond_roofline(one_row) - (2 * H200.launch_overhead + gpu_chunks.PASS_LATENCY_S)) < 1e-12
    assert abs(_beyond_roofline(many) - (H200.launch_overhead + gpu_chunks.PASS_LATENCY_S)) < 1e-12


def test_elementwise_kernels_have_no_fixed_terms():
    g = _one_kernel(lambda x: np.tanh(x) * 2, "f32[4096,4096]")
    assert abs(_beyond_roofline(g) - H200.launch_overhead) < 1e-12
