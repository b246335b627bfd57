"""Kernels with GATHER (integer-array indexing) compile on both GPU backends without a GPU: the
position read from an index array (an ``IVal`` in a load's index) becomes PTX that ptxas accepts
for sm_90. The CUDA C elementwise kernel keeps its 16-byte vector stores and the index array's
vector loads; the gathered element is loaded lane by lane, after the statements computing its
position. Values are checked on a GPU by tests/runtime/test_indexing_jit.py."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda_shapes
from kfuse.codegen import kernel_ir as K
from tests.codegen.ptx_backends import BACKENDS, compile_to_ptx


def embedding(table, idx):
    return table[idx] * 2.0


def pairs(a, idx):
    return a[idx, idx[::-1]] + 1


def along_rows(a, idx):
    return np.take_along_axis(a, idx, axis=1).sum(axis=1)


def picked_logits(a, idx):
    m = a.max(axis=1, keepdims=True)
    return a[np.arange(a.shape[0]), idx[:, 0]] - m[:, 0]


FUNCS = [embedding, pairs, along_rows, picked_logits]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype, itype", [("f32", "i64"), ("f16", "i32"), ("f64", "u8"), ("i32", "i64")])
@pytest.mark.parametrize("fn", FUNCS, ids=lambda f: f.__name__)
def test_gather_kernels_compile_to_ptx(fn, dtype, itype, backend, tmp_path):
    src = compile_to_ptx(fn, backend, (f"{dtype}[64,16]", f"{itype}[64,16]"), tmp_path,
                         f"{fn.__name__}_{dtype}_{itype}")
    clamp = "kf_imin<long long>(" if backend == "cuda" else " <= "      # the position's clamp
    assert clamp in src


def test_embedding_keeps_vector_stores(tmp_path):
    """The gathered rows are stored 16 bytes at a time; the table's element is a scalar load in
    the lane loop, after its position is computed from the (vector-loaded) index."""
    kernels = kfuse.jit(embedding, backend="cuda").lower("f32[1000,64]", "i64[32]").kernels(for_gpu=True)
    ew = [k for k in kernels if k.kind == "elementwise"]
    assert len(ew) == 1 and cuda_shapes.vector_ok(ew[0])
    loads = [s for s in ew[0].phases[0].pre if isinstance(s, K.Load)]
    assert [K.gathers(s.index) for s in loads] == [False, True]
    from kfuse.codegen import cuda
    src = cuda.emit(ew[0])
    lane_loop = src[src.index("for (int e_ = 0"):]
    assert "in0[(IDX)v" in lane_loop and "KfVec<float, 2>*>(out0" in src     # int64 indices: 2 lanes


def test_row_kernels_with_gathers_are_scalar():
    """A reduce kernel that gathers runs element by element (no vector row loads)."""
    kernels = kfuse.jit(along_rows, backend="cuda").lower("f32[64,128]", "i64[64,128]").kernels(for_gpu=True)
    red = [k for k in kernels if k.kind == "reduce" and any(
        K.gathers(s.index) for ph in k.phases for s in ph.body if isinstance(s, K.Load))]
    assert red and all(cuda_shapes.vector_accesses(k) is None for k in red)
    assert all(cuda_shapes.default_variant(k).vec == 1 for k in red)
