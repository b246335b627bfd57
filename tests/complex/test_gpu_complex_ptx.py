"""Complex64/complex128 kernels compile on both GPU backends without a GPU: each kernel's CUDA C
(NVRTC) or Numba-CUDA source becomes PTX that ptxas accepts for sm_90. CUDA C: every complex op of
NumPy's table, the parts, casts to and from real dtypes, reductions, scans, arg-reductions, a
product's epilogue and ``np.add.at``; Numba-CUDA: the same kernel shapes on a cheaper set of ops
(its compiler inlines the helpers of every op into the kernel: the costly ones, the inverse
functions and powers, take a minute each here; their templates are checked against NumPy by
``test_gpu_complex_helpers.py``). The values are checked on a GPU by the op-record table and
``tests/complex/`` (both backends have Feature.COMPLEX)."""
import warnings

import numpy as np
import pytest

import kfuse
from kfuse.backends import CapabilityRefusal

from tests.codegen.ptx_backends import compile_to_ptx
from tests.complex.test_gpu_complex_helpers import BINARY, UNARY

OTHER_UNARY = ("negative", "positive", "conjugate", "rint", "absolute", "isnan", "isinf", "isfinite",
               "logical_not")
OTHER_BINARY = ("add", "subtract", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                "logical_and", "logical_or", "logical_xor")


def every_op(x, y):
    outs = [getattr(np, u)(x) for u in tuple(UNARY) + OTHER_UNARY]
    outs += [getattr(np, b)(x, y) for b in tuple(BINARY) + OTHER_BINARY]
    return outs + [x.real, x.imag, np.angle(x), x ** 3, x ** 2.5, np.round(x, 2), np.nan_to_num(x), x.astype(np.complex128),
                   x.astype(np.complex64), x.astype(np.float16), x.astype(np.int32), x.astype(bool),
                   np.where(x.real > 0, x, y * 1j)]


def cheap_ops(x, y, f, i):
    return (x * y - x / y, np.abs(x), x.real + y.imag, np.conj(x), x == y, x < y, np.maximum(x, y), np.round(x, 1),
            np.exp(x), np.log(y), np.sqrt(x), x * f, (x + i).astype(np.complex64), f.astype(x.dtype),
            x.astype(np.float32), x.astype(bool), np.isnan(x))


def reductions(x, y):
    return ((x * y).sum(axis=-1), x.prod(axis=0), x.mean(), np.abs(x).max(), x.max(axis=-1), y.min(axis=0),
            x.argmax(axis=-1), np.argmin(y, axis=0), np.cumsum(x, axis=-1), np.cumprod(y, axis=0),
            np.maximum.accumulate(x, axis=-1), (x - x.mean(axis=-1, keepdims=True)) / np.abs(x).sum())


def product(x, y):
    return np.exp(x @ y.T) + 1j


def add_at(t, i, v):
    np.add.at(t, i, v)
    np.subtract.at(t, i[::2], v[::2])
    return t


def _ptx(fn, backend, specs, tmp_path, tag):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # ComplexWarning of the real casts
        return compile_to_ptx(fn, backend, specs, tmp_path, tag)


@pytest.mark.backends("cuda", emit_only=True)
@pytest.mark.parametrize("dt", ["c64", "c128"])
def test_every_complex_op_compiles_to_ptx(dt, backend, tmp_path):
    src = _ptx(every_op, backend, (f"{dt}[256]", f"{dt}[256]"), tmp_path, dt)
    assert "kf_cpow(" in src and "kf_casinh(" in src and "kf_cmaxmin<" in src
    assert "struct __align__(2 * sizeof(T)) KfCx" in src      # the complex prelude rode along


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
@pytest.mark.parametrize("dt", ["c64", "c128"])
def test_complex_elementwise_kernels_compile_to_ptx(dt, backend, tmp_path):
    if backend == "numba-cuda" and dt == "c64":
        pytest.skip("numba-cuda: one dtype a kernel shape (a minute of Numba's compiler each)")
    ft = "f32" if dt == "c64" else "f64"
    src = _ptx(cheap_ops, backend, (f"{dt}[64,256]", f"{dt}[64,256]", f"{ft}[64,256]", "i64[64,256]"),
               tmp_path, f"ew{dt}")
    if backend == "cuda":       # two complex64 a 16-byte vector, one complex128
        assert ("KfVec<kf_c64, 2>" in src) if dt == "c64" else ("KfVec<kf_c128, 2>" not in src)
    else:
        assert "_cxfmul_complex128" in src and "T.complex128" in src


@pytest.mark.backends("cuda", "numba-cuda", emit_only=True)
@pytest.mark.parametrize("dt", ["c64", "c128"])
def test_complex_reduction_kernels_compile_to_ptx(dt, backend, tmp_path):
    if backend == "numba-cuda" and dt == "c128":
        pytest.skip("numba-cuda: one dtype a kernel shape (a minute of Numba's compiler each)")
    src = _ptx(reductions, backend, (f"{dt}[64,512]", f"{dt}[64,512]"), tmp_path, f"red{dt}")
    if backend == "cuda":
        assert "kf_argcomb<kf_c" in src and "kf_cprodscan(" in src
    else:           # a warp's complex partials meet part by part
        assert "_cxargmax_complex64" in src and ".real, m_)" in src and " if _Fv" in src


@pytest.mark.backends("cuda", emit_only=True)
def test_complex_product_epilogue_and_add_at_compile(backend, tmp_path):
    src = _ptx(product, backend, ("c64[32,64]", "c64[48,64]"), tmp_path, "mm")
    assert "kf_cexp(" in src
    src = _ptx(add_at, backend, ("c128[100]", "i64[40]", "c128[40]"), tmp_path, "at")
    assert "atomicAdd(&ep_->re, " in src and "atomicAdd(&ep_->im, -" in src


def test_gpu_backends_plan_complex_without_refusal():
    """Both GPU backends have Feature.COMPLEX: a complex plan has no capability refusal; the
    numba-cuda backend still refuses what it refuses for real values (a product)."""
    for backend in ("cuda", "numba-cuda"):
        plan = kfuse.jit(lambda z: np.exp(z) * 2, backend=backend).lower("c64[64]").plan
        assert not [r for r in plan.refused if isinstance(r, CapabilityRefusal)], backend
    plan = kfuse.jit(product, backend="numba-cuda").lower("c64[8,8]", "c64[8,8]").plan
    (r,) = [r for r in plan.refused if isinstance(r, CapabilityRefusal)]
    assert "matmul is not supported" in r.reason
