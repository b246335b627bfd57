"""Bugs 38 and 39 (found by the fuzzer's scatter kind, 2026-11-25/26), on every backend.

38: ``np.put(x, [], v)`` raised TypeError: kfuse converted the list with ``np.asarray`` (float64)
where NumPy converts it straight to intp (as ``np.take`` did, bug 32).
39: a scatter whose values are its own base node (``v[[1, 0]] = v``, an equal expression interned
into the same node, or ``v = a.copy(); v.put(..., a)``) was written into the base's buffer in
place (``Plan.scatters_in_place``), reading values it had already overwritten."""
import numpy as np
import pytest


def put_empty_list(x):
    np.put(x, [], 1.0)
    x.put((), 2.0)
    return x * 1


def set_from_itself(a):
    v = a * 2
    v[[1, 0]] = v
    return v


def add_at_an_equal_expression(a):
    v = a * 2
    np.add.at(v, [1, 0], a * 2)
    return v


def put_from_the_copied_array(a):
    v = a.copy()
    v.put([1, 0], a)
    return v


def set_rows_from_itself_then_read(a):
    v = a + 1
    v[[2, 0, 1]] = v
    return v, v.sum(axis=1)


CASES = [(put_empty_list, np.arange(3.0)), (set_from_itself, np.array([1.0, 2.0])),
         (add_at_an_equal_expression, np.array([1.0, 2.0])),
         (put_from_the_copied_array, np.array([[1.0, 2.0]])),
         (set_rows_from_itself_then_read, np.arange(12.0).reshape(3, 4))]


@pytest.mark.parametrize("fn, x", CASES, ids=[c[0].__name__ for c in CASES])
def test_scatter_of_its_own_base_matches_numpy(fn, x, backend, run_jit):
    want = fn(x.copy())
    got = run_jit(fn, backend, x.copy())
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
