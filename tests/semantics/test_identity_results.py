"""A result the function computed (``x * 1.0``, ``x + 0``, ``x.astype(x.dtype)``) that the
optimizer reduces to an argument itself is still a new array, as NumPy's: the caller's argument is
not returned, and a later write into the argument in the same function (``np.add.at``) does not
show in it. ``return x`` is the argument itself, as in NumPy."""
import numpy as np

import kfuse


def identities(x):
    return x * 1.0, x + 0.0, x.astype(x.dtype)


def written_after(x):
    before = x * 1.0
    np.add.at(x, [0, 0], 5.0)
    return before, x + 0.0


def test_identity_results_are_new_arrays(backend, cupy_for):
    x = np.arange(6.0).reshape(2, 3)
    f = kfuse.jit(identities, backend=backend)
    xp_x = x if backend == "cpu" else cupy_for(backend).asarray(x)
    for _ in range(2):                              # the second call takes the cached entry
        got = f(xp_x)
        for g in got:
            assert g is not xp_x
            assert not np.shares_memory(g, x) if backend == "cpu" else g.data.ptr != xp_x.data.ptr
            assert (g if backend == "cpu" else g.get()).tolist() == x.tolist()
        got[0][0, 0] = 42.0                         # the caller's array is untouched
        assert float(xp_x[0, 0]) == 0.0
    assert kfuse.jit(lambda x: x, backend=backend)(xp_x) is xp_x


def test_a_later_write_does_not_show_in_an_earlier_result(backend, cupy_for):
    x = np.arange(4.0)
    want_before, want_after = written_after(x.copy())
    f = kfuse.jit(written_after, backend=backend)
    for _ in range(2):
        arg = x.copy() if backend == "cpu" else cupy_for(backend).asarray(x)
        before, after = f(arg)
        back = (lambda a: a) if backend == "cpu" else (lambda a: a.get())
        assert back(before).tolist() == want_before.tolist()
        assert back(after).tolist() == want_after.tolist()
        assert back(arg).tolist() == want_after.tolist()        # the argument written, as NumPy's
