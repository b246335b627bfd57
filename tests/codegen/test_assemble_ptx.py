"""Kernels with PAD (concatenation, np.pad, item assignment into a region, a reduction over a
padded row) compile on both GPU backends without a GPU: their index tests (``K.Index``
statements) become PTX that ptxas accepts for sm_90. A pad along the innermost dim keeps the CUDA
C elementwise kernel's 16-byte stores and contiguous loads, the padded piece gathered lane by
lane; a pad along an outer dim keeps every access a vector. Values are checked on a GPU by tests/ops/test_assemble.py
and tests/semantics/test_mutation.py."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda_shapes
from tests.codegen.ptx_backends import compile_to_ptx


def rotary(a):
    return a * 0.5 + np.concatenate([-a[:, 8:], a[:, :8]], axis=-1)


def rows_then_pad(a):
    return np.concatenate([a, a[:2] * 2], axis=0)


def padded_softmax(a):
    e = np.exp(np.pad(a, ((0, 0), (1, 3)), constant_values=-np.inf))
    return e / e.sum(axis=1, keepdims=True)


def region_write(a):
    b = a.copy()
    b[1::2, ::-3] = 0
    b[b > 1] += 1
    return b


FUNCS = [rotary, rows_then_pad, padded_softmax, region_write]


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
@pytest.mark.parametrize("dtype", ["f32", "f16", "f64", "i32"])
@pytest.mark.parametrize("fn", FUNCS, ids=lambda f: f.__name__)
def test_pad_kernels_compile_to_ptx(fn, dtype, backend, tmp_path):
    if fn is padded_softmax and dtype == "i32":
        pytest.skip("softmax of integers")
    src = compile_to_ptx(fn, backend, (f"{dtype}[64,16]",), tmp_path, f"{fn.__name__}_{dtype}")
    assert ("long long" in src) if backend == "cuda" else ("np.int64(" in src)


def transposed_sum(a):
    return a.T + a


@pytest.mark.parametrize("fn, vector", [(rotary, True), (rows_then_pad, True), (transposed_sum, False)])
def test_vector_variant_with_pads(fn, vector):
    """A pad along the innermost dim gathers its piece lane by lane in the vector variant; a
    transposed read with no pad keeps the scalar variant."""
    kernels = kfuse.jit(fn, backend="cuda").lower("f32[64,64]").kernels(for_gpu=True)
    assert [cuda_shapes.vector_ok(k) for k in kernels] == [vector]


def test_rotary_vector_kernel_gathers_lane_by_lane(tmp_path):
    from kfuse.codegen import cuda, nvrtc
    kernels = kfuse.jit(rotary, backend="cuda").lower("f32[64,64]").kernels(for_gpu=True)
    variant = cuda_shapes.default_variant(kernels[0])
    assert variant.vec == 4
    src = cuda.emit(kernels[0], variant)
    assert "const IDX ib_ = i1;" in src and "const IDX i1 = ib_ + e_;" in src
    assert ".entry" in nvrtc.compile(src, arch="sm_90").ptx
