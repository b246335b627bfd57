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
from fake_gpu import FakeCupy, FakeTensor, count_renders, fake_gpu

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


@pytest.fixture
def renders(monkeypatch):
    """The kernels rendered to CUDA C (``codegen.cuda.emit_kernel`` calls), by kernel name; the
    disk's index of rendered kernels is left out (a new process's: tests/runtime/test_rendered.py)."""
    from kfuse.runtime import rendered
    monkeypatch.setattr(rendered, "load", lambda *a: None)
    return count_renders(monkeypatch)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_a_seen_variant_is_not_rendered_again(gpu, renders, monkeypatch, name):
    """A launch variant rendered once in the process (here by another function with the same
    kernels, at the same sizes) is found by the kernel IR's normal form at a new size, without
    rendering its source again: a one-pass kernel, a two-stage reduction's second kernel, a
    flattened domain's kernel alike."""
    from kfuse.runtime import cuda
    monkeypatch.setattr(cuda, "_EMITTED", {})       # (what earlier tests rendered: not seen here)
    fn, make = WORKLOADS[name]
    first = kfuse.jit(fn)
    first(*map(FakeCupy, make(7, 9)))
    for r, c in SIZES:
        first(*map(FakeCupy, make(r, c)))
    assert len(cuda._EMITTED) > 1 and renders
    again = kfuse.jit(fn)
    again(*map(FakeCupy, make(7, 9)))
    renders.clear()
    for r, c in SIZES:
        args = tuple(map(FakeCupy, make(r, c)))
        assert _launches(gpu, fn, args, again) == _launches(gpu, fn, args, first)
    assert again.untraced_count == len(SIZES)
    assert renders == []


def test_known_gpu_tuning_applies_to_its_bucket_only(gpu, monkeypatch):
    """A GPU program at a new size takes its bucket's tuning from the process's memo without the
    full tuning path (``autotune.tuner.known_choice``), as a host program does."""
    from kfuse.autotune import prune as P, tuner
    from kfuse.autotune.gpu_targets import gpu_arch
    from kfuse.fusion import cost
    from kfuse.runtime import keys
    fn, make = WORKLOADS["softmax"]
    jf = kfuse.jit(fn, autotune="cached")
    for r, c in [(7, 9), (11, 13), (100, 60)]:
        jf(*map(FakeCupy, make(r, c)))
    program = jf._programs[jf._key((FakeCupy(_f32(100, 60)),))].program
    g = program.plan.groups[0]
    khash = tuner._KHASH_BY_DTYPE[(program.tuning_sources[0], tuple((n.dtype, len(n.shape)) for n in g.inputs),
                                   "cuda", gpu_arch())]
    cfg = P.heuristic(g, "cuda", cost.get_device_spec("h100"))
    monkeypatch.setitem(tuner._MEMO, (khash, tuple(keys.shape_bucket(g.domain)), gpu_arch()), cfg)

    def full_path(*a, **k):
        raise AssertionError("the full tuning path at a known bucket")
    monkeypatch.setattr(tuner, "tune_program", full_path)
    same = (FakeCupy(_f32(101, 61)),)       # the same bucket as 100x60
    jf(*same)
    assert jf.untraced_count == 3
    assert jf._programs[jf._key(same)].program._tiles == {g.id: cfg}
    other = (FakeCupy(_f32(300, 200)),)     # another bucket: no tuning known, none stored
    monkeypatch.setattr(tuner, "_KHASH_BY_DTYPE", dict(tuner._KHASH_BY_DTYPE))
    jf(*other)
    assert not getattr(jf._programs[jf._key(other)].program, "_tiles", None)


@pytest.mark.parametrize("pair", [(0.0, -0.0), (np.nan, np.inf)], ids=["signed_zero", "nan_inf"])
def test_constants_equal_as_floats_are_other_kernels(gpu, pair):
    """``x / 0.0`` and ``x / -0.0`` (equal as Python floats) are other code: the process-wide memo
    of rendered kernels must not hand one the other's (a GPU test saw x / -0.0 give +inf)."""
    sources = []
    for c in pair:
        kfuse.jit(_divide_by(np.float32(c)))(FakeCupy(_f32(64, 48)))
        sources.append([src for _, src, *_ in gpu.take()])
    assert sources[0] and sources[0] != sources[1]


def _divide_by(c32):
    return lambda x: x / c32            # (a closure's scalar is a constant of the trace)
