"""np.log2 / np.exp2 of a float64 and of a float32 value in one CPU kernel: Numba declared the C
function once per module with the first argument type, so the kernel failed to compile
("Type of #1 arg mismatch: double != float"). Found with issue 35's trace tests."""
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy


@pytest.mark.parametrize("fn", [np.log2, np.exp2])
def test_float64_and_float32_in_one_kernel(fn):
    def f(b, a):
        return fn(b) + a, fn(a)

    a = np.linspace(0.5, 4, 7, dtype=np.float32)
    b = np.float64(3.0)
    got = kfuse.jit(f, backend="cpu")(b, a)
    want = f(b, a)
    for g, w in zip(got, want):
        assert_matches_numpy(g, w)     # dtype and shape exactly, values by the tolerance table
