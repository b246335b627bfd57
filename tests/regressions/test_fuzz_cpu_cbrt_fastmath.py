"""Found by `kfuse fuzz --seed 905` (program 133, backend cpu; docs/FUZZING.md 36, older than the
scan kind that drew it): ``np.where(np.isinf(np.cbrt(a)), 1.0, 2.0)`` gave 2.0 at a=inf where
NumPy gives 1.0. Numba's own ``np.cbrt`` is compiled with ``fastmath=True``; inlined, LLVM took its
result for finite and folded the later ``isinf``/``isfinite``. The CPU emitter now calls ``_cbrt``
(kfuse/codegen/cpu_helpers.py), which passes NaN, +-inf and +-0.0 through (-0.0's sign too)."""
import numpy as np
import pytest

import kfuse


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize("fn", [
    lambda a: np.where(np.isinf(np.cbrt(a)), 1.0, 2.0),
    lambda a: np.isfinite(np.cbrt(a)) | np.signbit(np.cbrt(a)),
    lambda a: np.clip(np.where(np.isfinite(np.cbrt(a)), np.cbrt(a), 0), 0.0, 2 ** 31).astype(np.uint32),
])
def test_cbrt_keeps_infinities_and_signed_zeros(fn, dtype):
    a = np.array([np.inf, -np.inf, 8.0, -0.0, 0.0, np.nan, -27.0], dtype=dtype)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(kfuse.jit(fn, backend="cpu")(a), fn(a))
