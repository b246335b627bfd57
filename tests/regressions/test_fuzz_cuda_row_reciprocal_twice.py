"""Found by `kfuse fuzz --seed 75` (program 2934, backend cuda; docs/FUZZING.md 37, older than
this session's scan kind): ``v0 = a0 / 2.0; return v0.min(), v0`` did not compile. In a row kernel
a float32 division by a row-level value goes through its float64 reciprocal, declared before the
phase's loop; two phases dividing by the same value (here the constant 2.0: the min pass and the
store pass) declared ``rd_<v>`` twice in one scope (NVRTC: "already been declared"). It is now
declared once a row (kfuse/codegen/cuda.py ``reduce``). The PTX check runs without a GPU."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda, cuda_shapes


def fuzz_fn(a0):
    v0 = a0 / 2.0
    return v0.min(), v0


def softmax_like(x):
    m = x.max(axis=1, keepdims=True)
    return x / m, (x / m).sum(axis=1)


@pytest.mark.parametrize("fn,spec", [(fuzz_fn, "f32[1,3,4]"), (softmax_like, "f32[8,64]")])
def test_row_reciprocal_is_declared_once(fn, spec):
    pytest.importorskip("cuda.bindings.nvrtc")
    from kfuse.codegen import nvrtc
    for k in kfuse.jit(fn, backend="cuda").lower(spec).kernels(for_gpu=True):
        src = cuda.emit(k, cuda_shapes.default_variant(k))
        decls = [ln.strip() for ln in src.splitlines() if ln.strip().startswith("const double rd_")]
        assert len(decls) == len(set(decls))
        assert ".entry" in nvrtc.compile(src, arch="sm_90").ptx


@pytest.mark.gpu
def test_fuzz_cuda_s75_p2934(cupy_for):
    cp = cupy_for("cuda")
    a0 = np.array([1.0] * 6 + [0.0] * 6, dtype=np.float32).reshape((1, 3, 4))
    got = kfuse.jit(fuzz_fn, backend="cuda")(cp.asarray(a0))
    want = fuzz_fn(a0)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(cp.asnumpy(g), w)
