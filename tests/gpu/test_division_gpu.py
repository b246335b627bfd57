"""float32 division on the GPU equals NumPy's bit for bit where the CUDA emitter divides through
a float64 reciprocal (a constant divisor in any kernel; a row-level divisor in a row kernel:
``tests/gpu/test_jit_gpu.py::test_row_level_division_is_correctly_rounded``)."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

import kfuse  # noqa: E402

# divisors: Adam's bias corrections, a power of two, a denormal, near the float32 extremes,
# negative, and the ones the emitter leaves to the IEEE division (0, -0, inf, nan)
DIVISORS = (0.6513215599, 0.009955119790251765, 3.0, 0.1, 4.0, -7.25, 1e-45, 1e-38, 3e38, 1.0000001,
            0.0, -0.0, np.inf, np.nan)


def _dividends(n=1 << 16):
    rng = np.random.default_rng(11)
    x = rng.standard_normal(n).astype(np.float32)
    x *= (2.0 ** rng.integers(-149, 127, size=n)).astype(np.float32)
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -3.4028235e38, 1.0]
    x[8:4096] = rng.integers(1, 1 << 24, size=4088).astype(np.float32)   # exact integers: ties
    return x


@pytest.mark.parametrize("c", DIVISORS)
def test_division_by_a_constant_is_correctly_rounded(c):
    c32 = np.float32(c)
    x = _dividends()
    f = kfuse.jit(lambda x: (x / c32, (x - 1) / c32))
    got = [cp.asnumpy(o) for o in f(cp.asarray(x))]
    with np.errstate(all="ignore"):
        want = [x / c32, (x - np.float32(1)) / c32]
    for g, w in zip(got, want):
        same = (g.view(np.uint32) == w.view(np.uint32)) | (np.isnan(g) & np.isnan(w))
        assert same.all(), (c, np.argwhere(~same)[:5], x[~same][:5], g[~same][:5], w[~same][:5])
