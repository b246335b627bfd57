"""Dropout written with ``np.random`` on every backend: fresh masks every call (the frozen
behaviour, a mask drawn once at trace time, fails here), the keep rate within 3 standard errors
of p over 10^7 draws, the same seed giving the same values, and the kernels' values equal to the
reference interpreter's Philox (``trace/reference.py``)."""
import numpy as np
import pytest

import kfuse
from backends import to_device, to_host
from rand_helpers import next_global_seed, reference


def dropout(x, p):
    return np.where(np.random.rand(*x.shape) < p, x / p, 0)


def test_fresh_mask_every_call(backend):
    x = np.ones((257, 131), np.float32)
    f = kfuse.jit(dropout, backend=backend)
    (xd,) = to_device(backend, x)
    masks = [to_host(f(xd, 0.5)) != 0 for _ in range(3)]
    assert f.compile_count == 1
    for a, b in ((0, 1), (1, 2), (0, 2)):
        assert (masks[a] != masks[b]).mean() > 0.3     # independent masks differ in about half


def test_keep_rate_within_three_standard_errors(backend):
    p, n = 0.3, 10 ** 7
    x = np.ones((2500, 4000), np.float32)
    (xd,) = to_device(backend, x)
    y = to_host(kfuse.jit(dropout, backend=backend)(xd, p))
    keep = float(np.count_nonzero(y)) / n
    assert abs(keep - p) < 3 * np.sqrt(p * (1 - p) / n), keep
    assert np.allclose(y[y != 0], 1 / np.float32(p))


def test_same_seed_same_values_and_the_reference_philox(backend):
    x = np.random.default_rng(1).standard_normal((37, 53))
    f = kfuse.jit(dropout, backend=backend)
    (xd,) = to_device(backend, x)
    np.random.seed(123)
    a = to_host(f(xd, 0.6))
    np.random.seed(123)
    b = to_host(f(xd, 0.6))
    np.testing.assert_array_equal(a, b)
    (want,) = reference(f.trace(x, 0.6), {"x": x, "p": 0.6}, {"": next_global_seed(123)})
    np.testing.assert_array_equal(a, want)


def test_generator_argument_seeds_and_advances(backend):
    def noisy(x, rng):
        return x + rng.normal(0.0, 2.0, size=x.shape), rng.integers(-3, 9, size=x.shape[0])
    x = np.zeros((64, 33))
    f = kfuse.jit(noisy, backend=backend)
    (xd,) = to_device(backend, x)
    a1, i1 = to_host(f(xd, np.random.default_rng(7)))
    a2, i2 = to_host(f(xd, np.random.default_rng(7)))
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(i1, i2)
    rng = np.random.default_rng(7)
    b1, _ = to_host(f(xd, rng))
    b2, _ = to_host(f(xd, rng))         # the generator advanced: fresh values
    assert (b1 != b2).mean() > 0.99
    assert f.compile_count == 1         # a Generator is keyed by its type
    seed = np.random.default_rng(7).integers(0, 2 ** 64, dtype=np.uint64)
    want_a, want_i = reference(f.trace(x, np.random.default_rng(7)), {"x": x}, {"rng": seed})
    np.testing.assert_allclose(a1, want_a, rtol=1e-12, atol=1e-12)     # log/cos: libm's or CUDA's
    np.testing.assert_array_equal(i1, want_i)
    assert i1.dtype == np.int64 and i1.min() >= -3 and i1.max() < 9


@pytest.mark.gpu
def test_capture_refuses_random_ops(cupy_for):
    """A CUDA graph would replay the captured call's mask forever: refused, not frozen."""
    cp = cupy_for("cuda")
    f = kfuse.jit(dropout, backend="cuda")
    x = cp.ones((64, 64), cp.float32)
    with pytest.raises(kfuse.UnsupportedError, match="capture"):
        kfuse.capture(lambda a: f(a, 0.5), x)
