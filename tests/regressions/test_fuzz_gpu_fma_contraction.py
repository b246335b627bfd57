"""Found by `kfuse fuzz --seed 41 --backend cuda` (program 3720, H200 2026-11-25): with FMA
contraction, ptxas fused ``x * x`` into the subtraction of its own rounded value, so ``std`` of one
element came out > 0 (the rounding error of ``x * x``) and ``where`` took the wrong side (1 instead
of 65534). Both GPU backends now round each float op on its own (NVRTC ``--fmad=false``, NVVM
``-fma=0``); the PTX is checked without a GPU by ``tests/codegen/test_no_fma_contraction_ptx.py``."""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

pytestmark = pytest.mark.gpu


def fuzz_fn(a0, a1):
    v0 = np.square(a0)
    v1 = v0.std(keepdims=True)
    return np.where((v1 > 0), a1, (-2))


def rows_minus_mean(x, w):
    # rows of one or two equal products: the mean is the product in any order, p - mean(p) is 0
    p = x * w
    d = p - p.mean(axis=1, keepdims=True)
    return d, np.sqrt((d * d).mean(axis=1))


@pytest.mark.parametrize("backend", ["cuda", "numba-cuda"])
@pytest.mark.parametrize("fn, args", [
    (fuzz_fn, [np.array(64.64517489924327), np.array([1], np.uint16)]),
    (rows_minus_mean, [np.full((64, 2), 1.1, np.float32), np.full((2,), 3.3, np.float32)]),
    (rows_minus_mean, [np.full((8, 1), 0.7), np.full((1,), 1.3)]),
])
def test_fuzz_gpu_fma_contraction(fn, args, backend, cupy_for):
    cp = cupy_for(backend)
    with np.errstate(all="ignore"):
        expected = fn(*[a.copy() for a in args])
    actual = kfuse.jit(fn, backend=backend)(*[cp.asarray(a) for a in args])
    expected, actual = (expected, actual) if isinstance(expected, tuple) else ((expected,), (actual,))
    for a, e in zip(actual, expected):
        assert_matches_numpy(cp.asnumpy(a), e)
        np.testing.assert_array_equal(cp.asnumpy(a) == 0, e == 0)     # exact zeros stay exact
