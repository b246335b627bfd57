"""The CPU backend's branch-free float32 helpers (codegen.cpu_helpers): the logarithms (``_logf``, ``_log1pf``):
errors in ulps of the correctly rounded result over positive floats of every exponent and the
ranges log1p is used on, NumPy's special values, and a full reduction over two axes through them
(its loop vectorised, as a row's is) against NumPy; ``_hypotf`` bit for bit against libm's."""
import numba
import numpy as np
import pytest

import kfuse
from kfuse.codegen.cpu_helpers import HELPERS
from tolerance import assert_matches_numpy


def _vectorised(name):
    ns: dict = {}
    exec("import numpy as np\nimport numba\n\n" + "\n\n".join(HELPERS[k][0] for k in ("_logf", name)), ns)
    fn = ns[name]

    @numba.njit
    def run(x, out):
        for i in range(x.shape[0]):
            out[i] = fn(x[i])
    return run


def _ulps(got, x, ref_fn):
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64))
        r32 = ref.astype(np.float32)
    ok = np.isfinite(ref)
    err = np.abs(got[ok].astype(np.float64) - ref[ok]) / np.spacing(np.abs(r32[ok])).astype(np.float64)
    bad = ~ok
    same = np.array_equal(np.isnan(got[bad]), np.isnan(r32[bad])) and np.array_equal(
        got[bad & ~np.isnan(r32)], r32[bad & ~np.isnan(r32)])
    return err.max(), same


SPECIAL = np.array([0.0, -0.0, -1.0, -1.5, 1.0, np.inf, -np.inf, np.nan, 1e-45, 1.1754942e-38, 0.99999994], np.float32)


def test_logf_within_one_ulp_of_log_everywhere():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.integers(1, 2 ** 31, 1 << 21, dtype=np.uint64).astype(np.uint32).view(np.float32), SPECIAL])
    got = np.empty_like(x)
    _vectorised("_logf")(x, got)
    err, same = _ulps(got, x, np.log)
    assert err < 1.0 and same


def test_log1pf_within_two_ulps_of_log1p():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(1 << 18).astype(np.float32) * s for s in (1e-8, 1e-4, 1e-2, 1, 100)]
                       + [np.exp(rng.uniform(-100, 88, 1 << 18)).astype(np.float32),
                          -rng.random(1 << 18).astype(np.float32), SPECIAL])
    got = np.empty_like(x)
    _vectorised("_log1pf")(x, got)
    err, same = _ulps(got, x, np.log1p)
    assert err < 2.0 and same


def test_full_reduction_through_the_helpers_matches_numpy():
    rng = np.random.default_rng(4)
    x, t = rng.standard_normal((301, 257)).astype(np.float32), (rng.random((301, 257)) < 0.5).astype(np.float32)
    fn = lambda x, t: (np.maximum(x, 0) - x * t + np.log1p(np.exp(-np.abs(x)))).mean()   # noqa: E731
    f = kfuse.jit(fn, backend="cpu")
    got = f(x, t)
    assert_matches_numpy(np.asarray(got), np.asarray(fn(x, t)), reductions=True)
    src = list(f._programs.values())[-1].program.stages["cpu"]
    assert "_log1pf(" in src and "_radd(" in src          # the helpers, the vectorisable sum


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_hypot_helper_is_libms_bit_for_bit(dtype):
    """float32 (and float16) hypot through the vectorisable helper: glibc's hypotf (squares and
    sum in float64, one rounding), bit for bit over every scale and the special values."""
    f = kfuse.jit(lambda x, y: np.hypot(x, y), backend="cpu")
    rng = np.random.default_rng(3)
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, -3.4e38, 1.0, 65504.0], np.float32)
    a, b = (g.ravel() for g in np.meshgrid(sp, sp))
    cases = [(a, b)] + [((rng.standard_normal(4096) * s), (rng.standard_normal(4096) * s)) for s in (1.0, 1e30, 1e-40)]
    src = f.lower(np.zeros(4, dtype), np.zeros(4, dtype)).as_text("cpu")
    assert "_hypotf(" in src
    with np.errstate(all="ignore"):
        for x, y in cases:
            x, y = x.astype(dtype), y.astype(dtype)
            got, want = f(x, y), np.hypot(x, y)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.view(np.uint16 if dtype == np.float16 else np.uint32),
                                          want.view(np.uint16 if dtype == np.float16 else np.uint32))
