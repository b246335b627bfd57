"""A random element's value is a function of the seed, the call's stream and its position alone
(``ir/philox.py``): the same under any schedule (C- or F-ordered and transposed operands of its
consumer, odd sizes, reductions), and the same in two kernels that both compute it."""
import numpy as np
import pytest

import kfuse
from backends import to_device, to_host
from rand_helpers import next_global_seed, reference


def _noise_plus(x):
    return x + np.random.rand(*x.shape)


@pytest.mark.parametrize("shape", [(37, 53), (1, 129), (5, 3, 67)])
def test_layout_of_the_consumer_does_not_change_values(backend, shape):
    c = np.zeros(shape)
    layouts = [c, np.asfortranarray(c), np.zeros(shape[::-1]).T]
    outs = []
    for x in layouts:
        (xd,) = to_device(backend, x)
        np.random.seed(5)
        outs.append(to_host(kfuse.jit(_noise_plus, backend=backend)(xd)))
    (want,) = reference(kfuse.jit(_noise_plus).trace(c), {"x": c}, {"": next_global_seed(5)})
    for o in outs:
        np.testing.assert_array_equal(o, want)


def test_random_values_in_reductions(backend):
    def stats(x):
        r = np.random.rand(*x.shape) * x
        return r.sum(axis=1), r.max(axis=0), r
    x = np.ones((45, 77))
    (xd,) = to_device(backend, x)
    np.random.seed(9)
    s, m, r = to_host(kfuse.jit(stats, backend=backend)(xd))
    ws, wm, wr = reference(kfuse.jit(stats).trace(x), {"x": x}, {"": next_global_seed(9)})
    np.testing.assert_array_equal(r, wr)
    np.testing.assert_array_equal(m, wm)
    np.testing.assert_allclose(s, ws, rtol=1e-13)


def _two_reductions(x):
    r = np.random.rand(*x.shape) + x
    return r.sum(axis=0), r.max(axis=1), r.min(axis=1)


def test_recomputed_in_two_kernels_same_values(backend):
    """``r`` feeds reductions over different axes: planned for an H100 the planner computes it in
    both kernels (fusion.recompute) rather than storing it; both must be the one array the
    reference computes once."""
    x = np.zeros((64, 96))
    f = kfuse.jit(_two_reductions, backend=backend, device="h100")
    (xd,) = to_device(backend, x)
    np.random.seed(11)
    s, mx, mn = to_host(f(xd))
    ws, wmx, wmn = reference(f.trace(x), {"x": x}, {"": next_global_seed(11)})
    np.testing.assert_array_equal(mx, wmx)
    np.testing.assert_array_equal(mn, wmn)
    np.testing.assert_allclose(s, ws, rtol=1e-13)


def test_recompute_really_duplicates_the_random_op():
    """On that plan the random op sits in more than one kernel (else the previous test would not
    test the recompute rule)."""
    plan = kfuse.explain(_two_reductions, "f64[64,96]", device="h100")
    holding = [g for g in plan.groups if any(n.op.value == "random" for n in g.nodes)]
    assert len(holding) >= 2, str(plan)
