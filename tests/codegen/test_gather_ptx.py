"""Kernels with GATHER (integer-array indexing) compile on both GPU backends without a GPU: the
position read from an index array (an ``IVal`` in a load's index) becomes PTX that ptxas accepts
for sm_90. The CUDA C elementwise kernel keeps its 16-byte vector stores and the index array's
vector loads; the gathered element is loaded lane by lane, after the statements computing its
position. Values are checked on a GPU by tests/ops/test_indexing.py."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda_shapes
from kfuse.codegen import kernel_ir as K
from tests.codegen.ptx_backends import compile_to_ptx


def embedding(table, idx):
    return table[idx] * 2.0


def pairs(a, idx):
    return a[idx, idx[::-1]] + 1


def along_rows(a, idx):
    return np.take_along_axis(a, idx, axis=1).sum(axis=1)


def picked_logits(a, idx):
    m = a.max(axis=1, keepdims=True)
    return a[np.arange(a.shape[0]), idx[:, 0]] - m[:, 0]


def gathered_pad(a, idx):
    """A gather of a concatenation: the PAD's index tests read the gathered position (numba-cuda
    seed 72 #326, #591, #1051, #1461: those tests were emitted before the position, or dropped)."""
    return np.concatenate([a, a[:3] * 2])[idx[:, 0] % 67] + 1


FUNCS = [embedding, pairs, along_rows, picked_logits, gathered_pad]


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
@pytest.mark.parametrize("dtype, itype", [("f32", "i64"), ("f16", "i32"), ("f64", "u8"), ("i32", "i64")])
@pytest.mark.parametrize("fn", FUNCS, ids=lambda f: f.__name__)
def test_gather_kernels_compile_to_ptx(fn, dtype, itype, backend, tmp_path):
    src = compile_to_ptx(fn, backend, (f"{dtype}[64,16]", f"{itype}[64,16]"), tmp_path,
                         f"{fn.__name__}_{dtype}_{itype}")
    clamp = "kf_imin<long long>(" if backend == "cuda" else " <= "      # the position's clamp
    assert clamp in src


def test_embedding_rows_are_vector_loads():
    """An embedding row is contiguous: the position is computed once a vector unit from the index
    (read once, not a lane's vector: an int64 index does not halve the float32 vector), then the
    row is loaded and stored 16 bytes at a time. A position that changes along the row (a
    transposed gather) is loaded lane by lane."""
    from kfuse.codegen import cuda
    kernels = kfuse.jit(embedding, backend="cuda").lower("f32[1000,64]", "i64[32]").kernels(for_gpu=True)
    ew = [k for k in kernels if k.kind == "elementwise"]
    assert len(ew) == 1 and cuda_shapes.vector_ok(ew[0]) and cuda_shapes.lane_itemsize(ew[0]) == 4
    loads = [s for s in ew[0].phases[0].pre if isinstance(s, K.Load)]
    assert [K.gathers(s.index) for s in loads] == [False, True]
    src = cuda.emit(ew[0])
    assert "KfVec<float, 4>*>(in0 + ((IDX)v" in src and "KfVec<float, 4>*>(out0" in src
    assert src.index("kf_imin<long long>(") < src.index("for (int e_ = 0")     # once a unit

    kernels = kfuse.jit(lambda t, i: t[i].T * 2.0, backend="cuda").lower("f32[1000,64]", "i64[32]").kernels(for_gpu=True)
    src = cuda.emit([k for k in kernels if k.kind == "elementwise"][0])
    lanes = src[src.index("for (int e_ = 0"):]
    assert "in0[(IDX)v" in lanes and "kf_imin<long long>(" in lanes            # a lane's own position


def test_row_kernels_with_gathers_are_scalar():
    """A reduce kernel that gathers runs element by element (no vector row loads)."""
    kernels = kfuse.jit(along_rows, backend="cuda").lower("f32[64,128]", "i64[64,128]").kernels(for_gpu=True)
    red = [k for k in kernels if k.kind == "reduce" and any(
        K.gathers(s.index) for ph in k.phases for s in ph.body if isinstance(s, K.Load))]
    assert red and all(cuda_shapes.vector_accesses(k) is None for k in red)
    assert all(cuda_shapes.default_variant(k).vec == 1 for k in red)
