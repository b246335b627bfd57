"""Two-stage (split) reductions on the GPU (skipped without one): rows too few to fill the GPU
reduced in chunks, then each row's chunks combined in order. Results against NumPy, NaN and tie
rules across chunk edges, bit-for-bit repeatable, and the launcher really split."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = [pytest.mark.gpu, pytest.mark.backends("cuda", "numba-cuda")]   # the same schedules, both emitters
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

import kfuse  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402

RNG = np.random.default_rng(7)
N = (1 << 22) + 12345          # not a multiple of any chunk: uneven last chunks


def _split_used(f, *args) -> int:
    """The chunks the (single-group) program behind ``f`` ran with, for these arguments."""
    entry = f._programs[f._key(args)]
    return max(getattr(h[0], 'variant', h[0]).split for lau in entry.program.launchers for h in lau._variants.values())


CASES = {
    "sum": lambda x: x.sum(),
    "mean_sq": lambda x: (x * x).mean(),
    "max": lambda x: x.max(),
    "min_abs": lambda x: np.abs(x).min(),
    "argmax": lambda x: x.argmax(),
    "argmin": lambda x: x.argmin(),
    "any": lambda x: (x > 4.5).any(),
    "all": lambda x: (x > -4.5).all(),
    "norm": lambda x: np.sqrt((x * x).sum()),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_full_reductions_of_a_long_vector(name, dtype, backend):
    x = RNG.standard_normal(N).astype(dtype)
    f = kfuse.jit(CASES[name], backend=backend)
    got = f(cp.asarray(x))
    assert _split_used(f, cp.asarray(x)) >= 2
    assert_matches_numpy(cp.asnumpy(got), CASES[name](x), reductions=True)
    assert cp.asnumpy(f(cp.asarray(x))).tobytes() == cp.asnumpy(got).tobytes()      # repeatable, bit for bit


def test_few_long_rows_f16_int_and_bool(backend):
    x = RNG.standard_normal((3, 1 << 21)).astype(np.float16)
    i = RNG.integers(-1000, 1000, (2, 1 << 21)).astype(np.int32)
    for fn, a in [(lambda x: x.sum(axis=1), x), (lambda x: x.max(axis=-1), x), (lambda i: i.sum(axis=1), i),
                  (lambda i: (i * i).sum(axis=1), i), (lambda i: i.argmax(axis=1), i), (lambda i: (i == 999).any(axis=1), i)]:
        f = kfuse.jit(fn, backend=backend)
        got = f(cp.asarray(a))
        assert _split_used(f, cp.asarray(a)) >= 2
        assert_matches_numpy(cp.asnumpy(got), fn(a), reductions=True)


def test_nan_and_ties_across_chunk_edges(backend):
    """NaN in one late chunk wins max/argmax (first NaN's index); the first of equal maxima wins
    argmax even when a later chunk holds the same value."""
    x = RNG.standard_normal(N).astype(np.float32)
    x[N // 3] = x[N - 5] = 100.0                                   # ties in different chunks
    assert int(kfuse.jit(lambda x: x.argmax(), backend=backend)(cp.asarray(x))) == N // 3
    x[N - 7] = np.nan
    x[N - 3] = np.nan
    got = kfuse.jit(lambda x: (x.max(), x.argmax(), x.sum()), backend=backend)(cp.asarray(x))
    assert np.isnan(float(got[0])) and int(got[1]) == N - 7 and np.isnan(float(got[2]))


def test_split_with_an_elementwise_output_in_the_same_pass(backend):
    """A pass that also stores per element (each element is stored once, by its chunk's block)."""
    x = RNG.standard_normal(N).astype(np.float32)
    fn = lambda x: (x.sum(), x * 2)          # noqa: E731
    s, y = kfuse.jit(fn, backend=backend)(cp.asarray(x))
    assert_matches_numpy(cp.asnumpy(s), x.sum(), reductions=True)
    assert_matches_numpy(cp.asnumpy(y), x * 2)


@pytest.mark.parametrize("fn", [lambda x: x.sum(axis=0), lambda x: x.argmin(axis=0),
                                lambda x: (x * x).mean(axis=0), lambda x: x.max(axis=0)])
def test_few_long_columns(fn, backend):
    x = RNG.standard_normal(((1 << 20) + 77, 48)).astype(np.float32)
    x[12345, 7] = np.nan
    f = kfuse.jit(fn, backend=backend)
    got = f(cp.asarray(x))
    assert _split_used(f, cp.asarray(x)) >= 2
    # NumPy sums a float32 column in float32, one row after another (no pairwise tree across rows):
    # 2^20 rows put it 5e-4 off; the reference is the float64 result, rounded
    want = fn(x)
    assert_matches_numpy(cp.asnumpy(got), np.asarray(fn(x.astype(np.float64))).astype(want.dtype), reductions=True)
