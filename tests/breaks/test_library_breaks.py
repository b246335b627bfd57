"""Library calls between fused kernels (issue 35): np.sort/argsort/partition/argpartition and
ndarray.sort run as the library's kernel (NumPy on the CPU, CuPy on the GPU) with the elementwise
and row-wise work around them fused, and explain shows the break."""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

from backends import to_device, to_host


def norm_sort_softmax(x):
    y = np.sort((x - x.mean(axis=-1, keepdims=True)) / (x.std(axis=-1, keepdims=True) + 1e-5), axis=-1)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def topk(x, k=5):
    idx = np.argpartition(-x, k, axis=-1)[:, :k]
    vals = np.take_along_axis(x, idx, axis=-1)
    order = np.argsort(-vals, axis=-1)
    return np.take_along_axis(vals, order, axis=-1) * 2.0


def partition_median(x):
    k = x.shape[-1] // 2
    return np.partition(x * 3.0, k, axis=-1)[:, k] + x.sum(axis=-1)


def _data(seed=0, shape=(32, 100)):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("fn", [norm_sort_softmax, topk, partition_median])
def test_library_call_between_fused_kernels_matches_numpy(backend, cupy_for, fn):
    if backend != "cpu":
        cupy_for(backend)
    x = _data()
    f = kfuse.jit(fn, backend=backend)
    got = to_host(f(*to_device(backend, x)))
    assert_matches_numpy(got, fn(x), reductions=True)
    n = f.compile_count
    assert n >= 1
    got = to_host(f(*to_device(backend, _data(1))))            # new values, same path: no compile
    assert_matches_numpy(got, fn(_data(1)), reductions=True)
    assert f.compile_count == n


def test_explain_shows_the_library_node_between_two_fused_kernels():
    x = _data()
    for args in ((x,), ("f32[4096,4096]",)):           # run on (a copy of) arrays, or planned from specs
        text = str(kfuse.explain(norm_sort_softmax, *args))
        assert "2 fused segment(s), 1 graph break(s)" in text
        assert "graph break: np.sort at test_library_breaks.py:" in text
        assert "library call (numpy.sort)" in text
        head, tail = text.split("graph break:")
        assert "reduce" in head and "reduce" in tail and "exp" in tail and "exp" not in head


def test_explain_leaves_the_arguments_alone():
    def f(x):
        x.sort(axis=-1)
        return x
    x = _data()
    before = x.copy()
    kfuse.explain(f, x)
    np.testing.assert_array_equal(x, before)


def test_ndarray_sort_in_place_writes_the_argument_back(backend, cupy_for):
    if backend != "cpu":
        cupy_for(backend)

    def f(x, y):
        y.sort()                    # a local array sorted in place
        x.sort(axis=0)              # the caller's array, as NumPy sorts it
        return x * 2 + y.sum(), x.argsort(axis=-1)
    x, y = _data(), _data(2)
    ex, ey = x.copy(), y.copy()
    want = f(ex, ey)
    dx, dy = to_device(backend, x, y)
    got = to_host(kfuse.jit(f, backend=backend)(dx, dy))
    for g, w in zip(got, want):
        assert_matches_numpy(g, w, reductions=True)
    np.testing.assert_array_equal(to_host(dx), ex)      # sorted in place, as NumPy's
    np.testing.assert_array_equal(to_host(dy), ey)      # y too: it is an argument written into


def test_fft_round_trip_runs_eagerly_around_fused_work():
    def smooth(x, h):
        spec = np.fft.rfft(x * 2.0, axis=-1)       # complex: eager (cuFFT on the GPU)
        y = np.fft.irfft(spec * h, n=x.shape[-1], axis=-1)
        return np.maximum(y, 0.0) + x.mean()
    x = np.random.default_rng(3).standard_normal((8, 64))
    h = np.linspace(1.0, 0.0, 33)
    f = kfuse.jit(smooth)
    assert_matches_numpy(f(x, h), smooth(x, h), reductions=True)
    text = str(kfuse.explain(smooth, x, h))     # the complex product between the FFTs is fused
    assert "graph break: np.fft.rfft at test_library_breaks.py" in text
    assert "library call (numpy.fft.rfft)" in text and "library call (numpy.fft.irfft)" in text
    assert "3 fused segment(s), 2 graph break(s)" in text


def test_fullgraph_refuses_the_library_call():
    f = kfuse.jit(norm_sort_softmax, fullgraph=True)
    with pytest.raises(kfuse.UnsupportedError, match=r"np\.sort is not supported.*test_library_breaks\.py"):
        f(_data())
    with pytest.raises(kfuse.UnsupportedError, match=r"np\.sort"):
        kfuse.explain(f, _data())


def test_library_breaks_only_replay_without_running_python():
    ran = []

    def f(x, y):
        ran.append(1)                               # a Python side effect: runs while recording only
        s = np.sort(x * 2.0, axis=-1)
        y.sort()                                    # the caller's array, sorted in place
        return np.exp(s - s.max(axis=-1, keepdims=True)) + np.argsort(s[:, ::-1], axis=-1)
    jf = kfuse.jit(f)
    for seed in range(4):                           # new values each call: the tape computes them
        x, y = _data(seed).astype(np.float64), _data(seed + 10)[0]
        ex, ey = x.copy(), y.copy()
        want = f(ex, ey)
        assert_matches_numpy(jf(x, y), want)
        np.testing.assert_array_equal(y, ey)
    assert len(ran) == 4 + 2            # NumPy's 4, the whole-function trace and the recorded call


def test_a_value_break_runs_the_python_every_call():
    ran = []

    def f(x):
        ran.append(1)
        s = np.sort(x, axis=-1)
        return s * 2 if s[:, -1].sum() > 0 else s
    jf = kfuse.jit(f)
    for seed in range(3):
        assert_matches_numpy(jf(_data(seed)), f(_data(seed)))
    assert len(ran) == 3 + 1 + 3        # NumPy's 3, the whole-function trace, each call
