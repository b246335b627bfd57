"""Found by `kfuse fuzz --seed 903` (program 317, backend cpu): ``a % a.prod(axis=0, where=a > 0)``
in int64 gave ``1 % -4 == 1`` where NumPy gives -3. The product of the positive terms wrapped to
-4; Numba's ``acc *= v`` carries LLVM's ``nsw`` flag (signed overflow undefined), so LLVM took the
product of positive values as positive and dropped the remainder's sign fix-up. Integer sum and
prod accumulators now combine in uint64 (kfuse/codegen/cpu.py ``acc_lines``, and numba-cuda's
``combine``, which Numba compiles the same way)."""
import numpy as np
import pytest

import kfuse

A = np.array([1, 1, 1, 1, 1, -2, -3, 2, 6, 9223372036854775806], dtype=np.int64).reshape((5, 2))


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu),
                                     pytest.param("numba-cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("fn", [
    lambda a: a % a.prod(axis=0, where=(a > 0)),
    lambda a: a.prod(axis=0, where=(a > 0)) < 0,
    lambda a: (a.sum(axis=0, where=(a > 0)) + np.int64(2 ** 62)) < 0,
])
def test_integer_accumulators_wrap_like_numpy(fn, backend, cupy_for):
    with np.errstate(all="ignore"):
        want = fn(A)
    if backend == "cpu":
        got = kfuse.jit(fn, backend="cpu")(A)
    else:
        cp = cupy_for(backend)
        got = cp.asnumpy(kfuse.jit(fn, backend=backend)(cp.asarray(A)))
    np.testing.assert_array_equal(got, want)
