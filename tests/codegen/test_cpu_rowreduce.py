"""CPU backend, reductions over one inner dim (codegen.cpu): float sums add through ``_radd`` (a
reassociable add LLVM vectorises), float max/min run over integer keys (``_fkey_*``) with a NaN
flag, and softmax-style exp/tanh summands a later loop recomputes go through a scratch row. Checked
against NumPy on row lengths around every vector width and unroll, on rows of huge, tiny
(subnormal), +-inf, NaN and -0.0 values; the order is fixed (bit-identical results on every call,
at 1 or 2 threads, sequential or parallel kernel)."""
import re

import numba
import numpy as np
import pytest

import kfuse
from tests.tolerance import assert_matches_numpy

LENGTHS = [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 129, 1000, 4099]


def _rows(dtype, n: int, seed: int) -> np.ndarray:
    """Ten rows of length n: normal, -0.0, one huge value (its square overflows), subnormals, +inf,
    +inf and -inf (NaN), NaN, magnitudes 1e-30..1e30 of one sign, alternating signs, all huge."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((10, n)) * 3 + 1).astype(dtype)
    if n == 0:
        return x
    fi = np.finfo(dtype)
    x[1] = -0.0
    x[2, n // 3] = np.sqrt(fi.max) * 4                  # x*x is inf, the sum of x is finite
    x[3] = fi.smallest_subnormal * rng.integers(1, 50, n)
    x[4, -1] = np.inf
    x[5, 0], x[5, -1] = np.inf, -np.inf                 # NaN for n > 1, -inf for n == 1
    x[6, n // 2] = np.nan
    x[7] = (10.0 ** rng.uniform(-30, 30, n)).astype(dtype)
    x[8] = np.where(np.arange(n) % 2, 1.0, -1.0) * rng.uniform(1, 2, n) + 0.75   # no cancellation:
    # NumPy sums float32 in float32, kfuse in float64 (a near-zero sum would test NumPy's error)
    x[9] = fi.max / 8                                   # the sum overflows for n > 8
    return x


def _rowstats(x):
    mu = x.mean(axis=-1, keepdims=True)
    d = x - mu
    extremes = (x.max(axis=1), x[:, ::-1].min(axis=-1)) if x.shape[1] else ()  # empty: NumPy raises
    return (x.sum(axis=-1), np.sqrt((x * x).sum(axis=1)), (d * d).mean(axis=-1),
            x[:, ::2].sum(axis=1), np.abs(x).sum(axis=1, keepdims=True) * x) + extremes


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", LENGTHS)
def test_row_sums_match_numpy(dtype, n):
    """Every row kind at lengths around the vector loop's width, unroll and remainder: a sum, a
    row L2 norm, a mean and a variance (two phases), a strided row, a sum used in a later loop, a
    max and a min of a reversed row."""
    x = _rows(dtype, n, n)
    with np.errstate(all="ignore"):
        want = _rowstats(x)
        f = kfuse.jit(_rowstats, backend="cpu")
        got = f(x)
    for g, w in zip(got, want):
        assert_matches_numpy(g, w)
    if n:
        for g, w in zip(got, want):                 # the -0.0 row: the same zero as NumPy's
            np.testing.assert_array_equal(np.signbit(g[1]), np.signbit(w[1]))
    if n > 1:
        text = f.lower(x).as_text("cpu")
        assert "_radd(acc_" in text and "fastmath={\"reassoc\"}" in text


def test_long_row_sums_near_numpy_pairwise():
    """Long float32 rows (float64 accumulation) and float64 rows of mixed magnitudes: as close to
    NumPy's pairwise sum as the tolerance table allows without the reductions slack."""
    rng = np.random.default_rng(7)
    for dtype in (np.float32, np.float64):
        x = (rng.random((6, 300001)) * 10.0 ** rng.uniform(-3, 3, (6, 300001))).astype(dtype)
        got = kfuse.jit(lambda y: (y.sum(axis=1), np.sqrt((y * y).sum(axis=1))), backend="cpu")(x)
        assert_matches_numpy(got[0], x.sum(axis=1))
        assert_matches_numpy(got[1], np.sqrt((x * x).sum(axis=1)))


def test_row_sums_deterministic():
    """The summation order is fixed by the compiled code: the same bits on every call, at one or
    two threads, from the sequential and the parallel kernel."""
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((64, 4099)) * 10.0 ** rng.uniform(-8, 8, (64, 4099)))
    f = kfuse.jit(_rowstats, backend="cpu")
    ref = f(x)
    prog = f.lower(x).compile()
    gids = {k.group.id for k in prog.kernels if "_radd(acc_" in k.source}
    assert gids
    old = numba.get_num_threads()
    try:
        for threads in (1, numba.config.NUMBA_NUM_THREADS):
            numba.set_num_threads(threads)
            for variant in ("par", "seq"):
                for gid in gids:
                    prog.set_variant(gid, variant)
                for _ in range(2):
                    for g, r in zip(prog([x]), ref):
                        np.testing.assert_array_equal(g, r)
    finally:
        numba.set_num_threads(old)


def test_int_reductions_stay_plain():
    """Integer sums and max/min keep one plain running value (no _radd, no float keys)."""
    f = kfuse.jit(lambda y: (y.max(axis=-1), y.sum(axis=-1), y.min(axis=1)), backend="cpu")
    text = f.lower(np.ones((2, 20), np.int64)).as_text("cpu")
    assert "_radd" not in text and "_fkey" not in text


def _extreme_rows(dtype, n: int, seed: int) -> np.ndarray:
    """Rows for max/min: normal, all -inf, all +inf, NaN first / middle / last, a negative NaN,
    negative subnormals, +-huge, all -0.0, -0.0 and +0.0 mixed, +-inf together."""
    rng = np.random.default_rng(seed)
    fi = np.finfo(dtype)
    x = (rng.standard_normal((12, n)) * 3).astype(dtype)
    x[1], x[2] = -np.inf, np.inf
    x[3, 0], x[4, n // 2], x[5, -1] = np.nan, np.nan, np.nan
    x[6, n // 3] = -np.nan
    x[7] = -fi.smallest_subnormal * rng.integers(1, 50, n)
    x[8] = np.where(np.arange(n) % 2, fi.max, -fi.max)
    x[9] = -0.0
    x[10] = np.where(np.arange(n) % 3, -0.0, 0.0)
    x[11, 0], x[11, -1] = -np.inf, np.inf
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [v for v in LENGTHS if v])
def test_row_max_min_match_numpy(dtype, n):
    """Float max/min over a row: NumPy's values (NaN wherever a NaN is, infinities, subnormals)
    at every length around the vector width; a -0.0/+0.0 tie gives +0.0 for max, -0.0 for min; a
    max feeding a later loop (softmax's x - max)."""
    x = _extreme_rows(dtype, n, n)

    def f(y):
        m = y.max(axis=1, keepdims=True)
        return y.max(axis=-1), y.min(axis=1), np.exp(y - m) / np.exp(y - m).sum(axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        want = f(x)
        jf = kfuse.jit(f, backend="cpu")
        got = jf(x)
    for g, w in zip(got, want):
        assert_matches_numpy(g, w, reductions=True)
    assert np.signbit(got[0][9]) and np.signbit(got[1][9])           # the all -0.0 row
    if n > 1:
        assert not np.signbit(got[0][10]) and np.signbit(got[1][10])     # the mixed-zero row
        assert "_fkey_" in jf.lower(x).as_text("cpu")


@pytest.mark.parametrize("n", [1, 7, 8, 9, 17, 1000])
def test_exp_tanh_sums_match_numpy(n):
    """Sums of float32 exp/tanh (vectorisable helpers) on rows with +inf, -inf, NaN, overflow and
    underflow; a summand no later loop computes again is not stored in a scratch row."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((7, n)) * 4).astype(np.float32)
    x[1, 0] = np.inf
    x[2, n // 2] = np.nan
    x[3, :] = -np.inf
    x[4, -1] = np.float32(100.0)          # exp overflows in the sum, not after subtracting the max
    x[5, :] = np.float32(-120.0)          # exp(x) underflows to 0 / subnormal

    def f(x):
        return np.exp(x).sum(axis=1), np.tanh(x).sum(axis=-1), np.exp(x - 1).mean(axis=1)
    with np.errstate(all="ignore"):
        want = f(x)
        jf = kfuse.jit(f, backend="cpu")
        got = jf(x)
    for g, w in zip(got, want):
        assert_matches_numpy(g, w, reductions=True)
    assert "sb_" not in jf.lower(x).as_text("cpu")


@pytest.mark.parametrize("n", [7, 8, 9, 17, 1000])
def test_staged_summands_reused_bit_identical(n, monkeypatch):
    """A later loop over the row that computes a staged summand again (softmax's exp(x - max) in
    the output loop) reads it from the scratch row (codegen.cpu _Emitter.reused): same results as
    NumPy on rows with +inf, NaN, -inf, overflow and underflow, bit-identical to recomputing it, and
    only the values the row holds are read back (exp(x - sum) is still computed)."""
    from kfuse.codegen import cpu as cpu_emit

    rng = np.random.default_rng(n)
    x = (rng.standard_normal((7, n)) * 4).astype(np.float32)
    x[1, 0] = np.inf
    x[2, n // 2] = np.nan
    x[3, :] = -np.inf
    x[4, -1] = np.float32(100.0)          # exp(x) overflows to inf
    x[5, :] = np.float32(-90.0)           # exp(x) is subnormal
    x[5, 0] = np.float32(-120.0)          # ... or 0

    def f(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        s = e.sum(axis=1, keepdims=True)
        e2 = np.exp(x)
        t = np.tanh(x)
        return (e / s, np.exp(x - s), e2 / e2.sum(axis=1, keepdims=True),
                t * t.sum(axis=-1, keepdims=True))
    with np.errstate(all="ignore"):
        want = f(x)
        reusing = kfuse.jit(f, backend="cpu")
        got = reusing(x)
        text = reusing.lower(x).as_text("cpu")
        monkeypatch.setattr(cpu_emit._Emitter, "reused", lambda self, st, inner, keys: None)
        plain = kfuse.jit(f, backend="cpu")
        ref = plain(x)
        plain_text = plain.lower(x).as_text("cpu")
    for g, w, r in zip(got, want, ref):
        assert_matches_numpy(g, w, reductions=True)
        np.testing.assert_array_equal(g, r)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(r))
    # exp(x - max), exp(x) and tanh(x) are read back in the output loops, exp(x - s) is not
    assert len(re.findall(r"v\d+ = sb_v\d+\[i1\]\n", text)) == 3
    assert not re.findall(r"v\d+ = sb_v\d+\[i1\]\n", plain_text)
    assert (text.count("_expf(v"), text.count("_tanhf(v")) == (3, 1)
    assert (plain_text.count("_expf(v"), plain_text.count("_tanhf(v")) == (5, 2)
