"""Producers reshaped into a row kernel's domain (fusion.legality._reshaped_producers) and the
reshape sinking that must not undo them (fusion.simplify._sink_reshape): a GroupNorm over float16
activations cast to float32 before the group reshape, with its affine and SiLU after, is one row
kernel; the optimizer reaches its fixpoint in one round; a cast also used outside the kernel stays
out of it; results equal NumPy's."""
import numpy as np

import kfuse
from kfuse.fusion import pipeline
from kfuse.testing import assert_matches_numpy

RNG = np.random.default_rng(3)


def groupnorm_silu_f16(x, g, b):
    n, c, h, w = x.shape
    y = x.astype(np.float32).reshape(n, 4, (c // 4) * h * w)
    mu = y.mean(axis=-1, keepdims=True)
    var = y.var(axis=-1, keepdims=True)
    y = ((y - mu) / np.sqrt(var + 1e-5)).reshape(n, c, h, w)
    y = y * g.reshape(1, c, 1, 1) + b.reshape(1, c, 1, 1)
    return (y / (1 + np.exp(-y))).astype(np.float16)


def _args(shape=(2, 16, 5, 6)):
    return (RNG.standard_normal(shape).astype(np.float16), RNG.standard_normal(shape[1]).astype(np.float32),
            RNG.standard_normal(shape[1]).astype(np.float32))


def test_one_row_kernel_and_numpy_results():
    args = _args()
    f = kfuse.jit(groupnorm_silu_f16, backend="cpu")
    plan = f.lower(*args).plan
    assert len(plan.groups) == 1 and plan.groups[0].kind == "reduce"
    assert_matches_numpy(f(*args), groupnorm_silu_f16(*args), reductions=True)


def test_optimizer_reaches_its_fixpoint_in_one_round():
    names = []
    graph = kfuse.jit(groupnorm_silu_f16).lower(*_args()).graph
    once = pipeline.optimize(graph, callback=lambda name, g: names.append(name))
    assert len(names) <= len(pipeline.PASSES)        # every pass changed it at most once
    assert pipeline.optimize(once).outputs == once.outputs


def test_a_cast_also_returned_stays_out_of_the_row_kernel():
    def both(x):
        y = x.astype(np.float32)
        yg = y.reshape(x.shape[0], 4, -1)
        return (yg - yg.mean(-1, keepdims=True)).reshape(x.shape), y * 2
    x = _args()[0]
    f = kfuse.jit(both, backend="cpu")
    plan = f.lower(x).plan
    row = [g for g in plan.groups if g.kind == "reduce"]
    assert len(row) == 1 and all(o.shape == tuple(row[0].domain) or o.op.value == "sum" for o in row[0].outputs)
    for got, want in zip(f(x), both(x)):
        assert_matches_numpy(got, want, reductions=True)


def softmax_temperature(x, temp):
    y = x / temp
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_a_scalars_cast_is_computed_in_the_row_kernel():
    """``x / temp`` with a Python float: the cast of ``temp`` to float32 is part of the softmax's
    kernel, not a 0-d launch of its own before it; a 0-d value also returned stays out."""
    x = RNG.standard_normal((8, 33)).astype(np.float32)
    f = kfuse.jit(softmax_temperature, backend="cpu")
    assert len(f.lower(x, 0.7).plan.groups) == 1
    for t in (0.7, 3, np.float32(1.5)):
        assert_matches_numpy(f(x, t), softmax_temperature(x, t))

    def returned(x, t):
        s = np.sqrt(t) * 2
        return (x * s).sum(-1), s
    plan = kfuse.jit(returned, backend="cpu").lower(x, 0.5).plan
    assert all(o.shape != () for g in plan.groups if g.kind == "reduce" for o in g.outputs)
    got, want = kfuse.jit(returned, backend="cpu")(x, 0.5), returned(x, 0.5)
    assert_matches_numpy(got[0], want[0], reductions=True)
    assert float(got[1]) == float(want[1])
