"""The row-sort kernel (``codegen.cuda_sort``, run by ``runtime.row_sort``): its source compiles for
every dtype in CI (NVRTC), and on a GPU it equals NumPy's ``np.sort`` bit for bit and
``np.argsort(kind="stable")`` exactly, along every axis, NaNs last, for row lengths that are and are
not powers of two, and CuPy's sort past the shared-memory limit (gpu-marked)."""
import numpy as np
import pytest

from kfuse.codegen import cuda_sort, nvrtc


@pytest.mark.parametrize("dtype", cuda_sort.SORTABLE)
@pytest.mark.parametrize("indices", [False, True])
def test_row_sort_compiles(dtype, indices):
    spec = cuda_sort.RowSort(dtype, indices)
    ptx = nvrtc.compile(cuda_sort.source(spec), "sm_90", name=spec.name).ptx
    assert f".entry {spec.name}(" in ptx and "bar.sync" in ptx


def _values(dtype: str, shape, rng) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        x = rng.standard_normal(shape).astype(dt)
        flat = x.reshape(-1)
        flat[::7] = np.nan
        flat[3::11] = np.inf
        flat[5::13] = -np.inf
        flat[1::17] = flat[2::17]           # ties
        return x
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dt)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", cuda_sort.SORTABLE)
@pytest.mark.parametrize("shape,axis", [((37, 1000), -1), ((64, 4096), 1), ((300, 5, 7), 0),
                                        ((3, 129, 4), 1), ((5, 1), 1), ((2, 70000), -1)])
def test_row_sort_matches_numpy(dtype, shape, axis, cupy_for):
    cp = cupy_for("cuda")
    from kfuse.runtime import row_sort
    x = _values(dtype, shape, np.random.default_rng(3))
    got = row_sort.sort(cp.asarray(x), axis)
    want = np.sort(x, axis=axis)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(cp.asnumpy(got), want, equal_nan=want.dtype.kind == "f")
    idx = row_sort.sort(cp.asarray(x), axis, indices=True)
    assert idx.dtype == np.int64
    assert np.array_equal(cp.asnumpy(idx), np.argsort(x, axis=axis, kind="stable"))
