"""Found by `kfuse fuzz --seed 32` on the CUDA backend (H200, 2026-11-24), programs 1191, 9555 and
9697 (the first on the GPUs only, the other two on every backend):

* #1191 ``np.float_power(3, 1) >= 3.0`` was False on the GPU: CUDA's and libdevice's pow are
  within 2 ulp and gave 3.0 ** 1.0 below 3.0, where NumPy's libm gives exact powers exactly. Fix
  (kfuse/codegen/cuda_ops.py kf_pow, numba_cuda_ops.py _fpow_*): x ** 1 and x ** 2 are x and x * x.
* #9555 ``x.clip(0, None)`` kept -0.0 where NumPy gives +0.0: with one bound NumPy calls
  ``np.maximum(x, 0)`` (ties give the second operand); kfuse ordered the operands as for two bounds.
  Fix (kfuse/trace/elementwise.py clip).
* #9697 ``x.any() ** 2`` was int8 where NumPy gives int64: NumPy's reduction returns a scalar,
  which takes no ndarray ``__pow__`` fast path (np.square of bool is int8). Fix
  (kfuse/trace/tracer.py _pow, _numpy_scalar)."""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy


def float_power_ge(a0, a1):
    return np.float_power(a1, a0) >= 3.0, np.float_power(a1, a0 + 1), np.power(a1.astype(np.float32), a0 * 2)


def clip_one_bound(x):
    return x.clip(0, None), np.clip(x, None, 0), x.clip(min=0), np.clip(x, -1, 0), x.astype(np.float16).clip(0)


def scalar_power(a):
    return a.any() ** 2, (a.sum() > 0) ** 2, a ** 2, a.astype(np.float32).max() ** 0.5


CASES = [
    (float_power_ge, lambda: [np.array(1, np.int16), np.array([3, 5, -7, 0], np.int16)]),
    (clip_one_bound, lambda: [np.array([1.0, -0.0, 0.0, -2.0, np.nan], np.float32)]),
    (scalar_power, lambda: [np.array([True, False])]),
]


def _check(backend, xp=np, to_host=np.asarray):
    for fn, make in CASES:
        args = make()
        with np.errstate(all="ignore"):
            expected = fn(*args)
        actual = kfuse.jit(fn, backend=backend)(*[xp.asarray(a) for a in args])
        for a, e in zip(actual, expected):
            a, e = to_host(a), np.asarray(e)
            assert a.dtype == e.dtype, (fn.__name__, a.dtype, e.dtype)
            assert_matches_numpy(a, e)
            if e.dtype.kind == "f":
                np.testing.assert_array_equal(np.signbit(a), np.signbit(e))    # zeros keep NumPy's sign
            if e.dtype.kind in "fb":
                np.testing.assert_array_equal(a, e)      # exact: powers 1 and 2, comparisons, clips


def test_cpu():
    _check("cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "numba-cuda"])
def test_gpu(backend, cupy_for):
    cupy = cupy_for(backend)
    _check(backend, cupy, cupy.asnumpy)
