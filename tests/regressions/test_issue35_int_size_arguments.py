"""Issue 35: a Python int argument used as a size (a slice bound ``x[:n]``, a reshape size, a window
length, ``range(n)``, ``np.zeros(n)``) is specialised on its value automatically, as
``torch.compile`` does, instead of raising UnsupportedError unless listed in ``static_argnames``;
an int used only in arithmetic stays a run-time scalar (one compile for every value)."""
import numpy as np
import pytest

import kfuse

CASES = {
    "slice": lambda x, n: x[:n] * 2,
    "window": lambda x, n: x[n:n + 2] - x[n - 1],
    "reshape": lambda x, n: x.reshape(n, -1).sum(axis=1),
    "arange": lambda x, n: x[:n] + np.arange(n),
    "zeros": lambda x, n: np.zeros(n) + x[:n],
    "range": lambda x, n: sum(x[i] for i in range(n)),
    "moving_sum": lambda x, n: np.stack([x[i:i + n] for i in range(len(x) - n + 1)]).sum(axis=1),
    "derived": lambda x, n: x[: n // 2 + 1],
}


@pytest.mark.parametrize("name", CASES)
def test_int_argument_used_as_a_size(name):
    f = CASES[name]
    jf = kfuse.jit(f, backend="cpu")
    x = np.arange(12.0)
    for n in (3, 4, 3, 6):
        got, want = jf(x, n), f(x, n)
        assert np.shape(got) == np.shape(want)
        np.testing.assert_array_equal(got, want)
    assert jf.compile_count == 3                 # one per distinct n


def test_int_argument_in_arithmetic_only_is_not_specialised():
    jf = kfuse.jit(lambda x, n: x * n + n // 3, backend="cpu")
    x = np.arange(5)
    for n in (1, 2, 7, -4):
        np.testing.assert_array_equal(jf(x, n), x * n + n // 3)
    assert jf.compile_count == 1


def test_keyword_and_nested_int_sizes():
    inner = kfuse.jit(lambda x, n: x[:n] + 1, backend="cpu")
    jf = kfuse.jit(lambda x, *, n: inner(x, n) * 2, backend="cpu")
    x = np.arange(6.0)
    np.testing.assert_array_equal(jf(x, n=2), (x[:2] + 1) * 2)
    np.testing.assert_array_equal(jf(x, n=4), (x[:4] + 1) * 2)


def test_a_size_without_a_value_names_the_argument():
    jf = kfuse.jit(lambda x, n: x[:n], backend="cpu")
    with pytest.raises(kfuse.UnsupportedError, match="int argument.* n "):
        jf.lower("f64[10]", "int")


def test_a_traced_array_value_as_a_size_is_still_refused():
    jf = kfuse.jit(lambda x: x[: x.argmax()], backend="cpu")
    with pytest.raises(kfuse.UnsupportedError):
        jf(np.arange(4.0))
