"""A random element's value is a function of the seed, the call's stream and its position alone
(``ir/philox.py``): the same under any schedule (C- or F-ordered and transposed operands of its
consumer, odd sizes, reductions), and the same in two kernels that both compute it."""
import numpy as np
import pytest

import kfuse
from kfuse import backends as kfuse_backends
from kfuse.backends import Feature
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


def _scan(x):
    return np.cumsum(np.random.rand(*x.shape) + x, axis=1)


def _gather(x, idx):
    return np.random.rand(50)[idx] + x


def _concatenate(x):
    return np.concatenate([x, np.random.rand(*x.shape)], axis=0)


def _strided_transposed(x):
    return np.random.rand(20, 30)[::3, 1::2].T + x


def _matmul(x, w):
    return (x + np.random.rand(*x.shape)) @ w + np.random.rand(w.shape[1])


def _broadcast(x):
    return np.random.rand(5, 1, 7) * x


def _masked_write(x):
    x[np.random.rand(*x.shape) < 0.5] = 0.0
    return x


THROUGH = [(_scan, (np.zeros((7, 33)),)),
           (_gather, (np.zeros(9), np.array([3, -1, 7, 0, 49, 2, 2, 5, 1]))),
           (_concatenate, (np.zeros((4, 5)),)), (_strided_transposed, (np.zeros((15, 7)),)),
           (_matmul, (np.zeros((8, 16)), np.ones((16, 4)))), (_broadcast, (np.ones((3, 7)),)),
           (_masked_write, (np.ones((6, 9)),))]


@pytest.mark.parametrize("fn,args", THROUGH, ids=[f.__name__.strip("_") for f, _ in THROUGH])
def test_random_values_through_other_ops(backend, fn, args):
    """Each element is read where the op maps it (a scan, a gather at data-dependent positions, a
    pad, a strided transposed slice, a matmul operand and epilogue, a broadcast, a masked write)."""
    if fn is _matmul and Feature.MATMUL not in kfuse_backends.get(backend).features:
        pytest.skip(f"the {backend} backend has no products")
    names = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    np.random.seed(3)
    got = to_host(kfuse.jit(fn, backend=backend)(*to_device(backend, *[a.copy() for a in args])))
    want = reference(kfuse.jit(fn).trace(*[a.copy() for a in args]), dict(zip(names, args)),
                     {"": next_global_seed(3)})[0]      # (then a gather's index check)
    if fn in (_scan, _matmul):      # sums in another order
        np.testing.assert_allclose(got, want, rtol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
@pytest.mark.parametrize("fn,args", THROUGH, ids=[f.__name__.strip("_") for f, _ in THROUGH])
def test_gpu_kernels_through_other_ops_compile(backend, fn, args):
    assert ".entry" in kfuse.jit(fn).lower(*args, backend=backend).ptx()
