"""``np.linalg.norm``, ``vector_norm`` and ``matrix_norm`` (kfuse/trace/norms.py) on every backend
against NumPy: vector orders inf/-inf/0/1/2/p, matrix orders fro/1/-1/inf/-inf over any two axes,
keepdims, integer and boolean input in float64, float16 kept; NumPy's errors for bad orders and
an UnsupportedError for the singular-value norms."""
import math

import numpy as np
import pytest

import kfuse
from kfuse.errors import UnsupportedError
from tolerance import assert_matches_numpy


def _vec(ord, **kw):
    return lambda a: np.linalg.norm(a, ord=ord, **kw)


CASES = {
    "whole": lambda a: np.linalg.norm(a),
    "whole_keepdims": lambda a: np.linalg.norm(a, keepdims=True),
    "rows_2": _vec(None, axis=-1),
    "rows_1": _vec(1, axis=1, keepdims=True),
    "rows_inf": _vec(math.inf, axis=0),
    "rows_-inf": _vec(-math.inf, axis=-1),
    "rows_0": _vec(0, axis=2),
    "rows_3": _vec(3, axis=1),
    "rows_half": _vec(0.5, axis=-1),
    "fro": _vec("fro", axis=(2, 0)),
    "mat_1": _vec(1, axis=(0, 1), keepdims=True),
    "mat_-1": _vec(-1, axis=(1, 0)),
    "mat_inf": _vec(math.inf, axis=(-2, -1)),
    "mat_-inf": _vec(-math.inf, axis=(0, 2)),
    "vector_norm": lambda a: np.linalg.vector_norm(a, axis=(0, 2), keepdims=True) + np.linalg.vector_norm(a, ord=1),
    "matrix_norm": lambda a: np.linalg.matrix_norm(a, ord=math.inf) * np.linalg.matrix_norm(a, keepdims=True)[0],
    "fused": lambda a: a / np.linalg.norm(a, axis=-1, keepdims=True),
}


@pytest.mark.parametrize("dtype", ["float32", "int16", "float16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_norms_match_numpy(backend, name, dtype, run_jit):
    a = (np.random.default_rng(2).standard_normal((4, 5, 6)) * 3).astype(dtype)
    a[1, 2, :] = 0
    fn = CASES[name]
    with np.errstate(all="ignore"):
        want = np.asarray(fn(a))
        got = run_jit(fn, backend, a)
    assert_matches_numpy(got, want, reductions=True)


def test_norm_errors():
    a = np.ones((3, 4, 5), np.float32)
    with pytest.raises(UnsupportedError, match=r"ord=2 of a matrix.*test_norms\.py"):
        kfuse.jit(lambda a: np.linalg.norm(a, 2, axis=(0, 1)), fullgraph=True)(a)
    with pytest.raises(ValueError, match=r"Invalid norm order 'fro' for vectors.*test_norms\.py"):
        kfuse.jit(lambda a: np.linalg.norm(a, "fro", axis=1))(a)
    with pytest.raises(ValueError, match="Improper number of dimensions"):
        kfuse.jit(lambda a: np.linalg.norm(a, axis=(0, 1, 2)))(a)
    with pytest.raises(ValueError, match="Duplicate axes"):
        kfuse.jit(lambda a: np.linalg.norm(a, axis=(1, -2)))(a)


def test_normalising_rows_is_one_kernel():
    """``x / norm(x, axis=-1, keepdims=True)``: a row kernel (the norm's sum, then the divide)."""
    p = str(kfuse.explain(kfuse.jit(lambda a: a / np.linalg.norm(a, axis=-1, keepdims=True)), "f32[64,256]"))
    assert "1 kernel(s)" in p
