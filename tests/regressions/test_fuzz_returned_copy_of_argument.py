"""Bug 45 (docs/FUZZING.md; cuda seed 81 #218 and #1370, on the CPU too, older than this session):
``v0 = a0.astype(np.float32)`` of a float32 argument (or ``a0.copy()``) returned the caller's array
itself: the traced value is the argument's node, so the output was the argument's buffer. A
later write into ``a0`` then showed in ``v0`` (-2.0 where NumPy gives 0.0), and a caller writing
into the result wrote into its argument. Such a value is now a ("copy", o) leaf of the return
structure, copied before any argument is written; the argument itself and views of it are still
returned as they are."""
import numpy as np
import pytest

import kfuse


def copy_then_write(a0):
    v0 = a0.astype(np.float32)
    v1 = a0
    v1[1] = 2.0
    v1[v1 < 1] -= np.float32(2)
    return v0


def copies_and_views(x):
    return x, x.copy(), np.copy(x), x[...], x.astype(x.dtype, copy=True)


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_a_returned_copy_keeps_the_old_value(backend, cupy_for):
    a = np.zeros((2, 4, 2), np.float32)
    a[1] = 1
    want_a = a.copy()
    want = copy_then_write(want_a)
    xp = np if backend == "cpu" else cupy_for(backend)
    got_a = xp.asarray(a.copy())
    got = kfuse.jit(copy_then_write, backend=backend)(got_a)
    host = np.asarray(got) if xp is np else xp.asnumpy(got)
    np.testing.assert_array_equal(host, want)
    np.testing.assert_array_equal(got_a if xp is np else xp.asnumpy(got_a), want_a)


def test_copies_are_new_arrays_and_the_argument_is_itself():
    x = np.arange(6.0).reshape(2, 3)
    same, c1, c2, view, c3 = kfuse.jit(copies_and_views)(x)
    assert same is x and np.shares_memory(view, x)
    for c in (c1, c2, c3):
        assert not np.shares_memory(c, x)
        np.testing.assert_array_equal(c, x)
