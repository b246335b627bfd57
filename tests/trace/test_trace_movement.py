"""Movement ops and indexing against NumPy (shapes, dtypes and values)."""
import numpy as np
import pytest

from trace_checks import check, rand


def test_reshape_family():
    x = rand((2, 3, 4), "f4")
    for f in (lambda a: a.reshape(6, 4), lambda a: a.reshape((4, -1)), lambda a: np.reshape(a, -1),
              lambda a: a.reshape(24), lambda a: np.ravel(a), lambda a: a.flatten(),
              lambda a: a.reshape(2, 3, 4), lambda a: np.reshape(a, (1, 24, 1)),
              lambda a: a.reshape(5, -1), lambda a: a.reshape(-1, -1)):
        check(f, x)
    check(lambda a: a.reshape(0, 5), rand((3, 0), "i4"))
    check(lambda a: a.reshape(()), rand((1, 1), "i4"))


def test_transpose_family():
    x = rand((2, 3, 4), "i2")
    for f in (lambda a: a.T, lambda a: a.transpose(), lambda a: a.transpose(1, 0, 2),
              lambda a: np.transpose(a, (2, 0, 1)), lambda a: np.swapaxes(a, 0, -1),
              lambda a: a.swapaxes(1, 2), lambda a: np.moveaxis(a, 0, -1),
              lambda a: np.moveaxis(a, [0, 1], [-1, -2]), lambda a: a.mT,
              lambda a: np.transpose(a, (0, 1))):
        check(f, x)
    check(lambda a: a.T, rand((), "f4"))
    check(lambda a: a.T + 1, rand((5,), "f4"))


def test_expand_squeeze_broadcast():
    x = rand((3, 1, 4), "u1")
    for f in (lambda a: np.expand_dims(a, 0), lambda a: np.expand_dims(a, -1),
              lambda a: np.expand_dims(a, (0, 2)), lambda a: np.squeeze(a),
              lambda a: a.squeeze(1), lambda a: a.squeeze(0),
              lambda a: np.broadcast_to(a, (2, 3, 5, 4)), lambda a: np.broadcast_to(a, (3, 2, 4)),
              lambda a: np.broadcast_arrays(a, np.zeros_like(a[:1, :, :1]))[1],
              lambda a: np.atleast_3d(a[0, 0]), lambda a: np.atleast_2d(a[0, 0])):
        check(f, x)


@pytest.mark.parametrize("key", [
    0, -1, 2, (1, 2), (-1, -3), slice(None), slice(1, None), slice(None, None, 2),
    slice(None, None, -1), slice(-2, 0, -1), slice(5, 10), slice(None, None, -3),
    (slice(None), 1), (Ellipsis, 0), (None, 0), (0, None, slice(1, 3)), (Ellipsis, None),
    (slice(1, 3), Ellipsis, slice(None, None, -2)), np.newaxis, (1, 2, 3), np.int64(1),
    (slice(3, 1), 0), (Ellipsis,)], ids=repr)
def test_getitem(key):
    x = rand((4, 5, 6), "f4")
    check(lambda a: a[key], x)


def test_getitem_errors_like_numpy():
    x = rand((4, 5), "f4")
    for key in (4, -5, (0, 0, 0), (0, 9)):
        check(lambda a: a[key], x)  # IndexError from both


def test_iteration_and_len():
    x = rand((3, 2), "f8")
    check(lambda a: tuple(r * 2 for r in a), x)
    check(lambda a: a * len(a), x)
    check(lambda a: (a.shape[0] * a, a.ndim + a, a.size - a), x)
    check(lambda a: a[np.shape(a)[0] - 1] + np.ndim(a) + np.size(a), x)
