"""Found by `kfuse fuzz --seed 11` (program 115, backend cpu): ``np.clip(np.square(int64), 0.5, 4.5)``
gave 4.5 where NumPy's wrapped square is negative (0.5). Numba emits signed integer add/sub/mul
with LLVM's ``nsw`` flag (overflow undefined), so LLVM inferred ``x*x >= 0`` and converted it with
``uitofp``. The CPU emitter (kfuse/codegen/cpu.py ``int_expr``) now does wrapping integer arithmetic
in uint64 and truncates to the result dtype."""
import numpy as np
import pytest

import kfuse

BIG = np.array([1872804010442342075, -7229197595727052057, 3, -5, np.iinfo(np.int64).min, 0],
               dtype=np.int64)


@pytest.mark.parametrize("fn", [
    lambda a: np.clip(np.square(a), 0.5, 4.5),
    lambda a: (a * a) < 0,
    lambda a: (a + np.int64(np.iinfo(np.int64).max)) < a,
    lambda a: np.abs(a) < 0,
    lambda a: -a > 0,
    lambda a: np.power(a, 3) >= 0,
])
def test_cpu_int64_wraps_like_numpy(fn):
    with np.errstate(all="ignore"):
        expected = fn(BIG)
    np.testing.assert_array_equal(kfuse.jit(fn, backend="cpu")(BIG), expected)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "numba-cuda"])
def test_gpu_int64_wraps_like_numpy(backend, cupy_for):
    cupy = cupy_for(backend)
    fn = lambda a: (np.clip(np.square(a), 0.5, 4.5), (a * a) < 0, np.abs(a) < 0,  # noqa: E731
                    np.power(a, 3) >= 0, -a > 0)
    with np.errstate(all="ignore"):
        expected = fn(BIG)
    for got, exp in zip(kfuse.jit(fn, backend=backend)(cupy.asarray(BIG)), expected):
        np.testing.assert_array_equal(cupy.asnumpy(got), exp)
