"""CuPy chunks take the same path as NumPy chunks (gpu-marked: skipped without a GPU): each task
runs the CUDA C backend on its chunk, reductions combine on the device, and the results match
NumPy's. With ``dask_cuda`` installed, the same on a ``LocalCUDACluster`` (one worker per GPU)."""
import dask
import numpy as np
import pytest

import kfuse
from kfuse.testing import assert_matches_numpy

da = pytest.importorskip("dask.array")
pytestmark = pytest.mark.gpu


@kfuse.jit
def layernorm_gelu(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    d = x - mu
    y = d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5) * g + b
    return 0.5 * y * (1.0 + np.tanh(0.7978845608 * (y + 0.044715 * y * y * y)))


@kfuse.jit
def stats(x, w):
    return x.std(axis=0), (x * 2.0).sum(), np.maximum(x @ w, 0.0)


RNG = np.random.default_rng(5)
X = RNG.standard_normal((96, 64), dtype=np.float32)
G = RNG.standard_normal(64, dtype=np.float32)
B = RNG.standard_normal(64, dtype=np.float32)
W = RNG.standard_normal((64, 32), dtype=np.float32)


def _check(cp, scheduler_get):
    for chunks in [(24, 64), (96, 16), (24, 16)]:
        x = da.from_array(cp.asarray(X), chunks=chunks)
        got = scheduler_get(layernorm_gelu(x, cp.asarray(G), cp.asarray(B)))
        assert isinstance(got, cp.ndarray)
        assert_matches_numpy(cp.asnumpy(got), layernorm_gelu.fn(X, G, B))
        w = da.from_array(cp.asarray(W), chunks=(chunks[1], 16))
        for g, r in zip(scheduler_get(stats(x, w)), stats.fn(X, W)):
            assert_matches_numpy(cp.asnumpy(g), r, reductions=True)


def test_cupy_chunks_run_on_the_gpu(cupy_for):
    cp = cupy_for("cuda")
    with dask.config.set(scheduler="synchronous"):
        _check(cp, lambda v: dask.compute(*v) if isinstance(v, tuple) else v.compute())


def test_a_local_cuda_cluster(cupy_for):
    cp = cupy_for("cuda")
    dask_cuda = pytest.importorskip("dask_cuda")
    distributed = pytest.importorskip("dask.distributed")
    with dask_cuda.LocalCUDACluster(dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        _check(cp, lambda v: client.compute(list(v) if isinstance(v, tuple) else v, sync=True))
