"""Found by `kfuse fuzz --seed 51 --backend cuda` (program 894, H200 2026-11-25):
``np.arctan2(np.matvec(a, a), -2)`` of a (5, 1, 1) float64 array gave -pi where NumPy gives pi:
a matmul over K = 1 ran on cuBLAS, which returns a -0.0 product as -0.0, where NumPy's loop (and
BLAS) start the sum from +0.0 and give +0.0. A K = 1 matmul is now a broadcast multiply plus +0.0
(``fusion.simplify.outer``) on every backend: NumPy's zero signs, and no GEMM for an outer product."""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

CASES = [
    (lambda a: np.arctan2(np.matvec(a, a), -2), np.array([1.0, 1.0, -1.0, -3.5, 0.0]).reshape((5, 1, 1))),
    (lambda a: 1.0 / (a @ a.T), np.array([[-0.0], [2.0], [-3.0]], np.float32)),
    (lambda a: np.signbit(np.einsum("ij,kj->ik", a, a)), np.array([[-0.0], [1.0]], np.float16)),
]


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu),
                                     pytest.param("numba-cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("i", range(len(CASES)))
def test_outer_product_zeros_are_numpys(i, backend, cupy_for):
    fn, a = CASES[i]
    with np.errstate(all="ignore"):
        want = fn(a)
    if backend == "cpu":
        got = kfuse.jit(fn)(a)
    else:
        cp = cupy_for(backend)
        got = cp.asnumpy(kfuse.jit(fn, backend=backend)(cp.asarray(a)))
    assert_matches_numpy(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
