"""The distributions built on the random bits (``trace/random.py``), checked as distributions, not
bit for bit against NumPy: Kolmogorov-Smirnov distances of uniform and normal samples, their
moments within 4 standard errors, a chi-square of integer counts."""
import numpy as np
import pytest

import kfuse
from backends import to_device, to_host
from rand_helpers import ks_limit, ks_statistic, normal_cdf

N = 200_000


def _draws(x, rng):
    return (np.random.rand(*x.shape), rng.random(x.shape, dtype=np.float32), np.random.randn(*x.shape),
            rng.standard_normal(x.shape, dtype=np.float32), rng.normal(3.0, 0.5, size=x.shape),
            rng.uniform(-2.0, 6.0, size=x.shape), rng.integers(-3, 7, size=x.shape))


@pytest.fixture(scope="module")
def _cache():
    return {}


def _samples(backend, cache):
    if backend not in cache:
        (x,) = to_device(backend, np.zeros((N // 500, 500), np.float32))
        cache[backend] = to_host(kfuse.jit(_draws, backend=backend)(x, np.random.default_rng(2026)))
    return cache[backend]


def _moments(s, mean, var):
    s = np.asarray(s, np.float64).ravel()
    n = s.size
    assert abs(s.mean() - mean) < 4 * np.sqrt(var / n)
    assert abs(s.var() - var) < 4 * var * np.sqrt(2.0 / n) * 1.1     # normal-theory SE of a variance


def test_uniform(backend, _cache):
    u64, u32, _, _, _, u, _ = _samples(backend, _cache)
    assert u64.dtype == np.float64 and u32.dtype == np.float32
    for s in (u64, u32):
        assert s.min() >= 0 and s.max() < 1
        assert ks_statistic(s, lambda t: t) < ks_limit(s.size)
    assert ks_statistic(u, lambda t: (t + 2.0) / 8.0) < ks_limit(u.size)
    _moments(u64, 0.5, 1 / 12)


def test_normal(backend, _cache):
    _, _, z64, z32, z, _, _ = _samples(backend, _cache)
    assert z64.dtype == np.float64 and z32.dtype == np.float32 and np.isfinite(z64).all()
    for s in (z64, z32):
        assert ks_statistic(s, normal_cdf) < ks_limit(s.size)
        _moments(s, 0.0, 1.0)
    _moments(z, 3.0, 0.25)
    assert ks_statistic((z - 3.0) / 0.5, normal_cdf) < ks_limit(z.size)


def test_integers_chi_square(backend, _cache):
    i = _samples(backend, _cache)[-1]
    assert i.dtype == np.int64 and i.min() >= -3 and i.max() <= 6
    counts = np.bincount((i + 3).ravel(), minlength=10)
    expected = i.size / 10
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 33.7        # 9 degrees of freedom: exceeded with probability 1e-4
