"""NumPy functions NumPy writes in Python over ufuncs, reductions and indexing, traced the same
way (kfuse/trace/composite.py), on every backend against NumPy: ``isclose``/``allclose``,
``nan_to_num``, ``nansum``/``nanmean``/``nanmax``/``nanmin``, ``ptp``, ``count_nonzero``,
``diagonal``/``trace``, ``tile``, ``repeat``, ``average``; results and dtypes NumPy's, NaN rows included."""
import warnings

import numpy as np
import pytest

from tolerance import assert_matches_numpy


CASES = {
    "isclose": lambda a, b: np.isclose(a, b * 1.000001, equal_nan=True) & np.isclose(a, 3),
    "allclose": lambda a, b: np.allclose(a, a + 1e-9),
    "nan_to_num": lambda a, b: np.nan_to_num(a / b, nan=-1.0, neginf=7),
    "nansum": lambda a, b: np.nansum(a / b, axis=1) + np.nansum(a, keepdims=True),
    "nanmean": lambda a, b: np.nanmean(a / b, axis=0),
    "nanmax": lambda a, b: np.nanmax(a / b, axis=1),
    "nanmin": lambda a, b: np.nanmin(a / b, axis=0, keepdims=True),
    "ptp": lambda a, b: np.ptp(a, axis=1) + np.ptp(b),
    "count_nonzero": lambda a, b: np.count_nonzero(a > 1, axis=0) + np.count_nonzero(b),
    "diagonal": lambda a, b: np.diagonal(a, 1) * 2 + a.diagonal(-2)[:3].sum(),
    "trace": lambda a, b: np.trace(a, offset=-1) + a.reshape(2, 3, 8).trace(axis1=1, axis2=2),
    "tile": lambda a, b: np.tile(a[0], (2, 3)) + np.tile(b, 2).sum(),
    "repeat": lambda a, b: np.repeat(a, 3, axis=1)[:, ::5] + np.repeat(b[0], 2).sum(),
    "average": lambda a, b: np.average(a, axis=1, weights=np.abs(b[0]) + 1) + np.average(a, keepdims=True)[0],
    "average_returned": lambda a, b: np.multiply(*np.average(a.reshape(2, 3, 8), axis=(2, 0),
                                                             weights=np.abs(b[:2].T) + 1, returned=True)),
}
DTYPES = ["float32", "int32", "float16"]


def _inputs(dtype):
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((6, 8)) * 4).round()
    b = rng.integers(-2, 3, (6, 8)).astype(float)
    a[1, :] = 0                                   # 0/0: a NaN row where a / b is taken
    a, b = a.astype(dtype), b.astype(dtype)
    if dtype != "int32":
        b[1, :] = 0
    else:
        b[b == 0] = 1
    return a, b


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_composite_functions_match_numpy(backend, name, dtype, run_jit):
    fn = CASES[name]
    a, b = _inputs(dtype)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # all-NaN slices, as NumPy warns
        want = np.asarray(fn(a, b))
        got = run_jit(fn, backend, a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_matches_numpy(got, want, reductions=True)
