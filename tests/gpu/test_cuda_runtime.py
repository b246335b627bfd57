"""The CUDA backend end to end on a GPU: results equal NumPy's (skipped without a GPU/CuPy)."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

from handplan import one_group_plan, plan_for, trace  # noqa: E402
from kfuse.errors import DeviceError  # noqa: E402
from kfuse.runtime.cuda import compile_plan  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402

RNG = np.random.default_rng(0)


def run(fn, *arrays, reductions=False, views=None):
    specs = [(a.dtype.str, a.shape) for a in arrays]
    specs = [(np.dtype(s[0]).name, s[1]) for s in specs]
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


@pytest.mark.parametrize("shape", [(64, 128), (7, 33), (1, 4096)])
def test_gelu(shape):
    x = RNG.standard_normal(shape, dtype=np.float32)
    w = RNG.standard_normal(shape[-1:], dtype=np.float32)
    b = RNG.standard_normal(shape[-1:], dtype=np.float32)
    run(gelu, x, w, b)


def test_gelu_noncontiguous_input():
    x = RNG.standard_normal((64, 256), dtype=np.float32)
    w = RNG.standard_normal((128,), dtype=np.float32)
    b = RNG.standard_normal((128,), dtype=np.float32)
    fn = lambda x, w, b: gelu(x, w, b)  # noqa: E731
    prog = compile_plan(one_group_plan(trace(fn, ("float32", (64, 128)), ("float32", (128,)), ("float32", (128,)))))
    xd = cp.asarray(x)[:, ::2]
    out = prog([xd, cp.asarray(w), cp.asarray(b)])[0]
    assert_matches_numpy(cp.asnumpy(out), gelu(x[:, ::2], w, b))


@pytest.mark.parametrize("shape", [(64, 128), (5, 1000), (3, 20000), (300, 7)])
def test_softmax_layernorm(shape):
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    run(softmax, x, reductions=True)
    g = RNG.standard_normal(shape[-1:], dtype=np.float32)
    b = RNG.standard_normal(shape[-1:], dtype=np.float32)
    run(layernorm, x, g, b, reductions=True)


def test_column_and_arg_reductions_nan():
    x = RNG.standard_normal((257, 64)).astype(np.float32)
    x[3, 5] = np.nan
    x[10, 5] = np.nan
    x[7, 9] = x[100, 9] = 50.0
    run(lambda x: (x.sum(axis=0), x.max(axis=0), x.argmax(axis=0)), x, reductions=True)
    run(lambda x: (x.argmin(axis=1), x.min(axis=1), x.argmax(axis=1)), x, reductions=True)
    run(lambda x: (x.argmax(axis=1), x.sum(axis=1)), x[:, :63].copy(), reductions=True)   # odd rows: scalar
    run(lambda x: x.sum(), RNG.standard_normal((100003,)).astype(np.float32), reductions=True)
    run(softmax, x, views=lambda d: [d[0][:, 1:33]], reductions=True)   # unaligned view


def test_integer_semantics():
    a = RNG.integers(-128, 127, (64, 33), dtype=np.int8)
    b = RNG.integers(-128, 127, (64, 33), dtype=np.int8)
    b[b == 0] = 3
    b[0, 0] = 0
    run(lambda a, b: (a + b, a * b, a // b, a % b, np.maximum(a, b), a << 3, a >> 1, -a), a, b)
    c = RNG.integers(-2 ** 31, 2 ** 31 - 1, (1000,), dtype=np.int32)
    d = RNG.integers(-50, 50, (1000,), dtype=np.int32)
    run(lambda c, d: (c * 7 + d, c // d, c % d, np.abs(c)), c, d)


def test_float_nan_rules_and_f16():
    a = RNG.standard_normal((1000,)).astype(np.float32)
    b = RNG.standard_normal((1000,)).astype(np.float32)
    a[::7] = np.nan
    run(lambda a, b: (np.maximum(a, b), np.minimum(b, a), np.fmax(a, b), np.fmin(a, b), a // b,
                      np.remainder(a, b)), a, b)
    h = RNG.standard_normal((4096,)).astype(np.float16)
    run(lambda h: np.exp(h) * h + 1, h)


def test_empty_and_torch_and_errors():
    run(lambda x: x * 2, np.zeros((0, 5), np.float32))
    torch = pytest.importorskip("torch")
    prog = compile_plan(one_group_plan(trace(gelu, ("float32", (8, 16)), ("float32", (16,)), ("float32", (16,)))))
    x, w, b = (torch.randn(8, 16, device="cuda"), torch.randn(16, device="cuda"), torch.randn(16, device="cuda"))
    out = prog([x, w, b])[0]
    assert isinstance(out, torch.Tensor) and out.is_cuda
    assert_matches_numpy(out.cpu().numpy(), gelu(x.cpu().numpy(), w.cpu().numpy(), b.cpu().numpy()))
    with pytest.raises(DeviceError):
        prog([x, np.ones(16, np.float32), w])


def test_new_size_reuses_module():
    from kfuse.runtime import cuda as rc
    run(gelu, *(RNG.standard_normal(s, dtype=np.float32) for s in [(32, 64), (64,), (64,)]))
    n = len(rc._COMPILED)
    run(gelu, *(RNG.standard_normal(s, dtype=np.float32) for s in [(48, 256), (256,), (256,)]))
    assert len(rc._COMPILED) == n


def test_more_than_2_31_elements():
    n = 2 ** 31 + 4099
    x = cp.ones((n,), dtype=cp.int8)
    x[-3:] = 5
    prog = compile_plan(one_group_plan(trace(lambda x: x * 2 + 1, ("int8", (n,)))))
    out = prog([x])[0]
    assert int(out[-1]) == 11 and int(out[0]) == 3 and int(out[n // 2]) == 3
    assert prog.launchers[0]._variants and all(v[0].variant.idx64 for v in prog.launchers[0]._variants.values())
    del x, out


@pytest.mark.parametrize("fn", [gelu, layernorm, lambda x, w, b: (np.exp(x - x.max(axis=0)) * w).sum(axis=-1) + b[0]])
def test_through_the_real_planner(fn):
    x = RNG.standard_normal((96, 160)).astype(np.float32)
    w = RNG.standard_normal((160,)).astype(np.float32)
    b = RNG.standard_normal((160,)).astype(np.float32)
    plan, how = plan_for(fn, ("float32", x.shape), ("float32", w.shape), ("float32", b.shape), device="h100")
    outs = compile_plan(plan)([cp.asarray(a) for a in (x, w, b)])
    exp = fn(x, w, b)
    exp = exp if isinstance(exp, tuple) else (exp,)
    for o, e in zip(outs, exp):
        assert_matches_numpy(cp.asnumpy(o), np.asarray(e), reductions=True)
