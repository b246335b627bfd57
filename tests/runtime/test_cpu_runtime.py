"""CPU runtime end to end: trace -> optimize -> plan -> compile_plan on real NumPy functions
(skipped while the tracer or planner is missing), compared with NumPy eager."""
import inspect

import numpy as np
import pytest

from tests.tolerance import assert_matches_numpy

trace_mod = pytest.importorskip("kfuse.trace")
pipeline = pytest.importorskip("kfuse.fusion.pipeline")
from kfuse.ir.specs import spec_of_value  # noqa: E402
from kfuse.runtime.cpu import compile_plan  # noqa: E402


def kfuse_run(fn, *args):
    names = list(inspect.signature(fn).parameters)
    specs = {n: spec_of_value(a) for n, a in zip(names, args)}
    plan = pipeline.plan(pipeline.optimize(trace_mod.trace_function(fn, specs)))
    prog = compile_plan(plan)
    out = prog([a for a in args if isinstance(a, np.ndarray)])
    return out, plan, prog


def check(fn, *args, reductions=False):
    got, plan, prog = kfuse_run(fn, *args)
    ref = fn(*args)
    ref = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert_matches_numpy(g, np.asarray(r), reductions=reductions)
    return plan, prog


def gelu(x, w, b):
    y = x * w + b
    return 0.5 * y * (1.0 + np.tanh(0.7978845608 * (y + 0.044715 * y * y * y)))


def adam(p, g, m, v):
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    p = p - 1e-3 * (m / (1 - 0.9 ** 10)) / (np.sqrt(v / (1 - 0.999 ** 10)) + 1e-8)
    return p, m, v


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def mixed(a, b):
    return (a.T[::-1, ::2] + 1).reshape(-1), (a // 3) % -4, np.argmax(b, axis=0), b.sum(axis=(0, 2))


rng = np.random.default_rng(0)


def test_p1_p6_shapes_one_kernel_each():
    x = rng.standard_normal((33, 70), dtype=np.float32)
    w = rng.standard_normal(70, dtype=np.float32)
    b = rng.standard_normal(70, dtype=np.float32)
    plan, _ = check(gelu, x, w, b)
    assert len(plan.groups) == 1
    ps = [rng.standard_normal(1000, dtype=np.float32) for _ in range(3)]
    ps.append(np.abs(rng.standard_normal(1000, dtype=np.float32)))
    plan, _ = check(adam, *ps)
    assert len(plan.groups) == 1


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_softmax_layernorm(dt):
    x = (rng.standard_normal((9, 65)) * 4).astype(dt)
    check(softmax, x, reductions=True)
    g, b = rng.standard_normal(65).astype(dt), rng.standard_normal(65).astype(dt)
    check(layernorm, x, g, b, reductions=True)


def test_noncontiguous_ints_argmax_sums():
    a = rng.integers(-50, 50, (8, 6)).astype(np.int16)[:, ::-1]
    b = rng.standard_normal((4, 5, 3))
    b[2, 1, 0] = np.nan
    check(mixed, a, b)


def test_new_size_reuses_compiled_kernels():
    from kfuse.runtime import cpu as rt
    x = rng.standard_normal((7, 5), dtype=np.float32)
    w, b = rng.standard_normal(5, dtype=np.float32), rng.standard_normal(5, dtype=np.float32)
    _, _, p1 = kfuse_run(gelu, x, w, b)
    n = len(rt._COMPILED)
    x2 = rng.standard_normal((3, 11), dtype=np.float32)
    w2, b2 = rng.standard_normal(11, dtype=np.float32), rng.standard_normal(11, dtype=np.float32)
    got, _, p2 = kfuse_run(gelu, x2, w2, b2)
    assert len(rt._COMPILED) == n
    assert_matches_numpy(got[0], gelu(x2, w2, b2))
