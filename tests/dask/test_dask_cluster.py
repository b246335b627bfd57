"""kfuse functions on Dask arrays computed by a ``dask.distributed.LocalCluster`` of two worker
processes: corpus workloads (elementwise, row-wise along a chunked and an unchunked axis,
leading-axis statistics, a reduction to a scalar, an optimizer step) and a GEMM with its epilogue,
on arrays chunked by rows, by columns and by both, give NumPy's results; a worker killed during a
computation is replaced by Dask and the result is still right. Workers receive the function and
its arguments' specs (``JitFunction.__reduce__``) and compile for themselves."""
import logging
import os
import signal
import time

import numpy as np
import pytest

import kfuse
from kfuse.bench.corpus import BY_NAME, TOLERANCE_CLASSES
from kfuse.testing import assert_matches_numpy

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as c:
        yield c


def _chunks(shape, how):
    """Two or more chunks along the rows, the columns (the last axis) or both (a vector: its one
    axis)."""
    if len(shape) == 1:
        return (-(-shape[0] // 3),)
    rows = max(1, -(-shape[0] // 3))
    cols = max(1, -(-shape[-1] // 3))
    lead = shape[1:-1]
    return {"rows": (rows,) + lead + (shape[-1],), "cols": (shape[0],) + lead + (cols,),
            "both": (rows,) + lead + (cols,)}[how]


# corpus entries by what the issue names; the first argument is the one chunked
WORKLOADS = ["gelu_tanh", "layernorm", "standardize_columns", "huber", "adamw"]


@pytest.mark.parametrize("how", ["rows", "cols", "both"])
def test_corpus_workloads_on_a_cluster(client, how):
    for name in WORKLOADS:
        entry = BY_NAME[name]
        case = entry.case("tiny")
        inputs = case.make_inputs(seed=1)
        fn = kfuse.jit(entry.make(np))
        # every argument of the first one's shape chunked alike (adamw's four vectors), the others
        # passed as NumPy arrays (layernorm's weight and bias)
        args = [da.from_array(a, chunks=_chunks(a.shape, how)) if a.shape == inputs[0].shape else a
                for a in inputs]
        out = fn(*args)
        outs = out if isinstance(out, tuple) else (out,)
        assert all(isinstance(o, da.Array) for o in outs), name          # lazy
        got = client.compute(list(outs), sync=True)
        ref = entry.make(np)(*inputs)
        ref = ref if isinstance(ref, tuple) else (ref,)
        _, long_sums = TOLERANCE_CLASSES[entry.tol]
        for g, r in zip(got, ref):
            assert_matches_numpy(g, r, reductions=long_sums, err_msg=f"{name} chunked by {how}")


@kfuse.jit
def gemm_gelu(a, w, b):
    y = a @ w + b
    return 0.5 * y * (1.0 + np.tanh(0.7978845608 * (y + 0.044715 * y * y * y)))


@pytest.mark.parametrize("how", ["rows", "cols", "both"])
def test_gemm_epilogue_on_a_cluster(client, how):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((24, 18), dtype=np.float32)
    w = rng.standard_normal((18, 12), dtype=np.float32)
    b = rng.standard_normal(12, dtype=np.float32)
    A = da.from_array(a, chunks=_chunks(a.shape, how))
    W = da.from_array(w, chunks=_chunks(w.shape, how))
    got = client.compute(gemm_gelu(A, W, b), sync=True)
    assert_matches_numpy(got, gemm_gelu.fn(a, w, b), reductions=True)


def _slow(block):
    time.sleep(0.25)
    return block


def test_killed_worker_is_recovered(client):
    entry = BY_NAME["layernorm"]
    x, g, b = entry.case("tiny").make_inputs(seed=3)
    x = np.tile(x, (4, 1))                                  # 24 rows: 12 slow tasks
    fn = kfuse.jit(entry.make(np))
    y = fn(da.from_array(x, chunks=(2, x.shape[1])), g, b).map_blocks(_slow, dtype=x.dtype)
    before = client.run(os.getpid)
    future = client.compute(y)
    time.sleep(1.0)
    assert not future.done()
    os.kill(next(iter(before.values())), signal.SIGKILL)    # one worker process, mid-computation
    got = future.result(timeout=120)
    assert_matches_numpy(got, entry.make(np)(x, g, b))
    client.wait_for_workers(2, timeout=60)
    assert set(client.run(os.getpid).values()) != set(before.values())
