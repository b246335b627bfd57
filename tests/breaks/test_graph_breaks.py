"""Graph breaks (issue 35): a Python ``if`` on an array value, ``.item()``/``.tolist()``/``int()``,
an unsupported NumPy function or data-dependent shapes make the function run in fused segments
around eager code instead of refusing it; ``fullgraph=True`` keeps the refusal."""
import logging

import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

from backends import to_device, to_host


def branchy(x, y):
    z = x * 2.0 + y
    if z.sum() > 0:                 # the value decides which ops run next
        return np.tanh(z) * y
    return np.exp(-z) - 1.0


def test_if_on_a_value_follows_the_data_across_calls(backend, cupy_for):
    if backend != "cpu":
        cupy_for(backend)
    rng = np.random.default_rng(0)
    pos, neg = rng.random((16, 8)), -rng.random((16, 8))
    y = rng.random(8)
    f = kfuse.jit(branchy, backend=backend)
    for x in (pos, neg):
        assert_matches_numpy(to_host(f(*to_device(backend, x, y))), branchy(x, y), reductions=True)
    n = f.compile_count
    for x in (neg, pos, pos * 3):   # both paths compiled: the next calls compile nothing
        assert_matches_numpy(to_host(f(*to_device(backend, x, y))), branchy(x, y), reductions=True)
    assert f.compile_count == n


def test_fullgraph_keeps_the_refusal_naming_the_line():
    f = kfuse.jit(branchy, fullgraph=True)
    with pytest.raises(kfuse.UnsupportedError, match=r"bool\(\) of a traced array.*test_graph_breaks\.py"):
        f(np.ones((2, 3)), np.ones(3))


def test_values_read_in_python():
    def f(x):
        n = int(np.argmax(x.sum(axis=1)))          # a data-dependent size
        scale = float(x.max())
        first = x[0, :3].tolist()
        return x[: n + 1] / scale + first[0] + x.mean().item()
    x = np.random.default_rng(1).random((10, 4))
    assert_matches_numpy(kfuse.jit(f)(x), f(x), reductions=True)

    def g(x):
        return {"n": int(np.argmax(x.sum(axis=1))), "y": x * 2}
    got = kfuse.jit(g)(x)
    assert type(got["n"]) is int and got["n"] == g(x)["n"]       # a Python number, as NumPy's


def _user_helper(v):
    """A user's own Python code on concrete values."""
    return np.asarray(sorted(v.tolist(), key=abs), dtype=v.dtype)


def test_unknown_functions_in_the_middle_run_eagerly():
    def f(a, v):
        w = np.linalg.eigvalsh(a @ a.T + np.eye(a.shape[0]))   # not traced: eager
        u = np.unique(np.round(v * 3))                          # data-dependent shape
        s = _user_helper(v - v.mean())
        return np.exp(-w) * 2 + a.sum(), u * 2, s + 1
    rng = np.random.default_rng(2)
    a, v = rng.random((6, 6)), rng.standard_normal(40)
    got, want = kfuse.jit(f)(a, v), f(a, v)
    for g, w in zip(got, want):
        assert_matches_numpy(g, w, reductions=True)
    text = str(kfuse.explain(f, a, v))
    assert "graph break: np.linalg.eigvalsh at test_graph_breaks.py" in text
    assert "not supported by kfuse; runs eagerly" in text and "np.unique" in text


def test_second_call_compiles_nothing_and_each_break_logs_once(caplog):
    def f(x):
        y = np.sort(x * 2, axis=-1)
        if y[:, -1].sum() > 0:
            y = y + 1
        return np.exp(y).sum(axis=-1)
    x = np.random.default_rng(3).random((4, 5))
    jf = kfuse.jit(f)
    with caplog.at_level(logging.INFO, logger="kfuse"):
        jf(x)
        n = jf.compile_count
        for _ in range(3):
            assert_matches_numpy(jf(x), f(x), reductions=True)
    assert jf.compile_count == n
    breaks = [r.getMessage() for r in caplog.records if "graph break" in r.getMessage()]
    assert len(breaks) == 2, breaks
    assert any("np.sort at test_graph_breaks.py" in m for m in breaks)
    assert any("bool() at test_graph_breaks.py" in m for m in breaks)


def test_writes_into_arguments_across_a_break_keep_numpy_semantics():
    def f(x, y):
        x[0] = -1.0                         # written before the break: the eager call sees it
        s = np.sort(x)
        y += s[::-1]                        # written after it
        x *= 2
        return s
    rng = np.random.default_rng(4)
    x, y = rng.random(7), rng.random(7)
    ex, ey = x.copy(), y.copy()
    want = f(ex, ey)
    got = kfuse.jit(f)(x, y)
    assert_matches_numpy(got, want)
    np.testing.assert_array_equal(x, ex)
    np.testing.assert_array_equal(y, ey)


def test_an_unknown_function_writing_in_place_is_seen_in_order():
    def f(x):
        before = x * 3.0                    # pending when fill_diagonal runs: it reads the old x
        np.fill_diagonal(x, 5.0)            # not traced: eager, writes into x
        return before, x + 1.0
    x = np.random.default_rng(5).random((4, 4))
    ex = x.copy()
    want = f(ex)
    got = kfuse.jit(f)(x)
    for g, w in zip(got, want):
        assert_matches_numpy(g, w)
    np.testing.assert_array_equal(x, ex)    # the caller's array written as NumPy's was


def test_an_error_after_a_break_writes_nothing_into_arguments():
    def f(x, i):
        x[...] = 0.0
        s = np.sort(x)
        return s[i]                         # IndexError for i out of range, after the break
    x = np.random.default_rng(6).random(5)
    before = x.copy()
    jf = kfuse.jit(f)
    with pytest.raises(IndexError):
        jf(x, np.int64(9))
    # NumPy would have zeroed x before raising; kfuse writes arguments back when the function
    # returns, so a failed call leaves them as they were (as without a break)
    np.testing.assert_array_equal(x, before)
    np.testing.assert_array_equal(jf(x, np.int64(1)), f(x.copy(), np.int64(1)))
    np.testing.assert_array_equal(x, 0.0)


def test_explain_on_specs_stops_where_the_value_is_needed():
    text = str(kfuse.explain(branchy, "f64[16,8]", "f64[8]"))
    assert "1 fused segment(s), 1 graph break(s)" in text
    assert "graph break: bool() at test_graph_breaks.py" in text
    assert "Python needs the value" in text and "explain with arrays" in text
    text = str(kfuse.explain(branchy, np.ones((16, 8)), np.ones(8)))
    assert "2 fused segment(s), 1 graph break(s)" in text and "tanh" in text


def test_lower_of_a_broken_function_says_to_use_explain():
    with pytest.raises(kfuse.UnsupportedError, match=r"bool\(\) of a traced array.*kfuse.explain shows them"):
        kfuse.jit(branchy).lower("f64[16,8]", "f64[8]").as_text("cpu")


def test_nested_jit_function_with_a_break():
    inner = kfuse.jit(lambda v: np.sort(v, axis=-1) * 2)

    @kfuse.jit
    def outer(x):
        return inner(x + 1).sum(axis=-1)
    x = np.random.default_rng(7).random((3, 6))
    assert_matches_numpy(outer(x), (np.sort(x + 1, axis=-1) * 2).sum(axis=-1), reductions=True)


def test_a_boolean_selection_used_as_an_array_of_its_own():
    def f(x):
        v = x[x > 0.5]                      # its length is the mask's count
        return v * 2, len(v) + x.sum(), np.median(x[x < 0.2]), x[x > 0.5].sum()
    x = np.random.default_rng(8).random((6, 5))
    got, want = kfuse.jit(f)(x), f(x)
    for g, w in zip(got, want):
        assert_matches_numpy(g, w, reductions=True)
    assert "x[mask] (data-dependent shape)" in str(kfuse.explain(f, x))
