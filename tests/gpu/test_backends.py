"""The shared correctness suite, parametrised over the CPU backend and both GPU backends (CUDA C
through NVRTC, Numba-CUDA): the same hand-built one-kernel plans, the same inputs, results equal
NumPy's per tests/tolerance.py. The GPU rows are marked ``gpu`` and skip themselves without a GPU
(or, for numba-cuda, without an importable numba-cuda: the ``backend`` fixture of
tests/conftest.py); the CPU row runs everywhere.

A reduce group has ONE domain and ONE tuple of reduced axes (fusion/plan.py): cases that mix
reductions over different axes are separate programs here.
"""
import numpy as np
import pytest

from handplan import compile_for, gelu, layernorm, one_group_plan, run, softmax, trace
from tolerance import assert_matches_numpy


def rng():
    return np.random.default_rng(0)


@pytest.mark.parametrize("shape", [(64, 128), (7, 33), (300, 4096)])
def test_elementwise_broadcast(backend, shape):
    r = rng()
    x = r.standard_normal(shape, dtype=np.float32)
    w = r.standard_normal(shape[-1:], dtype=np.float32)
    b = r.standard_normal(shape[-1:], dtype=np.float32)
    run(backend, gelu, x, w, b)


def test_transposed_and_strided_views(backend):
    r = rng()
    x = r.standard_normal((64, 256), dtype=np.float32)
    run(backend, lambda x: np.exp(x.T) * 2 - x.T, x)
    w = r.standard_normal((128,), dtype=np.float32)
    b = r.standard_normal((128,), dtype=np.float32)
    run(backend, gelu, x, w, b, views=lambda d: [d[0][:, ::2], d[1], d[2]])      # strided input
    run(backend, lambda x: x.sum(axis=0), x, views=lambda d: [d[0][::-1]], reductions=True)


@pytest.mark.parametrize("shape", [(64, 128), (5, 1000), (3, 20000), (300, 7)])
def test_softmax_layernorm(backend, shape):
    r = rng()
    x = (r.standard_normal(shape) * 4).astype(np.float32)
    run(backend, softmax, x, reductions=True)
    g = r.standard_normal(shape[-1:], dtype=np.float32)
    b = r.standard_normal(shape[-1:], dtype=np.float32)
    run(backend, layernorm, x, g, b, reductions=True)


def test_column_and_arg_reductions_nan(backend):
    r = rng()
    x = r.standard_normal((257, 64)).astype(np.float32)
    x[3, 5] = x[10, 5] = np.nan
    x[7, 9] = x[100, 9] = 50.0
    run(backend, lambda x: (x.sum(axis=0), x.max(axis=0), x.argmax(axis=0)), x, reductions=True)
    run(backend, lambda x: (x.argmin(axis=1), x.min(axis=1), x.argmax(axis=1)), x, reductions=True)
    run(backend, lambda x: (x.argmax(axis=1), x.sum(axis=1)), x[:, :63].copy(), reductions=True)  # odd rows
    # one reduce group = one axes tuple: any/count over rows and all over columns are two kernels
    run(backend, lambda x: (x.any(axis=1), (x > 0).sum(axis=1)), x, reductions=True)
    run(backend, lambda x: x.all(axis=0), x, reductions=True)
    run(backend, lambda x: x.sum(), r.standard_normal((100003,)).astype(np.float32), reductions=True)
    run(backend, softmax, x, views=lambda d: [d[0][:, 1:33]], reductions=True)   # unaligned view
    i = r.integers(-100, 100, (33, 70), dtype=np.int16)
    run(backend, lambda i: (i.sum(axis=1), i.prod(axis=1)), i)
    run(backend, lambda i: i.max(axis=0), i)


def test_integer_semantics(backend):
    r = rng()
    a = r.integers(-128, 127, (64, 33), dtype=np.int8)
    b = r.integers(-128, 127, (64, 33), dtype=np.int8)
    b[b == 0] = 3
    b[0, 0] = 0
    run(backend, lambda a, b: (a + b, a * b, a // b, a % b, np.maximum(a, b), a << 3, a >> 1, -a), a, b)
    c = r.integers(-2 ** 31, 2 ** 31 - 1, (1000,), dtype=np.int32)
    d = r.integers(-50, 50, (1000,), dtype=np.int32)
    run(backend, lambda c, d: (c * 7 + d, c // d, c % d, np.abs(c)), c, d)
    u = r.integers(0, 2 ** 63, (500,), dtype=np.uint64)
    v = r.integers(0, 70, (500,), dtype=np.uint64)
    run(backend, lambda u, v: (u * u + v, u // (v + np.uint64(1)), u >> v, u << v), u, v)


def test_float_nan_rules_and_f16(backend):
    r = rng()
    a = r.standard_normal((1000,)).astype(np.float32)
    b = r.standard_normal((1000,)).astype(np.float32)
    a[::7] = np.nan
    run(backend, lambda a, b: (np.maximum(a, b), np.minimum(b, a), np.fmax(a, b), np.fmin(a, b), a // b,
                               np.remainder(a, b), np.isnan(a), np.isfinite(b)), a, b)
    h = r.standard_normal((4096,)).astype(np.float16)
    run(backend, lambda h: np.exp(h) * h + 1, h)
    # a cast out of float16 rounds to float16 first: the float64 result holds float16 values.
    # GPU backends compute f16 chains in f32 (h + 1 is not rounded; tests/tolerance.py), and a
    # libm ulp may flip an f16 rounding, so compare at float16 tolerance, not float64's
    widened = compile_for(backend, one_group_plan(trace(lambda h: np.arctan2(h, h + 1).astype(np.float64),
                                                     ("float16", h.shape))))
    got = widened([h if backend == "cpu" else __import__("cupy").asarray(h)])[0]
    got = np.asarray(got) if backend == "cpu" else got.get()
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, got.astype(np.float16).astype(np.float64))
    assert_matches_numpy(got.astype(np.float16), np.arctan2(h, h + 1))
    run(backend, lambda h: (h.astype(np.float32).sum(axis=0), h.max(axis=0)), h.reshape(64, 64),
        reductions=True)


def test_empty(backend):
    run(backend, lambda x: x * 2, np.zeros((0, 5), np.float32))
    run(backend, lambda x: (x.any(axis=0), x * 2), np.zeros((0,), np.float32))   # 0-d any() of nothing
    run(backend, lambda x: x.sum(axis=1), np.zeros((3, 0), np.float32))


@pytest.mark.parametrize("fn", [gelu, layernorm,
                                lambda x, w, b: (np.exp(x - x.max(axis=0)) * w).sum(axis=-1) + b[0]],
                         ids=["gelu", "layernorm", "two-kernels"])
def test_through_the_real_planner(backend, fn):
    from handplan import plan_for
    r = rng()
    x = r.standard_normal((96, 160)).astype(np.float32)
    w = r.standard_normal((160,)).astype(np.float32)
    b = r.standard_normal((160,)).astype(np.float32)
    plan, how = plan_for(fn, ("float32", x.shape), ("float32", w.shape), ("float32", b.shape),
                         device=None if backend == "cpu" else "h100")
    assert how == "pipeline"
    if backend == "cpu":
        outs = compile_for(backend, plan)([x, w, b])
        to_np = np.asarray
    else:
        import cupy as cp
        outs = compile_for(backend, plan)([cp.asarray(a) for a in (x, w, b)])
        to_np = cp.asnumpy
    exp = fn(x, w, b)
    exp = exp if isinstance(exp, tuple) else (exp,)
    for o, e in zip(outs, exp):
        assert_matches_numpy(to_np(o), np.asarray(e), reductions=True)
