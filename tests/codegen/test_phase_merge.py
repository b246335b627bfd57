"""Independent reductions in one pass (codegen.phase_merge): which phases join, that dependent ones
do not, that the CPU's column order computes the joined kernel exactly as NumPy does, and that the
CUDA C variants that re-read memory render it."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda as ce
from kfuse.codegen.phase_merge import merge_independent_phases
from kfuse.codegen.variance import one_pass_variance

RNG = np.random.default_rng(11)


def _kir(fn, shape, dtype=np.float32):
    return kfuse.jit(fn).lower(np.zeros(shape, dtype)).kernels()[0]


def _loops(kir):
    return sum(1 for ph in kir.phases if ph.accs or ph.body)


def minmax(x):
    lo, hi = x.min(0), x.max(0)
    return (x - lo) / (hi - lo + 1e-12)


def masked_mean(x):
    ok = ~np.isnan(x)
    return np.where(ok, x, 0).sum(0) / ok.sum(0)


def arg_and_max(x):
    return (x.max(0) - x.min(0)) * x.argmax(0)


def softmax0(x):
    e = np.exp(x - x.max(0))
    return e / e.sum(0)


@pytest.mark.parametrize("fn,accs", [(minmax, [2]), (masked_mean, [2]), (arg_and_max, [3])])
def test_independent_reductions_join_one_phase(fn, accs):
    kir = _kir(fn, (300, 70))
    new = merge_independent_phases(kir)
    assert [len(ph.accs) for ph in new.phases if ph.accs] == accs
    assert _loops(new) < _loops(kir)
    assert merge_independent_phases(new) == new                 # a fixpoint


@pytest.mark.parametrize("fn", [softmax0, lambda x: (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)])
def test_dependent_reductions_keep_their_phases(fn):
    kir = _kir(fn, (300, 70))
    assert merge_independent_phases(kir) == kir


def test_folded_variance_then_merged_statistics():
    """x.min(0) beside a standardisation: the variance folds into the mean's pass, the minimum
    joins it too: one pass for the statistics, one for the output."""
    kir = _kir(lambda x: ((x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), x.min(0)), (300, 70))
    new = merge_independent_phases(one_pass_variance(kir))
    assert _loops(new) == 2


@pytest.mark.parametrize("fn", [minmax, masked_mean, arg_and_max])
def test_cpu_column_order_equals_numpy(fn):
    x = RNG.standard_normal((4001, 70)).astype(np.float32)
    x[RNG.random(x.shape) < 0.05] = np.nan if fn is masked_mean else 0.0
    f = kfuse.jit(fn, backend="cpu")
    got = f(x)
    cpu = list(f._programs.values())[-1].program.stages["cpu"]
    assert "order=cols" in cpu
    want = fn(x)
    for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]):
        if fn is masked_mean:       # float32 sums over a float64 count: NumPy's own are 7e-8 off
            ref = fn(x.astype(np.float64))
            assert np.max(np.abs(g - ref)) <= 2 * np.max(np.abs(w - ref))
        else:
            np.testing.assert_array_equal(g, w)        # min, max and argmax: the same elements chosen


nvrtc = pytest.importorskip("kfuse.codegen.nvrtc")


@pytest.mark.parametrize("variant", [ce.Variant("col", 1, False, 0, 128),
                                     ce.Variant("col", 1, False, 0, 128, min_blocks=16, split=9, grid_sync=True),
                                     ce.Variant("row", 4, False, 0, 256)])
def test_cuda_variants_render_the_joined_kernel(variant):
    fn = minmax if variant.mode == "col" else (lambda x: (x - x.min(-1, keepdims=True)) / x.max(-1, keepdims=True))
    kir = merge_independent_phases(_kir(fn, (300, 64)))
    assert len(kir.phases[0].accs) == 2
    src = ce.emit(kir, variant)
    nvrtc.compile(src, "sm_90")
