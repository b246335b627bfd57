"""Tracing ``np.random.*`` and Generator methods (``trace/random.py``): one stream a call (two
calls differ, never merged), NumPy's dtypes and scalar results, the patch undone after a trace
(an error included), clear errors for what is not traced, ``explain`` naming the random op."""
import numpy as np
import pytest

import kfuse
from kfuse.ir.ops import Op


def _random_nodes(graph):
    return [n for n in graph.nodes() if n.op is Op.RANDOM]


def test_two_calls_are_two_streams():
    def two(x):
        return np.random.rand(*x.shape), np.random.rand(*x.shape)
    f = kfuse.jit(two)
    x = np.zeros(1000)
    a, b = f(x)
    assert (a != b).all()
    streams = {n.attr("stream") for n in _random_nodes(f.lower(x).optimized)}
    assert len(streams) == 2


def test_dtypes_and_scalars_as_numpy():
    def fn(x, rng):
        return (np.random.rand(3), rng.random(4, dtype=np.float32), rng.standard_normal(2, dtype=np.float32),
                np.random.randint(5, size=3), rng.integers(2, 9, size=2, dtype=np.uint8),
                x * np.random.rand(), x * rng.random(), np.random.randint(4), rng.integers(4))
    x = np.ones(2, np.float32)
    got = kfuse.jit(fn)(x, np.random.default_rng(0))
    want = fn(x, np.random.default_rng(0))
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype and np.shape(g) == np.shape(w)
    assert got[4].min() >= 2 and got[4].max() < 9


def test_uniform_normal_parameters_broadcast():
    def fn(lo, sd):
        return np.random.uniform(lo, lo + 1.0), np.random.normal(0.0, sd, size=(4, 3))
    lo = np.arange(3.0)
    u, z = kfuse.jit(fn)(lo, np.full(3, 1e-9))
    assert u.shape == (3,) and ((u >= lo) & (u < lo + 1)).all()
    assert z.shape == (4, 3) and np.abs(z).max() < 1e-7


def test_patch_restored_after_trace_and_after_an_error():
    before = np.random.rand

    def bad(x):
        np.random.rand(3)
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError, match="boom"):
        kfuse.jit(bad)(np.ones(3))
    assert np.random.rand is before
    kfuse.jit(lambda x: x + np.random.rand(*x.shape))(np.ones(3))
    assert np.random.rand is before


@pytest.mark.parametrize("body", [
    lambda x: (np.random.seed(0), x)[1],
    lambda x: x + np.random.choice(3, size=x.shape),
    lambda x: x + np.random.default_rng().random(x.shape),
    lambda x: x + np.random.exponential(size=x.shape),
])
def test_untraced_random_functions_raise(body):
    with pytest.raises(kfuse.UnsupportedError, match="np.random"):
        kfuse.jit(body)(np.ones(3))


def test_random_state_argument_and_generator_methods_refused():
    with pytest.raises(kfuse.UnsupportedError, match="RandomState"):
        kfuse.jit(lambda x, r: x + r.rand(3))(np.ones(3), np.random.RandomState(0))
    with pytest.raises(kfuse.UnsupportedError, match="Generator.permutation"):
        kfuse.jit(lambda x, r: x + r.permutation(3))(np.ones(3), np.random.default_rng(0))


def test_bad_bounds_raise_numpy_errors():
    with pytest.raises(ValueError, match="low >= high"):
        kfuse.jit(lambda x, r: x + r.integers(5, 5, size=3))(np.ones(3), np.random.default_rng(0))
    with pytest.raises(ValueError, match="high <= 0"):
        kfuse.jit(lambda x: x + np.random.randint(0, size=3))(np.ones(3))


def test_explain_shows_the_random_op():
    def dropout(x, p):
        return np.where(np.random.rand(*x.shape) < p, x / p, 0)
    plan = kfuse.explain(dropout, "f32[256,256]", "float")
    assert len(plan.groups) == 1 and "random" in str(plan)
    assert "random" in kfuse.jit(dropout).lower("f32[8,8]", "float").as_text("optimized")


def test_not_folded_with_constant_looking_inputs():
    """A random op of a 0-d shape (``np.random.rand()``) stays a random op after optimization."""
    f = kfuse.jit(lambda x: x + np.random.rand())
    assert _random_nodes(f.lower(np.ones(3)).optimized)
    vals = {float(f(np.zeros(3))[0]) for _ in range(4)}
    assert len(vals) == 4
