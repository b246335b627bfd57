"""Searches of sorted tables (``np.searchsorted``, ``ndarray.searchsorted``, ``np.digitize``,
``np.interp``) on every backend against NumPy. A search compares as NumPy does (NaN after every
number) and interp follows NumPy's C loop step by step in float64, so every result is NumPy's
exactly, on the GPU too."""
import numpy as np
import pytest

import kfuse
from kfuse.errors import UnsupportedError


_rng = np.random.default_rng(3)
TABLE = np.sort(np.r_[_rng.standard_normal(40), [0.5, 0.5, 0.5, np.nan, np.nan]])
KEYS = np.r_[_rng.standard_normal(60) * 2, [0.5, np.nan, np.inf, -np.inf, TABLE[0], TABLE[39]]]
XP = np.sort(_rng.standard_normal(25))
XP[5] = XP[6]                                     # a repeated sample point
FP = _rng.standard_normal(25)
X = np.r_[_rng.standard_normal(80) * 2, XP, [np.nan, np.inf, -np.inf]]

CASES = {
    "left": (lambda a, v: np.searchsorted(a, v), (TABLE, KEYS)),
    "right": (lambda a, v: np.searchsorted(a, v * 1, side="right"), (TABLE, KEYS)),
    "method": (lambda a, v: a.searchsorted(v, "right") + a.searchsorted(v), (TABLE, KEYS)),
    "sorter": (lambda a, v: np.searchsorted(a, v, sorter=np.argsort(TABLE[::-1])), (TABLE[::-1].copy(), KEYS)),
    "computed_table": (lambda a, v: np.searchsorted(np.exp(a), v), (TABLE, KEYS)),
    "cumsum_table": (lambda p, u: np.searchsorted(np.cumsum(p), u * p.sum()),   # inverse-CDF sampling
                     (np.abs(_rng.standard_normal(30)), _rng.random(200))),
    "int_table_float_keys": (lambda a, v: np.searchsorted(a, v), (np.arange(-20, 20, 3), KEYS * 10)),
    "float16": (lambda a, v: np.searchsorted(a, v), (TABLE[:40].astype(np.float16), KEYS.astype(np.float16))),
    "int8_keys_2d": (lambda a, v: np.searchsorted(a, v.reshape(6, 11), side="right"),
                     (np.sort(_rng.integers(-100, 100, 33)).astype(np.int8),
                      _rng.integers(-128, 127, 66).astype(np.int8))),
    "scalar_key": (lambda a, v: np.searchsorted(a, 0.25) + v[:1] * 0, (TABLE, KEYS)),
    "reduced": (lambda a, v: (np.searchsorted(a, v) > 20).sum(), (TABLE, KEYS)),
    "digitize": (lambda x: np.digitize(x, [-1.0, 0.0, 0.5, 2.0]), (KEYS,)),
    "digitize_right_decreasing": (lambda x: np.digitize(x, [2.0, 0.5, 0.0, -1.0], right=True), (KEYS,)),
    "digitize_linspace": (lambda x: np.digitize(x * 3, np.linspace(-4, 4, 17)), (KEYS,)),
    "interp": (lambda x, xp, fp: np.interp(x, xp, fp), (X, XP, FP)),
    "interp_left_right": (lambda x, xp, fp: np.interp(x, xp, fp, left=-7.0, right=np.nan), (X, XP, FP)),
    "interp_float32": (lambda x, xp, fp: np.interp(x, xp, fp), (X.astype(np.float32), XP.astype(np.float32), FP)),
    "interp_one_point": (lambda x, xp, fp: np.interp(x, xp[:1], fp[:1]), (X, XP, FP)),
    "interp_fused": (lambda x, xp, fp: np.interp(np.tanh(x), xp, fp * 2).sum(), (X[:80], XP, FP)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_search_matches_numpy(case, backend, run_jit):
    fn, args = CASES[case]
    want = np.asarray(fn(*args))
    got = run_jit(fn, backend, *args)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f" and case == "interp_fused":      # a float64 sum's order
        np.testing.assert_allclose(got, want, rtol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


def test_interp_is_one_kernel():
    plan = kfuse.jit(CASES["interp"][0]).lower(*CASES["interp"][1], backend="cpu").plan
    assert len(plan.groups) == 1 and "searchsorted" in plan.groups[0].ops


def test_a_computed_table_is_written_by_an_earlier_kernel():
    fn, args = CASES["computed_table"]
    plan = kfuse.jit(fn).lower(*args, backend="cpu").plan
    search = next(g for g in plan.groups if "searchsorted" in g.ops)
    table = next(n for n in search.nodes if n.op.value == "searchsorted").inputs[0]
    assert table in search.inputs and "exp" not in search.ops


@pytest.mark.parametrize("fn, error, match", [
    (lambda x: np.searchsorted(x.reshape(2, -1), 0.0), ValueError, "object too deep"),
    (lambda x: np.searchsorted(x, 0.0, side="middle"), ValueError, "search side must be"),
    (lambda x: np.digitize(x, [0.0, 1.0, 0.5]), ValueError, "monotonically"),
    (lambda x: np.digitize(x, x), UnsupportedError, "traced bins"),
    (lambda x: np.interp(x, x[:3], x[:4]), ValueError, "not of the same length"),
    (lambda x: np.interp(x, x[:0], x[:0]), ValueError, "sample points is empty"),
    (lambda x: np.interp(x, x[:3], x[:3], period=2.0), UnsupportedError, "period="),
])
def test_errors_name_the_line(fn, error, match):
    with pytest.raises(error, match=match + ".*test_search.py"):
        kfuse.jit(fn, backend="cpu", fullgraph=True)(np.sort(KEYS[:60]))
