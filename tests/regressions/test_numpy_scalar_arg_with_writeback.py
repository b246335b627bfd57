"""A function that writes into an argument, called with a NumPy scalar among its arguments, raised
AttributeError ('memoryview' object has no attribute 'ptr'): the aliasing check between written
arguments took the scalar for an array (a NumPy scalar has a shape). Found 2026-11-25 while
testing scatters (``x[i] = 0`` with ``i`` an ``np.int64``)."""
import numpy as np

import kfuse


def test_numpy_scalar_argument_beside_a_written_array():
    def f(x, i):
        x[i] = 0.0
        x[[0, 1]] += i
        return x
    x = np.arange(12.0).reshape(3, 4)
    want = f(x.copy(), np.int64(2))
    got_x = x.copy()
    got = kfuse.jit(f, backend="cpu")(got_x, np.int64(2))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_x, want)
