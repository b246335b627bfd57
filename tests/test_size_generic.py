"""A new size of a jitted function built from a size-generic trace (``kfuse.size_generic``):
results equal NumPy's at every size, a function whose trace reads a size (branches on
``x.shape[0]``, computes with ``x.shape[-1]`` or ``len(x)``) is traced again at every new size,
a size-clamping op (a slice) keeps it traced, and a size of the same shape class and pattern of
equal dims is not traced again (``retrace_count``/``untraced_count`` say so)."""
import numpy as np
import pytest

import kfuse
from kfuse.bench.workloads import make_p2, make_p3

RNG = np.random.default_rng(0)


def _rand(*shape):
    return RNG.random(shape).astype(np.float32)


def _check(jf, fn, *args):
    got, want = jf(*args), fn(*args)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


softmax = make_p2(np)            # the public suite's bodies (kfuse/bench/workloads.py)
layernorm = make_p3(np)


def test_new_sizes_not_traced_again():
    jf = kfuse.jit(softmax)
    _check(jf, softmax, _rand(7, 9))
    retraces = jf.retrace_count             # (the probe trace that made it size-generic)
    for r, c in [(3, 5), (40, 17), (9, 31), (600, 2), (2, 3)]:
        _check(jf, softmax, _rand(r, c))
    assert jf.retrace_count == retraces
    assert jf.untraced_count == 5
    assert jf.compile_count == 1
    assert "not traced" in jf.last_build


def test_mean_count_follows_the_sizes():
    jf = kfuse.jit(layernorm)
    for r, c in [(4, 6), (5, 11), (30, 7), (2, 300)]:
        _check(jf, layernorm, _rand(r, c), _rand(c), _rand(c))
    assert jf.untraced_count == 3


def test_branch_on_shape_is_traced_per_size():
    def f(x):
        if x.shape[0] > 8:
            return x * 2.0
        return x - 1.0
    jf = kfuse.jit(f)
    for r, c in [(4, 5), (12, 5), (6, 7), (20, 3), (3, 3)]:
        _check(jf, f, _rand(r, c))
    assert jf.untraced_count == 0
    assert jf.retrace_count == 4


def test_shape_as_python_number():
    def f(x):
        return x.sum(axis=-1) / x.shape[-1] + float(x.shape[0])
    jf = kfuse.jit(f)
    for r, c in [(4, 5), (9, 6), (3, 17), (25, 2)]:
        _check(jf, f, _rand(r, c))
    assert jf.untraced_count == 0


def test_len_and_size_are_reads():
    def f(x):
        return x * len(x) + x.size
    jf = kfuse.jit(f)
    for r, c in [(4, 5), (9, 6), (3, 17)]:
        _check(jf, f, _rand(r, c))
    assert jf.untraced_count == 0


def test_slice_clamp_stays_traced():
    def f(x):
        return x[:, :4] * 2.0
    jf = kfuse.jit(f)
    for r, c in [(5, 9), (6, 11), (7, 3), (8, 2)]:
        _check(jf, f, _rand(r, c))
    assert jf.untraced_count == 0


def test_broadcast_pattern_changes():
    def f(x, b):
        return x * b + 1.0
    jf = kfuse.jit(f)
    cases = [((5, 7), (7,)), ((6, 9), (9,)), ((5, 7), (1, 7)), ((8, 3), (1, 3)), ((5, 7), (5, 1)),
             ((9, 4), (9, 1)), ((1, 7), (5, 7)), ((1, 2), (6, 2)), ((5, 1), (1, 6)), ((7, 1), (1, 3))]
    for xs, bs in cases:
        _check(jf, f, _rand(*xs), _rand(*bs))
    assert jf.untraced_count >= 4           # the second size of each pattern


def test_equal_dims_pattern_is_kept():
    def f(x):
        return x + x.T
    jf = kfuse.jit(f)
    _check(jf, f, _rand(5, 5))
    _check(jf, f, _rand(7, 7))
    assert jf.untraced_count == 1
    with pytest.raises(ValueError):
        jf(_rand(6, 8))                     # NumPy's broadcast error, not the square trace
    with pytest.raises(ValueError):
        f(_rand(6, 8))


def test_mismatched_sizes_still_raise():
    def f(x, y):
        return x - y
    jf = kfuse.jit(f)
    _check(jf, f, _rand(4, 5), _rand(4, 5))
    _check(jf, f, _rand(6, 3), _rand(6, 3))
    assert jf.untraced_count == 1
    with pytest.raises(ValueError):
        jf(_rand(6, 3), _rand(7, 3))


def test_dims_of_zero_are_traced():
    jf = kfuse.jit(lambda x: (x * 2.0).sum(axis=0))
    for r, c in [(4, 5), (0, 5), (3, 0), (6, 2)]:
        x = _rand(r, c)
        np.testing.assert_allclose(jf(x), (x * 2.0).sum(axis=0), rtol=2e-6)


def test_full_slice_at_the_first_size_stays_traced():
    def f(x):
        return x[:, :4] * 2.0               # no slice at all on 2 columns: a size decided it
    jf = kfuse.jit(f)
    for r, c in [(3, 2), (5, 2), (6, 10), (4, 3)]:
        _check(jf, f, _rand(r, c))
    assert jf.untraced_count == 0


def test_reshape_stays_traced():
    def f(x):
        return x.reshape(-1) * 3.0
    jf = kfuse.jit(f)
    for r, c in [(3, 2), (5, 4), (6, 10)]:
        _check(jf, f, _rand(r, c))
    assert jf.untraced_count == 0
