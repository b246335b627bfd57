"""The Numba-CUDA backend end to end on a GPU: results equal NumPy's (skipped without a GPU, CuPy or
an importable numba-cuda). Numba-CUDA specifics; the shared cases are in tests/gpu/test_backends.py."""
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


def test_stages_and_launch():
    x = RNG.standard_normal((64, 128), dtype=np.float32)
    w = RNG.standard_normal((128,), dtype=np.float32)
    b = RNG.standard_normal((128,), dtype=np.float32)
    prog, _ = run(gelu, x, w, b)
    assert "def kfuse_kernel" in prog.stages["numba"] and ".entry" in prog.stages["ptx"]


# elementwise/broadcast, views, softmax/layernorm, column/arg reductions with NaN, integer and float
# NaN rules, float16: tests/gpu/test_backends.py (the same cases on the CPU, CUDA C and Numba-CUDA
# backends). The former test_column_and_arg_reductions_nan here put any(axis=1) and all(axis=0)
# in ONE hand-built reduce group, which fusion/plan.py forbids (one domain, one axes tuple per
# group): lower.py rightly refused it. The cases are now separate programs there.


def test_empty_and_new_size_reuses_kernel():
    run(lambda x: x * 2, np.zeros((0, 5), np.float32))
    from kfuse.runtime import numba_cuda as rt
    before = len(rt._LOADED)
    run(gelu, *(RNG.standard_normal(s, dtype=np.float32) for s in ((16, 32), (32,), (32,))))
    mid = len(rt._LOADED)
    run(gelu, *(RNG.standard_normal(s, dtype=np.float32) for s in ((48, 96), (96,), (96,))))
    assert len(rt._LOADED) == mid >= before
