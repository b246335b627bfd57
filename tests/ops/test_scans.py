"""Scans (``np.cumsum``/``cumprod``, ``np.cumulative_sum``/``cumulative_prod``, ``np.nancumsum``/
``nancumprod``, ``ufunc.accumulate`` of add/multiply/maximum/minimum) on every backend against
NumPy. On the CPU, and down columns on the GPU, a scan runs its axis in order in the
result dtype, as NumPy's accumulate loop does, and its producers and consumers here are exact IEEE
operations, so results are NumPy's bit for bit (NaN positions, the sign of a leading -0.0,
integer wrap-around and float16 rounding included). Both GPU backends scan contiguous rows as a
tree over a warp's lanes (codegen/cuda_scan.py, codegen/numba_cuda_scan.py): integers, booleans,
max and min still exactly, float sums and products within the tolerance table (as a sum's order)."""
import numpy as np
import pytest

import kfuse
from kfuse.errors import UnsupportedError
from tolerance import assert_matches_numpy


CASES = {
    "cumsum": lambda x: np.cumsum(x),
    "cumsum_axis0": lambda x: np.cumsum(x, axis=0),
    "cumsum_method": lambda x: x.cumsum(-1) * 2,
    "cumprod": lambda x: np.cumprod(x, axis=1),
    "cumprod_method": lambda x: x.cumprod(0),
    "add_accumulate": lambda x: np.add.accumulate(x, axis=1),
    "multiply_accumulate": lambda x: np.multiply.accumulate(x),
    "maximum_accumulate": lambda x: np.maximum.accumulate(x, axis=1),
    "minimum_accumulate": lambda x: np.minimum.accumulate(x, axis=0),
    "nancumsum": lambda x: np.nancumsum(x, axis=1),
    "nancumprod": lambda x: np.nancumprod(x, axis=0),
    "cumulative_sum": lambda x: np.cumulative_sum(x, axis=1, include_initial=True),
    "cumulative_prod": lambda x: np.cumulative_prod(x, axis=0),
    "producer_consumer": lambda x: np.cumsum(x * x - 1, axis=1) - x,
    "scan_of_scan": lambda x: np.cumsum(np.cumsum(x, axis=1), axis=1),
    "two_axes": lambda x: np.cumsum(x, axis=0) + np.maximum.accumulate(x, axis=1),
    "transposed": lambda x: np.cumsum(x.T, axis=1),
    "reversed": lambda x: np.cumsum(x[:, ::-1], axis=1)[:, ::-1],
    "cdf": lambda x: np.cumsum(x, axis=1) * x.max(axis=1, keepdims=True),
}
DTYPES = ["float32", "float64", "float16", "int8", "int64", "uint16", "bool"]
_NOT_ON_BOOL = {"cumsum_method", "producer_consumer", "nancumsum", "nancumprod", "cdf",
                "scan_of_scan", "reversed", "two_axes"}


def _input(dtype, shape=(7, 33)):
    rng = np.random.default_rng(11)
    if dtype == "bool":
        return rng.random(shape) < 0.6
    if np.dtype(dtype).kind == "f":
        x = rng.integers(-4, 5, shape) * 0.375       # products and sums stay exact-ish and finite
        x[2, 5] = np.nan
        x[3, 0] = -0.0                                # a leading -0.0 keeps its sign
        x[4, :] = rng.random(shape[1]) + 0.6          # a row of positive factors for cumprod
        return x.astype(dtype)
    return rng.integers(0 if dtype.startswith("u") else -100, 100, shape).astype(dtype)   # wraps


def _exact(got, want, backend="cpu"):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if backend in ("cuda", "numba-cuda") and want.dtype.kind == "f":     # a tree over the lanes: a sum's tolerance
        assert_matches_numpy(got, want, reductions=True)
        return
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "f":                        # -0.0 and +0.0 are equal above: signs too
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_scans_match_numpy_exactly(backend, name, dtype, run_jit):
    if dtype == "bool" and name in _NOT_ON_BOOL:
        pytest.skip("NumPy refuses this on booleans (subtract, nan) or it is covered by int8")
    x = _input(dtype)
    with np.errstate(all="ignore"):
        want = np.asarray(CASES[name](x))
        got = run_jit(CASES[name], backend, x)
    _exact(got, want, backend)


def test_scan_edges(backend, run_jit):
    """0-d and 1-D input (axis None), an axis of length 1, 3-D along the middle axis, a strided
    argument, int8 wrap with dtype=, bool to int64, float16 rounding every step, dtype= float16."""
    rng = np.random.default_rng(3)
    cases = [
        (lambda s: np.cumsum(s), [np.float32(2.5)]),
        (lambda v: np.cumprod(v), [rng.integers(1, 4, 40).astype(np.int32)]),
        (lambda x: np.cumsum(x, axis=1) + 1, [rng.random((5, 1, 3)).astype(np.float32)]),
        (lambda x: np.cumsum(x, axis=1), [rng.integers(-9, 9, (4, 50, 6)).astype(np.int16)]),
        (lambda x: np.minimum.accumulate(x[::2, 1::3], axis=1), [rng.random((10, 90))]),
        (lambda x: np.add.accumulate(x, axis=0, dtype=np.int8), [rng.integers(0, 120, (30, 4)).astype(np.int64)]),
        (lambda b: np.cumsum(b, axis=1), [rng.random((6, 70)) < 0.5]),
        (lambda x: np.cumsum(x, axis=1), [(rng.random((3, 900)) * 3).astype(np.float16)]),
        (lambda x: np.cumsum(x, axis=0, dtype=np.float16), [rng.random((300, 3)).astype(np.float32)]),
        (lambda x: np.logical_or.accumulate(x, axis=1) ^ np.logical_and.accumulate(x, axis=0),
         [rng.random((8, 9)) < 0.3]),
        (lambda x: np.cumsum(x, axis=-1) - x[:, :1], [rng.integers(-9, 9, (1001, 16)).astype(np.int32)]),   # packed rows
        (lambda x: np.cumprod(x, axis=-1), [rng.integers(1, 3, (7, 9, 20)).astype(np.int64)]),
        (lambda x: np.cumsum(x, axis=-1), [rng.integers(-9, 9, (3, 5, 300)).astype(np.float32)]),
    ]
    for k, (fn, args) in enumerate(cases):
        with np.errstate(all="ignore"):
            want = np.asarray(fn(*args))
            got = run_jit(fn, backend, *args)
        _exact(got, want, backend)


def test_empty_and_long_rows(backend, run_jit):
    """An empty array scans to an empty one (no kernel); long rows and many short rows."""
    rng = np.random.default_rng(4)
    for fn, x in [(lambda x: np.cumsum(x, axis=1), np.zeros((0, 5), np.float32)),
                  (lambda x: np.cumsum(x, axis=0), np.zeros((3, 0), np.int32)),
                  (lambda x: np.cumsum(x * 2, axis=1), rng.integers(-5, 5, (3, 100_000)).astype(np.int32)),
                  (lambda x: np.maximum.accumulate(x, axis=1), rng.random((5000, 3)).astype(np.float32)),
                  (lambda x: np.cumsum(x * 0.5), rng.integers(-8, 8, 3_000_001).astype(np.float64)),   # exact sums
                  (lambda x: np.minimum.accumulate(x, axis=-1), rng.random((2, 500_000)).astype(np.float32))]:
        _exact(run_jit(fn, backend, x), np.asarray(fn(x)), backend)


def test_long_float32_cumsum(backend, run_jit):
    """A million float32 terms: NumPy's left-to-right float32 loop drifts 8e-4 from the exact sums
    (its result is the CPU's and Numba-CUDA's, bit for bit); CUDA C's tree over a warp's lanes and
    chunks stays within float32's tolerance row of the exact (float64) sums."""
    x = np.maximum(np.random.default_rng(8).random(1_000_003).astype(np.float32), np.float32(0.1))
    got = run_jit(lambda x: np.cumsum(x), backend, x)
    if backend == "cuda":
        assert_matches_numpy(got, np.cumsum(x.astype(np.float64)).astype(np.float32))
    else:
        _exact(got, np.cumsum(x))


def test_errors_name_the_call_and_line():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(UnsupportedError, match=r"np\.subtract\.accumulate.*test_scans\.py"):
        kfuse.jit(lambda x: np.subtract.accumulate(x), fullgraph=True)(x)
    with pytest.raises(UnsupportedError, match=r"np\.cumsum with out=.*test_scans\.py"):
        kfuse.jit(lambda x: np.cumsum(x, out=x), fullgraph=True)(x)
    with pytest.raises(np.exceptions.AxisError, match=r"axis 2 .*test_scans\.py"):
        kfuse.jit(lambda x: np.cumsum(x, axis=2))(x)
    with pytest.raises(TypeError, match=r"test_scans\.py"):         # NumPy: cannot accumulate a 0-d
        kfuse.jit(lambda s: np.add.accumulate(s))(np.float32(1))


def test_plan_fuses_producers_and_consumers():
    """``cumsum(x * y) / 3`` is one scan kernel reading x and y once; a reduction or a scan along
    another axis is a kernel of its own, with the reason recorded."""
    p = str(kfuse.explain(kfuse.jit(lambda x, y: np.cumsum(x * y, axis=1) / 3), "f32[64,128]", "f32[128]"))
    assert "1 kernel(s)" in p and "kernel 0: scan along axis 1" in p and "multiply cumsum divide" in p
    p = str(kfuse.explain(kfuse.jit(lambda x: np.cumsum(x, axis=1) / x.sum(axis=1, keepdims=True)), "f32[64,128]"))
    assert "2 kernel(s)" in p and "shares no kernel with a reduction" in p
    p = str(kfuse.explain(kfuse.jit(lambda x: np.cumsum(x, axis=1) + np.cumsum(x, axis=0)), "f32[64,128]"))
    assert "2 kernel(s)" in p and "scans over different axes" in p
    p = str(kfuse.explain(kfuse.jit(lambda x: np.cumsum(x, axis=1)[:, ::-1] + 1), "f32[64,128]"))
    assert "2 kernel(s)" in p and "would read another position" in p
