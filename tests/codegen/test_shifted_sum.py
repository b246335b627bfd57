"""A sum shifted by a row-level value, freed of it (codegen.shifted_sum): which kernels it rewrites,
that the pass then joins an earlier one (a label-smoothed cross-entropy in one streamed pass), that
the planner prices it so, and its results against NumPy on the CPU's column order, special values
and empty rows included."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen.online_softmax import online_max_sum
from kfuse.codegen.phase_merge import merge_independent_phases, rereading_form
from kfuse.codegen.shifted_sum import shifted_sums
from kfuse.testing import assert_matches_numpy

RNG = np.random.default_rng(31)


def smoothed_ce(logits):
    m = np.max(logits, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True)) + m
    return -np.mean(logits - lse, axis=1)


SHIFTED = {
    "x_minus_c": lambda x: np.sum(x - x.max(0), axis=0),
    "x_plus_c": lambda x: np.sum(x + x.min(0), axis=0),
    "c_minus_x": lambda x: np.mean(x.max(0) - x, axis=0),
    "mean_centred": lambda x: np.mean(x - x.mean(0), axis=0),
}


def _kir(fn, shape, dtype=np.float32, device=None):
    low = kfuse.jit(fn).lower(np.zeros(shape, dtype), device=device, backend="cuda" if device else "cpu")
    return [k for k in low.kernels() if k.kind.name == "REDUCE"][0]


def _loops(kir):
    return sum(1 for ph in kir.phases if ph.accs or ph.body)


@pytest.mark.parametrize("name", list(SHIFTED))
def test_shifted_pass_joins_the_first(name):
    kir = _kir(SHIFTED[name], (300, 70))
    new = rereading_form(kir)
    assert _loops(kir) == 2 and _loops(new) == 1
    assert shifted_sums(new) == new                                         # a fixpoint
    accs = [a for ph in new.phases for a in ph.accs]
    assert any(a.dst.endswith("_hs") and a.src_dtype == "float64" for a in accs)


def test_label_smoothing_is_one_streamed_pass():
    kir = _kir(smoothed_ce, (4096, 32000), device="h200")
    assert _loops(kir) == 3
    streamed = merge_independent_phases(online_max_sum(rereading_form(kir)))
    assert _loops(streamed) == 1
    assert {a.kind for ph in streamed.phases for a in ph.accs} == {"maxsumexp", "sum"}


def test_planner_prices_one_pass():
    x = np.zeros((4096, 32000), np.float32)
    plan = kfuse.jit(smoothed_ce).lower(x, device="h200", backend="cuda").plan
    (g,) = plan.groups
    assert "re-read" not in g.reason
    assert g.cost.bytes_read == pytest.approx(x.nbytes, rel=0.01)


def test_left_alone_where_it_does_not_apply():
    for fn, dt in [(lambda x: np.sum(x - x.max(0), axis=0), np.float64),          # float64 terms: NumPy's rounding kept
                   (lambda x: np.sum((x - x.max(0)) * 2, axis=0), np.float32),     # the shift is not the term
                   (lambda x: np.sum(x - x, axis=0), np.float32)]:                   # no row-level shift
        kir = _kir(fn, (64, 8), dt)
        phases = shifted_sums(kir).phases
        assert not any(a.dst.endswith("_hs") for ph in phases for a in ph.accs)


def _special(shape):
    x = RNG.standard_normal(shape).astype(np.float32) * 3
    x[:, 1] = np.inf
    x[2, 2] = -np.inf
    x[5, 3] = np.nan
    x[:, 4] = -np.inf
    x[:, 5] = 1e30
    return x


@pytest.mark.parametrize("name", list(SHIFTED))
def test_cpu_column_order_matches_numpy(name):
    fn = SHIFTED[name]
    x = RNG.standard_normal((2001, 70)).astype(np.float32) * 5 + 2
    f = kfuse.jit(fn, backend="cpu")
    assert_matches_numpy(f(x), fn(x), reductions=True)
    cpu = list(f._programs.values())[-1].program.stages["cpu"]
    assert "order=cols" in cpu and "_hs" in cpu            # the freed sum, in the column order
    with np.errstate(invalid="ignore", over="ignore"):
        xs = _special((300, 8))
        np.testing.assert_array_equal(np.isnan(f(xs)), np.isnan(fn(xs)))
        fin = np.isfinite(fn(xs))
        np.testing.assert_array_equal(f(xs)[~fin], fn(xs)[~fin])


def test_empty_rows_sum_to_zero():
    f = kfuse.jit(lambda x, c: np.sum(x - c, axis=0), backend="cpu")
    x = np.zeros((0, 5), np.float32)
    c = np.full((1, 5), np.inf, np.float32)
    np.testing.assert_array_equal(f(x, c), np.zeros(5, np.float32))
