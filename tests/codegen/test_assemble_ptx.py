"""Kernels with PAD (concatenation, np.pad, item assignment into a region, a reduction over a
padded row) compile on both GPU backends without a GPU: their index tests (``K.Index``
statements) become PTX that ptxas accepts for sm_90. A pad along the innermost dim keeps the CUDA
C elementwise kernel scalar (the vector lanes would share that index); a pad along an outer dim
keeps the 16-byte vector accesses. Values are checked on a GPU by tests/runtime/test_assemble_jit.py
and tests/runtime/test_mutation_jit.py."""
import numpy as np
import pytest

import kfuse
from kfuse.codegen import cuda_shapes
from tests.codegen.ptx_backends import BACKENDS, compile_to_ptx


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


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["f32", "f16", "f64", "i32"])
@pytest.mark.parametrize("fn", FUNCS, ids=lambda f: f.__name__)
def test_pad_kernels_compile_to_ptx(fn, dtype, backend, tmp_path):
    if fn is padded_softmax and dtype == "i32":
        pytest.skip("softmax of integers")
    src = compile_to_ptx(fn, backend, (f"{dtype}[64,16]",), tmp_path, f"{fn.__name__}_{dtype}")
    assert ("long long" in src) if backend == "cuda" else ("np.int64(" in src)


@pytest.mark.parametrize("fn, vector", [(rotary, False), (rows_then_pad, True)])
def test_vector_access_only_when_the_pad_is_outer(fn, vector):
    kernels = kfuse.jit(fn, backend="cuda").lower("f32[64,16]").kernels(for_gpu=True)
    assert [cuda_shapes.vector_ok(k) for k in kernels] == [vector]
