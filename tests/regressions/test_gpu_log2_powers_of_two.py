"""np.log2 of a float64 power of two is an exact integer, as NumPy's libm gives it: CUDA's and
libdevice's double log2 were 1 ulp off at 362 of the 2098 powers of two (log2(8.0) = 3 - 4e-16,
found by cuda fuzz seed 49 #6525 through np.fmod(np.log2(x), 3); a probe at commit 1e78006,
H200 2026-11-25), so ``np.log2(n).astype(int)`` was one short. Both GPU backends now round a result
within an ulp of an integer k to k where 2**k == x. The codegen rows run without a GPU."""
import numpy as np
import pytest

import kfuse
from tests.codegen.ptx_backends import compile_to_ptx

POWERS = np.ldexp(1.0, np.arange(-1074, 1024))


def log2(x):
    return np.log2(x)


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
def test_float64_log2_goes_through_the_exact_helper(backend, tmp_path):
    src = compile_to_ptx(log2, backend, ("f64[64]",), tmp_path, "log2")
    assert ("kf_log2d(" if backend == "cuda" else "_log2_float64(") in src


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "numba-cuda"])
def test_float64_log2_of_powers_of_two_is_exact(backend, cupy_for):
    cp = cupy_for(backend)
    x = np.concatenate([POWERS, [3.0, 10.0, 0.1, 1e300, 5e-324 * 3, 0.0, -0.0, -8.0, np.inf, np.nan]])
    got = cp.asnumpy(kfuse.jit(log2, backend=backend)(cp.asarray(x)))
    want = np.log2(x)
    np.testing.assert_array_equal(got[:len(POWERS)], np.arange(-1074, 1024, dtype=np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-15)        # the rest: within libdevice's ulp; -inf, nan
