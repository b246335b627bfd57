"""Attention as one kernel on the GPU (``fusion.attention``, ``codegen.attention_cuda``): results
of NumPy-style attention functions against the same function in float64 (within the operand
dtype's tolerance, loosened 10x as for long sums: the kernel rounds the softmax's weights to the
operand dtype for the tensor cores, as every fused attention does), over odd sequence lengths,
4-D batch/head dims, head dims 64-256, causal masks (tile skipping), a bias array and soft-capping,
a fully masked row (NaN, as NumPy), float16 CuPy arrays and bfloat16 torch tensors; and the
call's extra device memory growing linearly with the sequence length."""
import math

import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)
import cupy as cp  # noqa: E402

import kfuse  # noqa: E402
from kfuse.fusion.kinds import GroupKind  # noqa: E402
from kfuse.testing import tolerance  # noqa: E402
from attention_fns import bshd, plain, softmax as _softmax  # noqa: E402


def causal(q, k, v):
    T, S = q.shape[-2], k.shape[-2]
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    return _softmax(np.where(np.triu(np.ones((T, S), dtype=bool), k=1), -np.inf, s)) @ v


def causal_tril(q, k, v):
    T, S = q.shape[-2], k.shape[-2]
    s = q @ np.swapaxes(k, -1, -2) * 0.125
    return _softmax(np.where(np.tril(np.ones((T, S), dtype=bool), k=S - T), s, -np.inf)) @ v


def causal_additive(q, k, v):
    T, S = q.shape[-2], k.shape[-2]
    s = q @ np.swapaxes(k, -1, -2) * 0.125 + np.triu(np.full((T, S), -np.inf, dtype=q.dtype), 1)
    return _softmax(s) @ v


def float32_softmax(q, k, v):
    p = _softmax((q @ np.swapaxes(k, -1, -2)).astype(np.float32) * 0.125)
    return p.astype(q.dtype) @ v


def softcap_bias(q, k, v, bias):
    s = q @ np.swapaxes(k, -1, -2) * 0.125 + bias
    return _softmax(20.0 * np.tanh(s / 20.0)) @ v


def kt_given(q, kt, v):
    return _softmax(q @ kt * 0.1) @ v


def masked_rows(q, k, v, mask):
    return _softmax(np.where(mask, -np.inf, q @ np.swapaxes(k, -1, -2))) @ v


def _check(fn, arrays, dtype, expect_attention=True):
    f = kfuse.jit(fn)
    got = f(*arrays)
    host = [cp.asnumpy(a) if isinstance(a, cp.ndarray) else a for a in arrays]
    want = fn(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in host])
    plan = kfuse.explain(f, *arrays)
    kinds = [g.kind for g in plan.groups]
    assert (kinds == [GroupKind.ATTENTION]) == expect_attention, str(plan)
    rtol, atol = tolerance(dtype)
    np.testing.assert_allclose(cp.asnumpy(got).astype(np.float64), want, rtol=10 * rtol, atol=10 * atol,
                               equal_nan=True)


def _randn(shape, dtype, seed):
    return cp.asarray(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


@pytest.mark.parametrize("fn", [plain, causal, causal_tril, causal_additive, float32_softmax])
@pytest.mark.parametrize("shape", [(2, 77, 64), (2, 3, 130, 128), (1, 65, 256), (3, 1, 16, 32)])
def test_float16_attention(fn, shape):
    q, k, v = (_randn(shape, np.float16, s) for s in range(3))
    _check(fn, (q, k, v), np.float16)


def test_more_keys_than_queries_and_transposed_k():
    q = _randn((2, 4, 50, 64), np.float16, 0)
    k, v = _randn((2, 4, 173, 64), np.float16, 1), _randn((2, 4, 173, 64), np.float16, 2)
    _check(causal_tril, (q, k, v), np.float16)
    _check(kt_given, (q, cp.ascontiguousarray(cp.swapaxes(k, -1, -2)), v), np.float16)
    _check(plain, (q[:, :, ::2], k[:, :, 1:], v[:, :, 1:]), np.float16)        # strided views


def test_grouped_query_k_and_v_shared_across_heads():
    """k and v of (B, Hkv, 1, S, d) broadcast over G query heads: read with a batch stride 0."""
    q = _randn((2, 3, 4, 70, 64), np.float16, 0)
    k, v = _randn((2, 3, 1, 70, 64), np.float16, 1), _randn((2, 3, 1, 70, 64), np.float16, 2)
    _check(plain, (q, k, v), np.float16)
    _check(causal, (q, k, v), np.float16)


def test_permuted_bshd_layout_read_through_strides():
    q, k, v = (_randn((2, 90, 3, 64), np.float16, s) for s in range(3))
    _check(bshd, (q, k, v), np.float16)


def test_bias_and_softcap():
    q, k, v = (_randn((2, 3, 100, 64), np.float16, s) for s in range(3))
    bias = _randn((100, 100), np.float16, 5)
    _check(softcap_bias, (q, k, v, bias), np.float16)


def test_fully_masked_row_is_nan_as_numpy():
    q, k, v = (_randn((2, 40, 64), np.float16, s) for s in range(3))
    mask = np.zeros((40, 40), dtype=bool)
    mask[3] = True
    mask[7, 5:] = True
    _check(masked_rows, (q, k, v, cp.asarray(mask)), np.float16)
    got = cp.asnumpy(kfuse.jit(masked_rows)(q, k, v, cp.asarray(mask)))
    assert np.isnan(got[:, 3]).all() and not np.isnan(got[:, 7]).any()


@pytest.mark.parametrize("fn", [plain, causal])
def test_bfloat16_torch_tensors(fn):
    torch = pytest.importorskip("torch")
    q, k, v = (torch.randn(2, 3, 99, 128, device="cuda", dtype=torch.bfloat16, generator=torch.Generator("cuda").manual_seed(s))
               for s in range(3))
    f = kfuse.jit(fn)
    got = f(q, k, v)
    assert got.dtype == torch.float32            # NumPy's bfloat16 matmul returns float32
    assert [g.kind for g in kfuse.explain(f, q, k, v).groups] == [GroupKind.ATTENTION]
    want = fn(*[t.double().cpu().numpy() for t in (q, k, v)])
    import ml_dtypes
    rtol, atol = tolerance(ml_dtypes.bfloat16)
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=10 * rtol, atol=10 * atol)


def test_extra_memory_is_linear_in_the_sequence():
    """The call's peak extra device memory (beyond q, k, v) at two lengths: x4 the length gives
    ~x4 the memory (its output), not x16 (a score matrix)."""
    pool = cp.get_default_memory_pool()
    extra = []
    for S in (1024, 4096):
        q, k, v = (_randn((4, S, 64), np.float16, s) for s in range(3))
        f = kfuse.jit(plain)
        f(q, k, v)                                   # compile, then measure a clean call
        cp.cuda.Device().synchronize()
        pool.free_all_blocks()
        before = pool.total_bytes()
        out = f(q, k, v)
        cp.cuda.Device().synchronize()
        extra.append(pool.total_bytes() - before)
        del out
    assert extra[0] > 0 and extra[1] / extra[0] < 6, extra
