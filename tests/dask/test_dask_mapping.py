"""How a kfuse function maps onto Dask (run by Dask's synchronous scheduler, in this process):
lazy results, one blockwise task per chunk, row-wise axes rechunked when a row fits
``KFUSE_DASK_ROW_BYTES`` and statistics-then-apply when not, reductions combined by kfuse
kernels, the chunk plan of ``kfuse.explain``, ``UnsupportedError`` for what Dask cannot express,
and a ``JitFunction`` pickled as its Python function."""
import dask
import numpy as np
import pytest

import kfuse
from kfuse import config
from kfuse.testing import assert_matches_numpy

da = pytest.importorskip("dask.array")


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture
def row_bytes(monkeypatch):
    """``row_bytes(n)``: rows larger than n bytes are not rechunked (the config re-read)."""
    def set_to(n):
        monkeypatch.setenv("KFUSE_DASK_ROW_BYTES", str(n))
        config.reload()
    yield set_to
    monkeypatch.undo()
    config.reload()


@kfuse.jit
def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


@kfuse.jit
def col_stats(x):
    return x.mean(axis=0), x.std(axis=0), x.max(axis=0)


RNG = np.random.default_rng(0)
X = RNG.standard_normal((40, 24), dtype=np.float32)
G = RNG.standard_normal(24, dtype=np.float32)
B = RNG.standard_normal(24, dtype=np.float32)


def test_one_blockwise_task_per_chunk_and_lazy():
    x = da.from_array(X, chunks=(10, 24))
    y = layernorm(x, G, B)
    assert isinstance(y, da.Array) and y.chunks == x.chunks
    plan = kfuse.explain(layernorm, x, G, B)
    assert [layer.kind for layer in plan.layers] == ["blockwise"]
    assert plan.layers[0].tasks == x.npartitions
    assert "sum" in plan.layers[0].what and "sqrt" in plan.layers[0].what
    assert_matches_numpy(y.compute(), layernorm.fn(X, G, B))


def test_row_wise_over_a_split_axis_rechunks_it():
    x = da.from_array(X, chunks=(20, 8))
    plan = kfuse.explain(layernorm, x, G, B)
    assert [layer.kind for layer in plan.layers] == ["rechunk", "blockwise"]
    assert plan.rechunks == 1 and plan.moved >= X.nbytes
    assert "rechunk" in str(plan) and "moved between workers" in str(plan)
    assert_matches_numpy(layernorm(x, G, B).compute(), layernorm.fn(X, G, B))


def test_rows_too_large_run_statistics_then_apply(row_bytes):
    row_bytes(16)                  # a 24-float row does not fit: two passes of Dask reductions
    x = da.from_array(X, chunks=(20, 8))
    plan = kfuse.explain(layernorm, x, G, B)
    kinds = [layer.kind for layer in plan.layers]
    assert "rechunk" not in kinds and kinds.count("reduction") == 2
    assert any(layer.what.endswith("(moments)") for layer in plan.layers)    # mean and variance: one pass
    assert_matches_numpy(layernorm(x, G, B).compute(), layernorm.fn(X, G, B))


@pytest.mark.parametrize("chunks", [(10, 24), (40, 6), (10, 6)])
def test_leading_axis_statistics(chunks, row_bytes):
    x64 = X.astype(np.float64)
    for limit in (1 << 20, 16):
        row_bytes(limit)
        got = dask.compute(*col_stats(da.from_array(x64, chunks=chunks)))
        for g, r in zip(got, col_stats.fn(x64)):
            assert_matches_numpy(g, r, reductions=True)


@kfuse.jit
def sum_and_max(x, y, s):
    return (x * y + s).sum(), np.max(x), (x > 0).sum(axis=0)


def test_reductions_to_a_scalar_combine_with_kfuse_kernels():
    x = X.copy()
    x[3, 5] = np.nan
    xs = da.from_array(x, chunks=(7, 5))
    plan = kfuse.explain(sum_and_max, xs, xs, 2.0)
    assert sum(layer.kind == "reduction" for layer in plan.layers) == 3
    got = dask.compute(*sum_and_max(xs, xs, 2.0))
    ref = sum_and_max.fn(x, x, 2.0)
    assert np.isnan(got[1])                                  # max propagates NaN across chunks
    assert_matches_numpy(got[0], ref[0], reductions=True)
    assert_matches_numpy(got[2], ref[2])                     # an exact int64 count


@kfuse.jit
def mlp(a, w, b):
    return np.maximum(a @ w + b, 0.0).astype(np.float32)


def test_matmul_is_dasks_blocked_product_with_the_epilogue_after_it():
    a = RNG.standard_normal((30, 20), dtype=np.float32)
    w = RNG.standard_normal((20, 10), dtype=np.float32)
    A, W = da.from_array(a, chunks=(10, 7)), da.from_array(w, chunks=(7, 5))
    plan = kfuse.explain(mlp, A, W, B[:10])
    assert [layer.kind for layer in plan.layers] == ["matmul", "blockwise"]
    assert_matches_numpy(mlp(A, W, B[:10]).compute(), mlp.fn(a, w, B[:10]), reductions=True)


@kfuse.jit
def running(x):
    return np.cumsum(x, axis=0)


@kfuse.jit
def flat(x):
    return x.reshape(-1) * 2


@kfuse.jit
def argmax_rows(x):
    return np.argmax(x, axis=0)


@kfuse.jit
def writes(x):
    x += 1
    return x


@pytest.mark.parametrize("fn, op", [(running, "cumsum"), (flat, "reshape"), (argmax_rows, "argmax")])
def test_unsupported_names_the_op_and_the_line(fn, op):
    with pytest.raises(kfuse.UnsupportedError) as e:
        fn(da.from_array(X, chunks=(10, 6)))
    assert op in str(e.value) and "test_dask_mapping.py:" in str(e.value)


def test_writing_into_a_dask_argument_is_unsupported():
    with pytest.raises(kfuse.UnsupportedError, match="immutable"):
        writes(da.from_array(X, chunks=(10, 6)))


def test_argmax_along_an_unsplit_axis_runs_in_the_chunk():
    x = da.from_array(X, chunks=(40, 6))
    assert_matches_numpy(argmax_rows(x).compute(), np.argmax(X, axis=0))


def test_pickled_as_its_function_without_compiled_code():
    cloudpickle = pytest.importorskip("cloudpickle")
    layernorm(X, G, B)                                  # compiled here
    assert layernorm.compile_count >= 1
    again = cloudpickle.loads(cloudpickle.dumps(layernorm))
    assert isinstance(again, kfuse.JitFunction) and again.compile_count == 0
    assert again.options == layernorm.options
    assert_matches_numpy(again(X, G, B), layernorm(X, G, B))


@kfuse.jit
def adam(p, g, m, v, lr, t):
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * (g * g)
    return p - lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8), m, v


def test_outputs_of_one_shape_share_a_layer():
    vecs = [RNG.standard_normal(50, dtype=np.float32) for _ in range(4)]
    vecs[3] = np.abs(vecs[3])
    args = [da.from_array(v, chunks=10) for v in vecs]
    plan = kfuse.explain(adam, *args, 1e-3, 3)
    assert [layer.kind for layer in plan.layers] == ["blockwise"] and plan.layers[0].tasks == 5
    for got, ref in zip(dask.compute(*adam(*args, 1e-3, 3)), adam.fn(*vecs, 1e-3, 3)):
        assert_matches_numpy(got, ref)


@kfuse.jit
def center(x):
    return x - x.mean()


def test_a_reduction_of_everything_broadcast_back_is_not_one_task():
    x = da.from_array(X, chunks=(10, 6))
    plan = kfuse.explain(center, x)
    assert plan.rechunks == 0 and plan.layers[-1].tasks == x.npartitions
    assert_matches_numpy(center(x).compute(), center.fn(X), reductions=True)


def test_a_rechunk_keeps_blocks_within_the_row_limit(row_bytes):
    row_bytes(24 * 4 * 8)           # eight rows of 24 floats a block, though the array has one column chunk
    x = da.from_array(X, chunks=(40, 8))
    y = layernorm(x, G, B)
    assert max(y.chunks[0]) <= 8 and y.chunks[1] == (24,)
    assert_matches_numpy(y.compute(), layernorm.fn(X, G, B))


@kfuse.jit
def variances(x):
    return x.var(axis=0), x.std(axis=0, ddof=1), np.var(x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_variances_over_split_axes_combine_moments_as_dask_does(dtype):
    x = (X * 3 + 1000).astype(dtype)                # a large mean: a naive sum of squares would lose it
    xs = da.from_array(x, chunks=(7, 5))
    plan = kfuse.explain(variances, xs)
    kinds = [layer.kind for layer in plan.layers]
    assert "rechunk" not in kinds and kinds.count("reduction") == 2      # var and std share theirs
    assert sum(layer.what.endswith("(moments)") for layer in plan.layers) == 2
    got = dask.compute(*variances(xs))
    for g, r in zip(got, variances.fn(x)):
        assert_matches_numpy(g, r, reductions=True)


def test_the_backend_follows_the_chunk_type():
    from kfuse.dask.detect import chunk_backend
    cupy_like = type("ndarray", (), {"__module__": "cupy._core.core"})()
    assert chunk_backend([np.zeros(2)], "auto").name == "cpu"
    assert chunk_backend([np.zeros(2), cupy_like], "auto").name == "cuda"
    assert chunk_backend([cupy_like], "numba-cuda").name == "numba-cuda"
    assert chunk_backend([np.zeros(2)], "cuda").name == "cpu"     # host chunks run on the host
