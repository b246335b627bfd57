"""Column reductions with several passes on the GPU (skipped without one): statistics over a
leading or middle axis and their use (standardise, softmax over axis 0) run as one grid-
synchronised launch (Variant.grid_sync) when the columns are too few to fill the GPU, or a kernel
a pass past L2. Results
against NumPy at odd sizes, every dtype family, NaN and ties across chunk edges, repeatable bit
for bit, and the launcher really synchronised the grid."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = [pytest.mark.gpu, pytest.mark.backends("cuda", "numba-cuda")]   # the same schedules, both emitters
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

import kfuse  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402

RNG = np.random.default_rng(11)


def _grid_synced(f, *args) -> int:
    """The chunks of the grid-synchronised launch behind ``f`` for these arguments (0: none)."""
    entry = f._programs[f._key(args)]
    return max([getattr(h[0], 'variant', h[0]).split for lau in entry.program.launchers for h in lau._variants.values()
                if getattr(h[0], 'variant', h[0]).grid_sync] + [0])


CASES = {
    "standardise_axis0": (lambda x: (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), (70001, 257)),
    "softmax_axis0": (lambda x: np.exp(x - x.max(0)) / np.exp(x - x.max(0)).sum(0), (30011, 300)),
    "minmax_axis0": (lambda x: (x - x.min(0)) / (x.max(0) - x.min(0)), (40009, 131)),
    "middle_axis": (lambda x: x / np.abs(x).sum(axis=1, keepdims=True) - x.mean(axis=1, keepdims=True),
                    (3, 20011, 67)),
    "two_axes_nhwc": (lambda x: (x - x.mean((0, 1, 2))) * (1 / np.sqrt(x.var((0, 1, 2)) + 1e-5)),
                      (8, 61, 67, 96)),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_multi_pass_column_reductions(name, dtype, backend):
    fn, shape = CASES[name]
    if dtype == np.float64:         # (under L2: past it, a full-size result splits the passes)
        k = int(np.argmax(shape))
        shape = shape[:k] + (shape[k] // 4,) + shape[k + 1:]
    x = RNG.standard_normal(shape).astype(dtype)
    f = kfuse.jit(fn, backend=backend)
    xd = cp.asarray(x)
    got = f(xd)
    assert _grid_synced(f, xd) >= 2
    assert_matches_numpy(cp.asnumpy(got), fn(x), reductions=True)
    assert cp.asnumpy(f(xd)).tobytes() == cp.asnumpy(got).tobytes()      # repeatable, bit for bit


@pytest.mark.parametrize("name,kernels", [("softmax_axis0", 3), ("minmax_axis0", 2), ("standardise_axis0", 2)])
def test_columns_past_l2_split_a_kernel_a_pass(name, kernels, backend):
    """Columns past L2 whose last pass writes the whole array run a kernel a pass (the GPU model's
    REREAD_COLUMN_EFFICIENCY): one for the minimum and maximum together, one for the mean and the
    folded variance; NumPy's results."""
    fn, _ = CASES[name]
    x = RNG.standard_normal((60013, 257)).astype(np.float32)
    f = kfuse.jit(fn, backend=backend)
    got = f(cp.asarray(x))
    assert len(f.lower(cp.asarray(x)).plan.groups) == kernels
    assert_matches_numpy(cp.asnumpy(got), fn(x), reductions=True)


@pytest.mark.parametrize("name", ["standardise_axis0", "softmax_axis0", "minmax_axis0"])
def test_float16_columns(name, backend):
    """float16 sums round to float16 (NumPy's loop): columns short enough that NumPy's own float16
    sums neither overflow nor drift past the table (70001 squares overflow float16)."""
    fn, _ = CASES[name]
    x = RNG.standard_normal((2003, 300)).astype(np.float16)
    f = kfuse.jit(fn, backend=backend)
    got = f(cp.asarray(x))
    assert _grid_synced(f, cp.asarray(x)) >= 2
    assert_matches_numpy(cp.asnumpy(got), fn(x), reductions=True)


def test_transposed_input_reduced_over_its_last_axis(backend):
    """x.T's rows are memory columns: a last-axis statistic of a transposed view is a column pass."""
    x = RNG.standard_normal((50021, 100)).astype(np.float32)
    fn = lambda x: x.T - x.T.mean(axis=1, keepdims=True) * x.T.max(axis=1, keepdims=True)  # noqa: E731
    f = kfuse.jit(fn, backend=backend)
    got = f(cp.asarray(x))
    assert _grid_synced(f, cp.asarray(x)) >= 2
    assert_matches_numpy(cp.asnumpy(got), fn(x), reductions=True)


def test_integers_and_argmax_with_nan_and_ties_across_chunks(backend):
    i = RNG.integers(-10 ** 6, 10 ** 6, (60013, 40)).astype(np.int64)
    fi = lambda i: (i - i.min(0)) * (i.max(0) % 7) + i.sum(0)        # noqa: E731
    f = kfuse.jit(fi, backend=backend)
    got = f(cp.asarray(i))
    assert _grid_synced(f, cp.asarray(i)) >= 2
    np.testing.assert_array_equal(cp.asnumpy(got), fi(i))
    x = RNG.standard_normal((60013, 40)).astype(np.float32)
    x[5, 3] = x[60000, 3] = 50.0                   # ties in the first and last chunks: the first wins
    x[30000, 7] = x[59000, 7] = np.nan             # NaN: the first NaN's index, max NaN
    fa = lambda x: (x.argmax(0), x - x.max(0))     # noqa: E731
    a, d = kfuse.jit(fa, backend=backend)(cp.asarray(x))
    ea, ed = fa(x)
    np.testing.assert_array_equal(cp.asnumpy(a), ea)
    assert_matches_numpy(cp.asnumpy(d), ed)


ROWS = {
    "scale_by_absmax": (lambda x: x / np.abs(x).max(), (1 << 22) + 77),
    "clip_by_global_norm": (lambda x: x * np.minimum(1.0, 1.0 / np.sqrt((x * x).sum())), (1 << 22) + 5),
    "standardise_vector": (lambda x: (x - x.mean()) / x.std(), (1 << 22) + 3),
    "softmax_three_long_rows": (lambda x: np.exp(x - x.max(1, keepdims=True)) / np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True), (3, (1 << 20) + 1)),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_multi_pass_over_few_long_rows(name, backend):
    fn, shape = ROWS[name]
    x = RNG.standard_normal(shape).astype(np.float32)
    f = kfuse.jit(fn, backend=backend)
    xd = cp.asarray(x)
    got = f(xd)
    assert _grid_synced(f, xd) >= 2
    assert_matches_numpy(cp.asnumpy(got), fn(x), reductions=True)
    assert cp.asnumpy(f(xd)).tobytes() == cp.asnumpy(got).tobytes()


SHORT = {
    "sum_max_16": (lambda x: x - x.sum(1, keepdims=True) * x.max(1, keepdims=True), (1 << 20, 16), np.float32),
    "layernorm_64": (lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5),
                     (300007, 64), np.float32),
    "argmax_odd_7": (lambda x: (x.argmax(1), x.min(1)), (100003, 7), np.float32),
    "rms_f16_128": (lambda x: x / np.sqrt((x.astype(np.float32) ** 2).mean(-1, keepdims=True) + 1e-6).astype(np.float16),
                    (65537, 128), np.float16),
}


@pytest.mark.parametrize("name", list(SHORT))
def test_short_rows_run_packed_in_warps(name):
    fn, shape, dtype = SHORT[name]
    x = RNG.standard_normal(shape).astype(dtype)
    x[5, 3] = x[5, 1]                              # a tie inside one packed row
    f = kfuse.jit(fn)
    got = f(cp.asarray(x))
    entry = f._programs[f._key((cp.asarray(x),))]
    assert any(h[0].variant.packed for lau in entry.program.launchers for h in lau._variants.values())
    want = fn(x)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert_matches_numpy(cp.asnumpy(g), w, reductions=True)
