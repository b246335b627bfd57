"""New sizes of device arrays (CuPy arrays, torch CUDA tensors) built from the shape class's
size-generic trace (``kfuse.size_generic``), without a GPU (``tests/fake_gpu.py``): no trace at a
new size (``retrace_count`` stays, ``untraced_count`` counts), and every launch (kernel source,
grid, block, sizes, strides and variant scalars) is the one a fresh function built at that size
makes, across tuning buckets, for transposed and offset views too (the variant is chosen per
call from the arrays' strides and alignment)."""
from __future__ import annotations

import numpy as np
import pytest

import kfuse
from kfuse.bench.workloads import make_p1, make_p2, make_p3
from fake_gpu import FakeCupy, FakeTensor, fake_gpu

RNG = np.random.default_rng(0)


def colsum(x):
    return x.sum(axis=0)


WORKLOADS = {
    "softmax": (make_p2(np), lambda r, c: (_f32(r, c),)),
    "layernorm": (make_p3(np), lambda r, c: (_f32(r, c), _f32(c), _f32(c))),
    "colsum": (colsum, lambda r, c: (_f32(r, c),)),
    "gelu_bias": (make_p1(np), lambda r, c: (_f32(r, c), _f32(c), _f32(c))),
}
# new sizes across tuning buckets and schedules (packed, one block a row, long rows, columns)
SIZES = [(64, 48), (33, 100), (5, 600), (300, 17), (129, 257), (2, 3), (1000, 1030), (40, 4100)]


def _f32(*shape):
    return RNG.random(shape).astype(np.float32)


@pytest.fixture
def gpu(monkeypatch):
    with fake_gpu(monkeypatch) as log:
        yield log


def _launches(log, fn, args, jf=None):
    """What calling ``jf`` (default: a fresh jitted ``fn``, a full build) on ``args`` launched."""
    log.take()
    (jf or kfuse.jit(fn))(*args)
    return log.take()


@pytest.mark.parametrize("kind", [FakeCupy, FakeTensor], ids=["cupy", "torch"])
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_new_sizes_are_not_traced_and_launch_as_a_fresh_build(gpu, name, kind):
    fn, make = WORKLOADS[name]
    jf = kfuse.jit(fn)
    jf(*map(kind, make(7, 9)))
    retraces = jf.retrace_count             # (the probe trace that made it size-generic)
    for r, c in SIZES:
        args = tuple(map(kind, make(r, c)))
        got = _launches(gpu, fn, args, jf)
        assert "not traced" in jf.last_build, (r, c)
        assert got and got == _launches(gpu, fn, args), (r, c)
    assert jf.retrace_count == retraces
    assert jf.untraced_count == len(SIZES)
    assert jf.compile_count == 1


@pytest.mark.parametrize("name", ["softmax", "colsum", "gelu_bias"])
def test_views_choose_their_own_variant(gpu, name):
    """Same shape class, other strides or alignment: a transposed operand, a view starting one
    element in (no 16-byte vectors there), each at a new size."""
    fn, make = WORKLOADS[name]
    jf = kfuse.jit(fn)
    jf(*map(FakeCupy, make(7, 9)))
    for r, c in [(48, 64), (33, 101), (300, 20)]:
        x, *rest = make(r, c)
        for view in (np.ascontiguousarray(x.T).T, np.concatenate([x.ravel(), x.ravel()[:1]])[1:].reshape(r, c)):
            args = (FakeCupy(view), *map(FakeCupy, rest))
            assert _launches(gpu, fn, args, jf) == _launches(gpu, fn, args), (r, c)
    assert jf.untraced_count == 6


def test_no_size_generic_build_across_devices_or_dtypes(gpu):
    """A new shape class (another dtype) is a full build of its own, never a rebuild of another
    class's trace."""
    fn, make = WORKLOADS["softmax"]
    jf = kfuse.jit(fn)
    jf(FakeCupy(_f32(7, 9)))
    jf(FakeCupy(_f32(70, 19).astype(np.float64)))
    assert jf.untraced_count == 0 and jf.compile_count == 2
    jf(FakeCupy(_f32(17, 29)))
    assert jf.untraced_count == 1
