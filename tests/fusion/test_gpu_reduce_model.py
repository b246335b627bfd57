"""The GPU reduce-kernel model's terms for the H200 corpus run's three outliers (2026-11-28):
a grid-synchronised column statistic's chunk combine, a held row an SM's registers hold one at a
time, and an index check the host reads back every call (fusion/gpu_chunks.py)."""
import numpy as np
import pytest

import kfuse
from kfuse.bench.corpus import BY_NAME
from kfuse.fusion import gpu_chunks


def _pred_us(name: str) -> list[float]:
    case = BY_NAME[name].case("gpu")
    plan = kfuse.explain(case.body(np), *case.specs, device="h200")
    return [g.cost.seconds * 1e6 for g in plan.groups]


@pytest.mark.parametrize("name, kernel, measured_us", [
    ("batchnorm_nhwc_train", 0, 99.9), ("groupnorm_silu_f16", 0, 99.2), ("nll_take_along_axis", 0, 28.1),
    ("standardize_columns", 0, 119.0), ("cross_entropy_rows_50257", 1, 5.3), ("cross_entropy_label_smoothing", 0, 5.1),
    ("groupnorm_nchw", 0, 79.1), ("clip_grad_global_norm", 0, 72.2)])
def test_within_2x_of_h200(name, kernel, measured_us):
    pred = _pred_us(name)[kernel]
    assert 0.5 <= measured_us / pred <= 2.0, (name, pred)


def test_grid_combine_steps():
    assert gpu_chunks.grid_combine_groups(64) == 1 and gpu_chunks.grid_combine_groups(1024) == 32
    one_level = gpu_chunks.grid_sync_seconds(33, 1)
    assert one_level == pytest.approx(2 * gpu_chunks.GRID_BARRIER_S + 33 * gpu_chunks.COMBINE_STEP_S)
    assert gpu_chunks.grid_sync_seconds(1024, 1) == pytest.approx(3 * gpu_chunks.GRID_BARRIER_S + 64 * gpu_chunks.COMBINE_STEP_S)


def test_check_read_back():
    h = gpu_chunks.HOST_LAUNCH_S
    assert gpu_chunks.check_read_back_seconds(1, 3, 1e-3) == 0.0          # the call's other kernels cover the host
    assert gpu_chunks.check_read_back_seconds(2, 5, 0.0) == pytest.approx(2 * h)     # at most its own launches
