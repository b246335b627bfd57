"""The Numba-CUDA backend end to end on a GPU: results equal NumPy's (skipped without a GPU, CuPy or
an importable numba-cuda). Same cases as the CUDA C backend's tests."""
import numpy as np
import pytest

from kfuse.codegen import numba_cuda as nc
from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)
_ok, _why = nc.numba_cuda_available()
if not _ok:
    pytest.skip(_why, allow_module_level=True)

import cupy as cp  # noqa: E402

from handplan import one_group_plan, trace  # noqa: E402
from kfuse.runtime.numba_cuda import compile_plan  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402

RNG = np.random.default_rng(0)


def run(fn, *arrays, reductions=False, views=None):
    specs = [(a.dtype.name, a.shape) for a in arrays]
    dev = [cp.asarray(a) for a in arrays]
    if views:
        dev = views(dev)
        arrays = [cp.asnumpy(d) for d in dev]
        specs = [(d.dtype.name, d.shape) for d in dev]
    prog = compile_plan(one_group_plan(trace(fn, *specs)))
    outs = prog(dev)
    with np.errstate(all="ignore"):
        exp = fn(*arrays)
    exp = exp if isinstance(exp, tuple) else (exp,)
    assert len(outs) == len(exp)
    for o, e in zip(outs, exp):
        assert_matches_numpy(cp.asnumpy(o), np.asarray(e), reductions=reductions)
    return prog, outs


def gelu(x, w, b):
    y = x * w + b
    return 0.5 * y * (1 + np.tanh(0.7978845608 * (y + 0.044715 * y ** 3)))


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


@pytest.mark.parametrize("shape", [(64, 128), (7, 33), (300, 4096)])
def test_elementwise_broadcast(shape):
    x = RNG.standard_normal(shape, dtype=np.float32)
    w = RNG.standard_normal(shape[-1:], dtype=np.float32)
    b = RNG.standard_normal(shape[-1:], dtype=np.float32)
    prog, _ = run(gelu, x, w, b)
    assert "def kfuse_kernel" in prog.stages["numba"] and ".entry" in prog.stages["ptx"]


def test_transposed_and_strided_views():
    x = RNG.standard_normal((64, 256), dtype=np.float32)
    run(lambda x: np.exp(x.T) * 2 - x.T, x)
    w = RNG.standard_normal((128,), dtype=np.float32)
    b = RNG.standard_normal((128,), dtype=np.float32)
    run(gelu, x, w, b, views=lambda d: [d[0][:, ::2], d[1], d[2]])
    run(lambda x: x.sum(axis=0), x, views=lambda d: [d[0][::-1]], reductions=True)


@pytest.mark.parametrize("shape", [(64, 128), (5, 1000), (3, 20000), (300, 7)])
def test_softmax_layernorm(shape):
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    run(softmax, x, reductions=True)
    g = RNG.standard_normal(shape[-1:], dtype=np.float32)
    b = RNG.standard_normal(shape[-1:], dtype=np.float32)
    run(layernorm, x, g, b, reductions=True)


def test_column_and_arg_reductions_nan():
    x = RNG.standard_normal((257, 64)).astype(np.float32)
    x[3, 5] = x[10, 5] = np.nan
    x[7, 9] = x[100, 9] = 50.0
    run(lambda x: (x.sum(axis=0), x.max(axis=0), x.argmax(axis=0)), x, reductions=True)
    run(lambda x: (x.argmin(axis=1), x.min(axis=1), x.argmax(axis=1)), x, reductions=True)
    run(lambda x: (x.any(axis=1), x.all(axis=0), (x > 0).sum(axis=1)), x, reductions=True)
    run(lambda x: x.sum(), RNG.standard_normal((100003,)).astype(np.float32), reductions=True)
    run(softmax, x, views=lambda d: [d[0][:, 1:33]], reductions=True)
    i = RNG.integers(-100, 100, (33, 70), dtype=np.int16)
    run(lambda i: (i.sum(axis=1), i.max(axis=0), i.prod(axis=1)), i)


def test_integer_semantics():
    a = RNG.integers(-128, 127, (64, 33), dtype=np.int8)
    b = RNG.integers(-128, 127, (64, 33), dtype=np.int8)
    b[b == 0] = 3
    b[0, 0] = 0
    run(lambda a, b: (a + b, a * b, a // b, a % b, np.maximum(a, b), a << 3, a >> 1, -a), a, b)
    c = RNG.integers(-2 ** 31, 2 ** 31 - 1, (1000,), dtype=np.int32)
    d = RNG.integers(-50, 50, (1000,), dtype=np.int32)
    run(lambda c, d: (c * 7 + d, c // d, c % d, np.abs(c)), c, d)
    u = RNG.integers(0, 2 ** 63, (500,), dtype=np.uint64)
    v = RNG.integers(0, 70, (500,), dtype=np.uint64)
    run(lambda u, v: (u * u + v, u // (v + np.uint64(1)), u >> v, u << v), u, v)


def test_float_nan_rules_and_f16():
    a = RNG.standard_normal((1000,)).astype(np.float32)
    b = RNG.standard_normal((1000,)).astype(np.float32)
    a[::7] = np.nan
    run(lambda a, b: (np.maximum(a, b), np.minimum(b, a), np.fmax(a, b), np.fmin(a, b), a // b,
                      np.remainder(a, b), np.isnan(a), np.isfinite(b)), a, b)
    h = RNG.standard_normal((4096,)).astype(np.float16)
    run(lambda h: np.exp(h) * h + 1, h)
    run(lambda h: (h.astype(np.float32).sum(axis=0), h.max()), h.reshape(64, 64), reductions=True)


def test_empty_and_new_size_reuses_kernel():
    run(lambda x: x * 2, np.zeros((0, 5), np.float32))
    from kfuse.runtime import numba_cuda as rt
    before = len(rt._LOADED)
    run(gelu, *(RNG.standard_normal(s, dtype=np.float32) for s in ((16, 32), (32,), (32,))))
    mid = len(rt._LOADED)
    run(gelu, *(RNG.standard_normal(s, dtype=np.float32) for s in ((48, 96), (96,), (96,))))
    assert len(rt._LOADED) == mid >= before
