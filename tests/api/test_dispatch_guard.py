"""The hot call's guard (kfuse.dispatch_guard): calls with the last key run its entry's hot path
inline; any other argument (dtype, shape, strides, type, scalar type) misses and gets its own
entry, with NumPy's result."""
import numpy as np
import pytest

import kfuse
from kfuse.dispatch_guard import MISS, never


def _axpy(x, y, a):
    return x * a + y


def test_guard_hits_the_last_key_and_misses_every_other():
    f = kfuse.jit(_axpy, backend="cpu")
    rng = np.random.default_rng(0)
    x, y = rng.random((8, 6), dtype=np.float32), rng.random((8, 6), dtype=np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(f(x, y, 2.0), _axpy(x, y, 2.0))
    assert f._guard is not never and "RUN" not in f._guard.source
    assert f._guard((x, y, 3.0)) is not MISS        # the same key, another scalar value
    others = [
        (x.astype(np.float64), y, 2.0),             # dtype
        (x[:4], y[:4], 2.0),                        # shape
        (x[:, ::2], y[:, ::2], 2.0),                # strides
        (np.asfortranarray(x), y, 2.0),             # strides, same shape
        (x, y, 2),                                  # scalar type: int, not float
        (x, y, True),
        (x, y, np.float64(2.0)),
        (x, y, np.float32(2.0)),
        (x.tolist(), y, 2.0),                       # not an array
        (x, y),                                     # arity
    ]
    for args in others:
        assert f._guard(args) is MISS, args
    for args in others[:-1]:
        got, want = f(*args), _axpy(*(np.asarray(a) if isinstance(a, list) else a for a in args))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)
        f(x, y, 2.0)                                # back to the first key: its guard again
        assert f._guard((x, y, 2.0)) is not MISS


def test_no_guard_for_static_arguments():
    f = kfuse.jit(lambda x, n: x[:n] * 2, backend="cpu")
    x = np.arange(10.0)
    for n in (3, 3, 5, 5):
        np.testing.assert_array_equal(f(x, n), x[:n] * 2)
    assert f._guard is never


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_guarded_results_are_new_arrays(dtype):
    f = kfuse.jit(lambda x: x + 1, backend="cpu")
    x = np.arange(6, dtype=dtype)
    outs = [f(x) for _ in range(4)]
    assert len({id(o) for o in outs}) == 4 and all(o.dtype == dtype for o in outs)
    x[0] = 100                                      # earlier results do not alias the input
    assert all(o[0] == 1 for o in outs)
