"""Bug 44 (docs/FUZZING.md; cpu seed 1802 #2257, the write kind into earlier values): a 0-d ufunc
or reduction result is a NumPy scalar in NumPy, so ``np.expand_dims(np.ceil(a0), 0)`` (a0 0-d) is a
new array, and writing into it leaves the scalar alone; kfuse linked it as a view and the write
changed the scalar (2.0 where NumPy gives 0.0). Views of a 0-d array argument still see writes."""
import numpy as np
import pytest

import kfuse


def fuzz_fn(a0):
    v0 = np.ceil(a0)
    v1 = np.expand_dims(v0, 0)
    v2 = v1
    v2[v2 < 1] += 2
    return v0


def scalar_views(a):
    s = a.sum()
    v = s[None]
    v += 1
    r = np.reshape(np.sqrt(a), (1, 1))
    r[0, 0] = -3
    w = np.reshape(a, (1,))             # a view of the 0-d array argument: writes reach it
    w += 5
    return s, v, r


@pytest.mark.parametrize("fn", [fuzz_fn, scalar_views])
def test_views_of_numpy_scalars_are_new_arrays(fn):
    a = np.array(0.0, np.float32)
    want_a, got_a = a.copy(), a.copy()
    want = fn(want_a)
    got = kfuse.jit(fn, backend="cpu")(got_a)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    np.testing.assert_array_equal(got_a, want_a)
