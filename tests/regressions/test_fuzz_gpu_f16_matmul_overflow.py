"""Found by `kfuse fuzz --seed 30` (program 1535, backend cuda; H200, 2026-11-24): a float16
product past float16's range is ``inf`` in NumPy (its float16 matmul rounds the float32 sum to
float16), so ``v - v`` is ``nan``; the generated fused GEMM applied the epilogue to the float32
accumulator (2985984.0, finite) and stored 0. Fix (kfuse/fusion/gemm_ir.py epilogue_from_group):
a float16 product is rounded to float16 before the epilogue reads it (on the cuBLAS path the
product is float16 already), the rest of the epilogue stays in float32."""
import numpy as np
import pytest

import kfuse


def fuzz_fn(a0, w):
    v0 = a0 @ np.swapaxes(a0, -1, -2)
    return np.subtract(v0, v0)


def scaled(a0, w):           # an epilogue with an input, for the cuBLAS + epilogue-kernel path too
    v0 = a0 @ np.swapaxes(a0, -1, -2)
    return v0 * np.float16(0.5) + w


def _inputs():
    a0 = np.array([1.0, 1.0, -1728.0, 1.5, -0.390625, -3.0, 6.0, 352.75, -np.inf, 2.5, np.nan, 2.0,
                   300.0, 300.0, -4.0, 0.25], dtype=np.float16).reshape((2, 4, 2))
    w = np.array([0.5, -1.0, 2.0, 65504.0], dtype=np.float16)
    return [a0, w]


def _check(backend, xp=np, to_host=lambda a: a):
    args = _inputs()
    for fn in (fuzz_fn, scaled):
        with np.errstate(all="ignore"):
            e = fn(*args)
        a = to_host(kfuse.jit(fn, backend=backend)(*[xp.asarray(x) for x in args]))
        assert a.dtype == e.dtype
        np.testing.assert_array_equal(np.isnan(a), np.isnan(e))     # NaN where NumPy's product overflowed
        np.testing.assert_array_equal(np.isinf(a), np.isinf(e))
        fin = np.isfinite(e)
        np.testing.assert_allclose(a[fin].astype(np.float32), e[fin].astype(np.float32), rtol=5e-3, atol=1e-3)


def test_cpu():
    _check("cpu")


@pytest.mark.gpu
def test_cuda(cupy_for):
    cupy = cupy_for("cuda")
    _check("cuda", cupy, cupy.asnumpy)
