"""The CPU blocks order of full reductions (``codegen.cpu_blocks``, ``order=blocks``): float sums
over every axis in row blocks shared by threads, partials added in block order. Against NumPy
(sums, means, a two-pass variance, a fused loss, 3-D, views, row counts that leave a partial
last block), the schedule asserted; and the sequential and parallel variants give the same bits."""
from __future__ import annotations

import numpy as np
import pytest

import kfuse
from kfuse.codegen import cpu_blocks
from tests.tolerance import assert_matches_numpy

pytestmark = pytest.mark.filterwarnings("ignore::kfuse.runtime.cache.RecompileWarning")
RNG = np.random.default_rng(32)


def _program(jf):
    return list(jf._programs.values())[-1].program


def _schedules(jf) -> list[str]:
    return [line.split("schedule: ")[1].rstrip('"') for line in _program(jf).stages["cpu"].splitlines()
            if "schedule: " in line]


def _bce(x, y):
    return np.mean(np.maximum(x, 0.0) - x * y + np.log1p(np.exp(-np.abs(x))))


CASES = {
    "sum_f32": (lambda x: x.sum(), [(301, 517)], np.float32),
    "sum_f64_3d": (lambda x: (x * x).sum(), [(7, 131, 97)], np.float64),
    "mean_of_transpose": (lambda x: x.T.mean(), [(515, 263)], np.float32),
    "var_two_passes": (lambda x: x.var(), [(263, 515)], np.float32),
    "bce_loss": (_bce, [(300, 1001), (300, 1001)], np.float32),
    "mean_axes_0_1": (lambda x: x.mean(axis=(0, 1)), [(389, 211)], np.float64),
}


@pytest.mark.parametrize("name", list(CASES))
def test_full_reductions_in_blocks(name):
    fn, shapes, dtype = CASES[name]
    args = [(RNG.standard_normal(s) * 3).astype(dtype) for s in shapes]
    f = kfuse.jit(fn, backend="cpu")
    got = f(*args)
    assert any(s.startswith("order=blocks") for s in _schedules(f)), _schedules(f)
    assert_matches_numpy(got, fn(*args), reductions=True)


def test_thread_count_does_not_change_the_bits():
    x = (RNG.standard_normal((1001, 333)) * 3).astype(np.float32)
    f = kfuse.jit(lambda x: (x * x).sum(), backend="cpu")
    f(x)
    k = _program(f).kernels[0]
    assert k.variants.last.order == "blocks"
    assert -(-1001 // cpu_blocks.block_rows(k.kir)) > 2
    outs = [np.empty((), np.float32) for _ in range(2)]
    k.fns[0](x, outs[0], *k.size_args)      # the sequential variant
    k.fns[1](x, outs[1], *k.size_args)      # the parallel one
    assert outs[0].tobytes() == outs[1].tobytes()
    assert_matches_numpy(outs[0], (x * x).sum(), reductions=True)


def test_small_and_non_sum_reductions_keep_the_rows_order():
    x = RNG.standard_normal((50, 60)).astype(np.float32)
    f = kfuse.jit(lambda x: x.sum(), backend="cpu")
    f(x)
    assert _schedules(f) == ["order=rows"]
    g = kfuse.jit(lambda x: x.max(), backend="cpu")
    big = RNG.standard_normal((700, 300)).astype(np.float32)
    assert g(big) == big.max()
    assert [s.split()[0] for s in _schedules(g)] == ["order=rows"]      # (its loops merged: cpu_merge)
