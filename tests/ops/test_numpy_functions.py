"""More of NumPy's Python-level functions, traced as NumPy writes them (kfuse/trace/composite.py,
kfuse/trace/splitting.py): ``np.select``, ``np.sinc``, ``np.polyval``, ``np.fix``,
``np.isposinf``/``isneginf``, ``np.trapezoid``, ``np.split``/``array_split``/``hsplit``/``vsplit``/
``dsplit``, ``np.rot90``, ``np.meshgrid``; on every backend against NumPy, results and dtypes
NumPy's; NumPy's errors at the user's line."""
import numpy as np
import pytest

import kfuse
from tolerance import assert_matches_numpy


CASES = {
    "select": lambda a, b: np.select([a > 1, a < -1, b > 0], [a, b * 2, 7], default=-1),
    "select_scalars": lambda a, b: np.select([a > 0], [1.5]),
    "sinc": lambda a, b: np.sinc(a / 4),
    "polyval": lambda a, b: np.polyval([1.5, -2, 0.25], a) + np.polyval(np.array([3, 1]), b),
    "fix": lambda a, b: np.fix(a / 3),
    "posneginf": lambda a, b: np.isposinf(a / b) ^ np.isneginf(a / b),
    "trapezoid": lambda a, b: np.trapezoid(a, dx=0.5)[:, None] + np.trapezoid(a, x=np.arange(6.0) ** 2, axis=0),
    "split": lambda a, b: sum(p.sum(axis=1) for p in np.split(a, 2, axis=1)) + np.array_split(a, 4)[1].sum(),
    "hsplit": lambda a, b: np.hsplit(a, [1, 5])[1] * np.vsplit(b, 3)[2].sum(axis=0)[:4],
    "rot90": lambda a, b: np.rot90(a) + np.rot90(b, 3).T * 2 + np.rot90(a, 2, axes=(1, 0)).T,
    "meshgrid": lambda a, b: np.stack(np.meshgrid(a[0], b[:, 1])) .sum(axis=0) + np.meshgrid(a[0], a[1], indexing="ij")[1].T[:6],
}


@pytest.mark.parametrize("dtype", ["float32", "int32", "float16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_functions_match_numpy(backend, name, dtype, run_jit):
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((6, 8)) * 3).round().astype(dtype)
    b = rng.integers(-2, 3, (6, 8)).astype(dtype)
    if name == "rot90":
        a, b = a[:, :6], b[:, :6]
    fn = CASES[name]
    with np.errstate(all="ignore"):
        want = np.asarray(fn(a, b))
        got = run_jit(fn, backend, a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_matches_numpy(got, want, reductions=True)


def test_split_parts_are_views():
    """``np.split``'s parts are views: a write into one reaches the array, as in NumPy."""
    def f(a):
        y = a.copy()
        left, right = np.split(y, 2, axis=1)
        right[0] = -1
        return y
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(kfuse.jit(f)(a), f(a))


def test_errors_are_numpys():
    a = np.ones((4, 6), np.float32)
    with pytest.raises(ValueError, match=r"equal division.*test_numpy_functions\.py"):
        kfuse.jit(lambda a: np.split(a, 4, axis=1))(a)
    with pytest.raises(ValueError, match="same length"):
        kfuse.jit(lambda a: np.select([a > 0], [a, a]))(a)
    with pytest.raises(TypeError, match="invalid entry 0 in condlist"):
        kfuse.jit(lambda a: np.select([a], [a]))(a)
    with pytest.raises(ValueError, match="Axes must be different"):
        kfuse.jit(lambda a: np.rot90(a, axes=(0, 0)))(a)
    with pytest.raises(ValueError, match="vsplit only works on arrays of 2 or more"):
        kfuse.jit(lambda a: np.vsplit(a[0], 2))(a)
