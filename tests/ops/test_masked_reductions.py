"""Reductions with ``where=`` and ``initial=`` through ``kfuse.jit`` on every backend against NumPy:
the mask becomes a select of the identity (or initial) in the reduction's prologue, masked
mean/var/std divide by the mask's count, and row kernels (softmax-like, layernorm-like) take them."""
import numpy as np
import pytest

import kfuse
from tolerance import assert_matches_numpy


def masked_stats(x, m):
    mu = np.mean(x, axis=-1, keepdims=True, where=m)
    sd = np.std(x, axis=-1, keepdims=True, where=m)
    top = np.max(x, axis=-1, initial=-np.inf, where=m)
    return (x - mu) / (sd + 1e-5), top, np.sum(x * x, axis=0, where=m, initial=1.0), np.any(x > 2, axis=1, where=m)


@pytest.mark.parametrize("shape", [(7, 33), (64, 1024), (3, 0)])
def test_masked_reductions_match_numpy(backend, shape, cupy_for):
    rng = np.random.default_rng(shape[0])
    x = rng.standard_normal(shape).astype(np.float32)
    m = rng.random(shape) < 0.6
    with np.errstate(all="ignore"):
        want = masked_stats(x, m)
    f = kfuse.jit(masked_stats, backend=backend)
    if backend == "cpu":
        got = f(x, m)
    else:
        cp = cupy_for(backend)
        got = [cp.asnumpy(g) for g in f(cp.asarray(x), cp.asarray(m))]
    for g, w in zip(got, want):
        assert_matches_numpy(g, w, reductions=True)
