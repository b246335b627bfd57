"""Probe (user code): a recurrence written as a Python loop of item assignments,
``s[t] = a * x[t] + (1 - a) * s[t - 1]``, traced each step's ``s[t - 1]`` as a slice of the whole
chain of earlier writes, which the fused kernel recomputed at every position it read: code
exponential in the loop's length (16 steps compiled for 24 s, 50 ran out of memory). The
``read_back`` pass (``fusion/simplify.py``) reads a slice of a slice write's result from the
written piece or from the array before the write, so the kernel grows linearly."""
import numpy as np
import pytest

import kfuse
from kfuse.fusion.pipeline import optimize
from kfuse.ir.ops import Op
from tolerance import assert_matches_numpy


def ewma(r, gamma):
    """Discounted returns, backwards: g[t] = r[t] + gamma * g[t + 1]."""
    g = np.zeros_like(r)
    g[-1] = r[-1]
    for t in range(r.shape[0] - 2, -1, -1):
        g[t] = r[t] + gamma * g[t + 1]
    return g


def _ops(graph):
    return sum(1 for n in graph.nodes() if n.op not in (Op.INPUT, Op.CONST))


def test_recurrence_graph_grows_linearly():
    sizes = [_ops(optimize(kfuse.jit(ewma, backend="cpu").trace(np.ones(n), 0.1))) for n in (10, 20, 40)]
    assert sizes[2] - sizes[1] <= 2 * (sizes[1] - sizes[0]) + 4, sizes
    # each step reads the value the step before wrote, not a slice of the array
    g = optimize(kfuse.jit(ewma, backend="cpu").trace(np.ones(10), 0.1))
    assert not any(n.op is Op.SLICE and n.inputs[0].op is Op.WHERE for n in g.nodes())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_recurrence_matches_numpy(dtype):
    x = np.random.default_rng(0).standard_normal(24).astype(dtype)
    assert_matches_numpy(kfuse.jit(ewma, backend="cpu")(x, 0.3), ewma(x, 0.3))


def test_read_back_inside_apart_and_overlapping():
    def f(x, v):
        y = x.copy()
        y[2:6] = v                     # the written region
        return y[3:5] * 2, y[7:] + 1, y[::2], y[1:4]
    x, v = np.arange(10.0), np.full(4, -1.0)
    got, want = kfuse.jit(f, backend="cpu")(x, v), f(x, v)
    for g, w in zip(got, want):
        assert_matches_numpy(g, w)
    g = optimize(kfuse.jit(f, backend="cpu").trace(x, v))
    reads = [n for n in g.nodes() if n.op is Op.SLICE]
    assert any(n.inputs[0].op is Op.INPUT and n.inputs[0].attr("name") == "v" for n in reads)   # y[3:5]: v[1:3]
    assert any(n.inputs[0].op is Op.INPUT and n.inputs[0].attr("name") == "x" for n in reads)   # y[7:]: x[7:]
