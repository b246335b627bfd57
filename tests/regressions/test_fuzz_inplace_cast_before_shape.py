"""Found by `kfuse fuzz --seed 710` (program 180, backend cpu): crash.

``v0[::3] -= a0`` with ``v0`` bool of shape (1, 5, 2) and ``a0`` float32 of shape (2, 5, 2): NumPy
raises UFuncTypeError (float32 into bool under same_kind) before it looks at the shapes; kfuse
raised the non-broadcastable-output ValueError first. kfuse now checks the cast first, as NumPy's
ufunc machinery does (type resolution before the iterator), and raises NumPy's own error.
"""
import numpy as np
import pytest

import kfuse


def fuzz_fn(a0, a1):
    v0 = a1.copy()
    v0[::3] -= a0
    return v0


def test_cast_error_comes_before_the_shape_error():
    a0 = np.arange(20, dtype=np.float32).reshape(2, 5, 2)
    a1 = (np.arange(20) < 10).reshape(2, 5, 2)
    with pytest.raises(TypeError) as numpy_info:
        fuzz_fn(a0, a1.copy())
    with pytest.raises(TypeError) as info:
        kfuse.jit(fuzz_fn)(a0, a1)
    assert type(info.value) is type(numpy_info.value)
    assert "same_kind" in str(info.value)
