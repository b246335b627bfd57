"""Bug 43 (docs/FUZZING.md; cpu seed 1802 #985): ``v[-1] = a * 2`` with ``a`` of shape (1,)
stored the one value where NumPy raises ``ValueError: setting an array element with a sequence.``
A key that names one element by an integer for every dim makes NumPy store a scalar, and an
array value of any shape (even (1,)) is refused; with a slice or an Ellipsis in the key, the value
broadcasts (leading length-1 dims dropped) as before. A bool element takes a one-element array's
truth (cuda seed 81 #494, #784, #1245: the first fix refused it) and a list's."""
import numpy as np
import pytest

import kfuse


def fuzz_fn(a0):
    v0 = np.zeros_like(a0)
    v0[-1] = a0 * 2
    v0[v0 < 1] -= 3
    return v0


def by_argument_index(x, i):
    x[i, 0] = np.ones(1)
    return x


def into_0d(s, v):
    s[()] = v
    return s


def broadcasts(x, v):
    x[0, :1] = v                    # a slice: (1, 1) into (1,)
    x[1] = v[0, 0]                  # a 0-d value into a row
    s = np.zeros_like(x, shape=())
    s[...] = v[0]                   # an Ellipsis: (1,) into ()
    return x, s


@pytest.mark.parametrize("fn, args", [
    (fuzz_fn, [np.array([0], np.uint8)]),
    (by_argument_index, [np.zeros((2, 3)), 1]),
    (into_0d, [np.zeros(()), np.ones(1)]),
])
def test_an_array_into_one_element_raises_as_numpy(fn, args):
    with pytest.raises(ValueError, match="setting an array element with a sequence"):
        fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    with pytest.raises(ValueError, match="setting an array element with a sequence") as e:
        kfuse.jit(fn, backend="cpu")(*args)
    assert "test_fuzz_one_element_gets_a_sequence.py" in str(e.value)     # the user's line


def test_slices_and_ellipsis_still_broadcast():
    x, v = np.zeros((2, 3)), np.full((1, 1), 7.0)
    got, want = kfuse.jit(broadcasts)(x.copy(), v), broadcasts(x.copy(), v)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert kfuse.jit(into_0d)(np.zeros(()), np.float64(2.5)) == 2.5     # a 0-d value is one element


def into_bool(a, b):
    v = a.copy()
    v[-1] = a * 2                       # a one-element int array into a bool element: its truth
    w = np.expand_dims(b, 0).copy()
    w[0] *= np.expand_dims(b, 0)
    v[0] = [0]                          # a list: its truth (non-empty: True), as NumPy's
    return v, w


def test_a_bool_element_takes_the_truth_of_one_value():
    a, b = np.array([True, False]), np.array(True)
    want = into_bool(a[-1:].copy(), b)
    got = kfuse.jit(into_bool, backend="cpu")(a[-1:].copy(), b)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    with pytest.raises(ValueError, match="setting an array element with a sequence"):
        kfuse.jit(into_bool, backend="cpu")(np.array([True, True]), b)    # two values: refused
