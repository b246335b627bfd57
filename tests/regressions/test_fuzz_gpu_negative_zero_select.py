"""Found by `kfuse fuzz --seed 43 --backend numba-cuda` (program 1602, H100 2026-11-25):
``maximum(bool.astype(float32), -0.0)`` gave +0.0 where NumPy gives -0.0. NVVM folds it into
``selp.f32 d, 1.0, -0.0, p`` and ptxas compiles that select as ``FSET.BF`` (1.0 or +0.0); a
``where`` between the constants 1.0 (or -1.0) and -0.0 reached the same select on the CUDA C
backend too. The CUDA C backend now reads -0.0 from constant memory and the Numba-CUDA backend
selects it bitwise; the PTX is checked without a GPU by
``tests/codegen/test_negative_zero_select_ptx.py`` (docs/FUZZING.md bug 26)."""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

pytestmark = pytest.mark.gpu


def fuzz_fn(a0, a1):
    v0 = (a1 < a0)
    v1 = v0.astype(np.float32)
    return np.maximum(v1, (-0.0))


def where_constants(x):
    return (np.where(x < 2, np.float32(1.0), np.float32(-0.0)),
            np.where(x < 2, np.float32(-1.0), np.float32(-0.0)),
            np.where(x < 2, -0.0, 1.0),
            np.minimum(-(x < 2).astype(np.float32), -0.0))


@pytest.mark.parametrize("backend", ["cuda", "numba-cuda"])
@pytest.mark.parametrize("fn, args", [
    (fuzz_fn, [np.array(2, np.uint16),
               np.array([-0.75, -0.604, 3.5, 15.87, 3.0, -2.31], np.float16).reshape(3, 2)]),
    (where_constants, [np.linspace(-4, 4, 1000, dtype=np.float32)]),
])
def test_fuzz_gpu_negative_zero_select(fn, args, backend, cupy_for):
    cp = cupy_for(backend)
    expected = fn(*[a.copy() for a in args])
    actual = kfuse.jit(fn, backend=backend)(*[cp.asarray(a) for a in args])
    expected, actual = (expected, actual) if isinstance(expected, tuple) else ((expected,), (actual,))
    for a, e in zip(actual, expected):
        a = cp.asnumpy(a)
        assert_matches_numpy(a, e)
        np.testing.assert_array_equal(np.signbit(a), np.signbit(e))      # -0.0 stays -0.0
