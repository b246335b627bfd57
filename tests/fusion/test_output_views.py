"""Reshapes around row kernels: an elementwise op of a computed value's reshape is computed in the
value's shape (``simplify.sink_reshapes``), and an output that is a reshape of a computed value is
returned as a view of its kernel output (``Plan.views``): GroupNorm over NCHW is one kernel."""
import numpy as np

import kfuse
from kfuse.fusion import pipeline
from kfuse.ir.ops import Op
from tolerance import assert_matches_numpy

RNG = np.random.default_rng(3)


def group_norm(x, g, b):
    n, c, h, w = x.shape
    y = x.reshape(n, 4, -1)
    y = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-5)
    return y.reshape(n, c, h, w) * g[None, :, None, None] + b[None, :, None, None]


def _plan(fn, *args):
    return kfuse.jit(fn).lower(*args).plan


def test_group_norm_is_one_kernel_returning_a_view():
    x, g, b = RNG.standard_normal((3, 8, 5, 7)).astype(np.float32), RNG.random(8, np.float32), RNG.random(8, np.float32)
    p = _plan(group_norm, x, g, b)
    assert len(p.groups) == 1 and p.groups[0].kind == "reduce"
    assert len(p.views) == 1 and p.views[0].shape == (3, 8, 5, 7) and p.views[0].op is Op.RESHAPE
    got = kfuse.jit(group_norm)(x, g, b)
    assert got.shape == x.shape and got.flags.c_contiguous
    assert_matches_numpy(got, group_norm(x, g, b), reductions=True)


def test_a_value_and_its_reshape_share_memory_as_numpy_views_do():
    def f(x):
        y = np.exp(x - x.max(1, keepdims=True))
        return y, y.reshape(-1)
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    y, flat = kfuse.jit(f)(x)
    assert_matches_numpy(flat, f(x)[1])
    assert np.shares_memory(y, flat)


def test_reshape_sinks_below_elementwise_ops_of_computed_values_only():
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    opt = kfuse.jit(lambda x: (x.max(1, keepdims=True) - x).reshape(2, 12) * 2 + 1).lower(x).optimized
    out = opt.outputs[0]
    assert out.op is Op.RESHAPE and out.inputs[0].shape == (4, 6)            # the ops run in (4, 6)
    leaf = kfuse.jit(lambda x: x.reshape(2, 12) * 2).lower(x).optimized.outputs[0]
    assert leaf.op is Op.MULTIPLY and leaf.inputs[0].op is Op.RESHAPE          # an argument's reshape stays
    assert pipeline.plan(opt).views == (out,)
