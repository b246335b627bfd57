"""N-D np.dot, np.inner, np.tensordot, np.einsum and the NumPy 2 gufuncs np.vecdot / np.matvec /
np.vecmat through ``kfuse.jit`` end to end (plan, generated kernels, launch) on every backend,
against NumPy: the contracted axes are permuted and flattened into one matmul (or, for einsum
without a matrix product, a broadcast multiply and a sum), the result reshaped back."""
import numpy as np
import pytest

import kfuse
from tolerance import assert_matches_numpy


# (function, shape of a, shape of b)
CASES = [
    (lambda a, b: np.dot(a, b), (4, 6, 16), (3, 16, 5)),
    (lambda a, b: np.dot(a, b) * 2 + 1, (33, 17), (4, 17, 9)),      # an epilogue after the matmul
    (lambda a, b: np.inner(np.tanh(a), b), (5, 7, 24), (6, 24)),      # a prologue before it
    (lambda a, b: np.tensordot(a, b, ([0, 2], [2, 0])), (8, 3, 10), (10, 5, 8)),
    (lambda a, b: np.tensordot(a.T, b, 1), (12, 7), (12, 40)),
    (lambda a, b: np.vecdot(a, b), (64, 32), (32,)),
    (lambda a, b: np.matvec(a, b), (3, 20, 30), (30,)),
    (lambda a, b: np.vecmat(a, b), (2, 1, 30), (30, 20)),
    (lambda a, b: np.einsum("bhqd,bhkd->bhqk", a, b), (2, 3, 16, 8), (2, 3, 12, 8)),   # attention scores
    (lambda a, b: np.einsum("ij,ij->i", a, b), (40, 33), (40, 33)),                      # row dots: multiply + sum
    (lambda a, b: np.einsum("ii,ij->j", a, b) + 1, (9, 9), (9, 7)),                      # a diagonal, then a product
    (lambda a, b: np.einsum("i...,j...->ij...", a, b), (3, 5), (4, 1)),                  # outer, broadcast dims
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("i", range(len(CASES)))
@pytest.mark.backends("cpu", "cuda")
def test_contraction_matches_numpy(backend, i, dtype, cupy_for):
    fn, sa, sb = CASES[i]
    rng = np.random.default_rng(i)
    a, b = (rng.integers(-5, 6, s).astype(dtype) if dtype == "int32" else
            rng.standard_normal(s).astype(dtype) for s in (sa, sb))
    want = fn(a, b)
    if backend == "cpu":
        got = kfuse.jit(fn)(a, b)
    else:
        cp = cupy_for(backend)
        got = cp.asnumpy(kfuse.jit(fn)(cp.asarray(a), cp.asarray(b)))
    assert_matches_numpy(got, want, reductions=True)
    if want.dtype.kind in "iu":      # integer sums are exact
        np.testing.assert_array_equal(got, want)
