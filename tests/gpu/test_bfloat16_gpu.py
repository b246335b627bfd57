"""bfloat16 torch CUDA tensors through ``kfuse.jit`` (CUDA C backend): zero-copy in, torch bfloat16
tensors out; each op computed in float32 and rounded to bfloat16 (as ml_dtypes' NumPy loops and
torch's eager ops), reductions accumulated in float64; conversions to bfloat16 rounded once, to
nearest even, bit for bit."""
import fractions
import math

import ml_dtypes
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)
torch = pytest.importorskip("torch")

import cupy as cp  # noqa: E402

import kfuse  # noqa: E402
from kfuse.runtime import interop  # noqa: E402
from tolerance import assert_matches_numpy, tolerance  # noqa: E402

BF = np.dtype(ml_dtypes.bfloat16)
BF16_MAX = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
RNG = np.random.default_rng(7)
ULP = 2.0 ** -7                  # bfloat16's epsilon: 8 significant bits
RTOL, ATOL = tolerance(np.dtype(ml_dtypes.bfloat16))


def _t(a):
    """A NumPy array (ml_dtypes bfloat16 included) as a torch CUDA tensor with the same bits."""
    if a.dtype == BF:
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).cuda().view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def _np(t):
    assert t.is_cuda
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).cpu().numpy().view(BF)
    return t.cpu().numpy()


def _bf(shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32).astype(BF)


def test_elementwise_chain_on_bf16_tensors_matches_ml_dtypes():
    x, y, z = _bf((64, 256)), _bf((64, 256)), RNG.standard_normal(256).astype(np.float32)

    def f(x, y, z, half=0.5):
        return np.tanh(x * half + y), x * z, np.maximum(x, y) - 1, x > y
    tx, ty, tz = _t(x), _t(y), _t(z)
    before = [t.clone() for t in (tx, ty, tz)]
    got = kfuse.jit(f)(tx, ty, tz)
    # kfuse keeps bf16 * 0.5 in bfloat16 (as NumPy's float16, and torch); ml_dtypes' NumPy makes it
    # float32, so the reference's scalar is a bfloat16 one
    want = f(x, y, z, half=ml_dtypes.bfloat16(0.5))
    assert [g.dtype for g in got] == [torch.bfloat16, torch.float32, torch.bfloat16, torch.bool]
    assert all(g.device == tx.device for g in got)
    for g, w in zip(got, want):
        assert_matches_numpy(_np(g), w)
    assert all(torch.equal(a, b) for a, b in zip((tx, ty, tz), before))     # inputs untouched


def _ref32(fn, *arrays):
    """``fn`` on the float32 values of ``arrays``, rounded once to bfloat16 (torch's own way)."""
    return fn(*[a.astype(np.float32) for a in arrays]).astype(BF).astype(np.float32)


def _layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("rows, cols", [(128, 1024), (33, 4096), (7, 100)])
def test_row_kernels_on_bf16_tensors(rows, cols):
    """Per-op rounding in bfloat16 against a float32 computation rounded once: within 4 bfloat16
    ulps (a few roundings of 2^-9 each, on values of order 1)."""
    x, g, b = _bf((rows, cols)), _bf(cols), _bf(cols)
    ln = _np(kfuse.jit(_layernorm)(_t(x), _t(g), _t(b)))
    sm = _np(kfuse.jit(_softmax)(_t(x)))
    s = _np(kfuse.jit(lambda x: x.sum(axis=1))(_t(x)))
    assert ln.dtype == sm.dtype == s.dtype == BF
    np.testing.assert_allclose(ln.astype(np.float32), _ref32(_layernorm, x, g, b), rtol=3.2e-2, atol=3e-2)
    np.testing.assert_allclose(sm.astype(np.float32), _ref32(_softmax, x), rtol=3.2e-2, atol=1e-5)
    exact = x.astype(np.float64).sum(axis=1).astype(np.float32).astype(BF).astype(np.float32)
    np.testing.assert_allclose(s.astype(np.float32), exact, rtol=8e-3, atol=1e-2)


def _bf16_rne(d: float) -> float:
    """``d`` rounded once to the nearest bfloat16 (ties to even), exactly (Fractions)."""
    if math.isnan(d) or math.isinf(d) or d == 0:
        return d
    q = fractions.Fraction(d)
    e = max(math.frexp(d)[1] - 8, -133)                 # quantum: 8 significant bits, subnormals 2^-133
    scaled = q / fractions.Fraction(2) ** e
    r = math.floor(scaled)
    rem = scaled - r
    r += 1 if rem > fractions.Fraction(1, 2) or (rem == fractions.Fraction(1, 2) and r % 2) else 0
    v = math.copysign(float(fractions.Fraction(r) * fractions.Fraction(2) ** e), d)
    return math.copysign(math.inf, d) if abs(v) > BF16_MAX else v


def test_conversions_to_bf16_round_once_to_nearest_even():
    bits = np.array([0x3F808000, 0x3F818000, 0x3F80FFFF, 0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x00008000,
                     0x00018000, 0x80008000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001, 0x80000000],
                    np.uint32)
    f32 = np.concatenate([bits.view(np.float32), RNG.integers(0, 2 ** 32, 4096, dtype=np.uint64).astype(
        np.uint32).view(np.float32)])
    f64 = np.concatenate([np.array([1 + 3 * 2.0 ** -8 - 2.0 ** -40, 1 + 2.0 ** -8 + 2.0 ** -40,
                                    -(1 + 3 * 2.0 ** -8 - 2.0 ** -40), 3.3895313892515355e38, 3.39e38, 1e300,
                                    2.0 ** -134, 3 * 2.0 ** -135, 1e-300, -0.0, math.nan, math.inf]),
                          RNG.standard_normal(4096) * 2.0 ** RNG.integers(-140, 120, 4096)])
    to_bf = kfuse.jit(lambda a, b: (a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)))
    g32, g64 = (_np(t) for t in to_bf(_t(f32), _t(f64)))
    w32 = f32.astype(BF)                                  # ml_dtypes: float32 -> bfloat16, ties to even
    same = (g32.view(np.uint16) == w32.view(np.uint16)) | (np.isnan(g32.astype(np.float32)) & np.isnan(f32))
    assert same.all(), (f32[~same][:5], g32[~same][:5], w32[~same][:5])
    w64 = np.array([_bf16_rne(float(d)) for d in f64]).astype(np.float32).astype(BF)   # exact in float32
    same = (g64.view(np.uint16) == w64.view(np.uint16)) | (np.isnan(g64.astype(np.float32)) & np.isnan(f64))
    assert same.all(), (f64[~same][:5], g64[~same][:5], w64[~same][:5])


def test_bf16_result_for_a_cupy_caller_is_a_clear_error():
    with pytest.raises(kfuse.UnsupportedError, match="bfloat16 result needs torch tensors"):
        kfuse.jit(lambda x: x.astype(ml_dtypes.bfloat16))(cp.ones(8, cp.float32))


def _same_inputs(ts, before, ptrs):
    """Zero-copy inputs: the same memory, unchanged."""
    assert [t.data_ptr() for t in ts] == ptrs
    assert all(torch.equal(t, b) for t, b in zip(ts, before))


def test_bf16_tensors_go_to_kernels_zero_copy():
    t = torch.arange(12, device="cuda", dtype=torch.float32).to(torch.bfloat16).reshape(3, 4)[:, 1:]
    c = interop.to_cupy(t)
    assert c.dtype == cp.uint16 and c.data.ptr == t.data_ptr() and c.strides == (8, 2)
    back = interop.from_cupy(c, "torch", BF)
    assert back.dtype == torch.bfloat16 and back.data_ptr() == t.data_ptr() and torch.equal(back, t)


@pytest.mark.parametrize("rows, cols", [(128, 1024), (33, 4096), (7, 100)])
def test_row_kernels_match_torch_float32_rounded_once(rows, cols):
    """layernorm (bfloat16 and bfloat16 x with float32 gamma/beta) and softmax on torch bfloat16
    tensors, against torch computing in float32 from the same inputs and rounding once
    (``.float()`` then ``.to(torch.bfloat16)``). kfuse rounds each op's result (as torch's eager
    bf16 ops): a chain of ~5 roundings of 2^-9 each, so 2x the table's rtol (4 ulps), and an atol
    of 2 ulps of the largest terms (|(x - mu) / sd * g| ~ 8) where + b cancels them."""
    x, g, b = (_t(a) for a in (_bf((rows, cols)), _bf(cols), _bf(cols)))
    g32, b32 = g.float(), b.float()
    ts = (x, g, b, g32, b32)
    before, ptrs = [t.clone() for t in ts], [t.data_ptr() for t in ts]
    ln = kfuse.jit(_layernorm)(x, g, b)
    ln_mixed = kfuse.jit(_layernorm)(x, g32, b32)
    sm = kfuse.jit(_softmax)(x)
    _same_inputs(ts, before, ptrs)
    assert (ln.dtype, ln_mixed.dtype, sm.dtype) == (torch.bfloat16, torch.float32, torch.bfloat16)
    assert all(o.device == x.device and o.shape == x.shape for o in (ln, ln_mixed, sm))
    assert not {o.data_ptr() for o in (ln, ln_mixed, sm)} & set(ptrs)
    f = torch.nn.functional
    want_ln = f.layer_norm(x.float(), (cols,), g32, b32, eps=1e-5).to(torch.bfloat16).float()
    want_sm = torch.softmax(x.float(), dim=-1).to(torch.bfloat16).float()
    torch.testing.assert_close(ln.float(), want_ln, rtol=2 * RTOL, atol=16 * ULP)
    torch.testing.assert_close(ln_mixed, want_ln, rtol=2 * RTOL, atol=16 * ULP)
    torch.testing.assert_close(sm.float(), want_sm, rtol=2 * RTOL, atol=ATOL / 100)


@pytest.mark.parametrize("axis", [1, 0, None])
def test_reductions_of_bf16_tensors(axis):
    """sum (float64 accumulator, rounded once: the exact sum of these values rounded to bfloat16),
    mean (float32, rounded once), max/min (exact), all bfloat16 results."""
    xa = _bf((96, 1000))
    x = _t(xa)
    before, ptrs = [x.clone()], [x.data_ptr()]
    got = kfuse.jit(lambda x: (x.sum(axis=axis), x.mean(axis=axis), x.max(axis=axis), x.min(axis=axis)))(x)
    _same_inputs((x,), before, ptrs)
    assert [o.dtype for o in got] == [torch.bfloat16] * 4 and all(o.device == x.device for o in got)
    x64 = xa.astype(np.float64)
    exact = x64.sum(axis=axis)          # exact in float64 (values within 2^-30..2^3, 8 bits each)
    torch.testing.assert_close(got[0].float().cpu(), torch.from_numpy(np.asarray(exact, np.float64)).to(
        torch.bfloat16).float(), rtol=ULP, atol=1e-30)
    mean = torch.from_numpy(np.asarray(x64.mean(axis=axis))).to(torch.bfloat16).float()
    torch.testing.assert_close(got[1].float().cpu(), mean, rtol=ULP, atol=1e-6)
    assert torch.equal(got[2], x.amax(dim=axis) if axis is not None else x.max())
    assert torch.equal(got[3], x.amin(dim=axis) if axis is not None else x.min())


def test_bf16_passthrough_constant_and_scalar_outputs_are_bf16_tensors():
    """An output that is an input, a constant output and a bfloat16 NumPy scalar argument: all
    torch bfloat16 tensors (the uint16 views never leak)."""
    x = _t(_bf((4, 8)))
    got = kfuse.jit(lambda x, s: (x, x * s, np.full_like(x, 2.5, shape=())))(x, ml_dtypes.bfloat16(0.5))
    assert [o.dtype for o in got] == [torch.bfloat16] * 3 and all(o.is_cuda for o in got)
    assert torch.equal(got[0], x) and torch.equal(got[1], x * 0.5) and got[2].item() == 2.5


def _bf16_rne_int(v: int) -> float:
    """Integer ``v`` rounded once to the nearest bfloat16 (ties to even), exactly."""
    a = abs(v)
    e = max(a.bit_length() - 8, 0)
    r, rem = a >> e, a & ((1 << e) - 1)
    if e and (rem > 1 << (e - 1) or (rem == 1 << (e - 1) and r & 1)):
        r += 1
    return math.copysign(float(r << e), v)


def test_64_bit_ints_to_bf16_round_once():
    """int64/uint64 -> bfloat16 in one rounding (float64 would round first past 2^53: 2^62 + 2^55 +
    2^54 - 1 is 2^62 + 2^55, not the tie's even 2^62 + 2^56). The uint64 operand is a CuPy array
    beside a torch tensor: the call is a torch caller's."""
    i = np.concatenate([np.array([2 ** 62 + 2 ** 55 + 2 ** 54 - 1, -(2 ** 62 + 2 ** 55 + 2 ** 54 - 1),
                                  2 ** 30 + 2 ** 22 + 2 ** 21 - 1, 2 ** 63 - 1, -(2 ** 63), 0, 255, 257, -257],
                                 np.int64),
                        RNG.integers(-(2 ** 63), 2 ** 63 - 1, 4096, dtype=np.int64, endpoint=True) >>
                        RNG.integers(0, 63, 4096)])
    u = np.concatenate([np.array([2 ** 64 - 1, 2 ** 63 + 2 ** 56 + 2 ** 55 - 1, 2 ** 63, 0], np.uint64),
                        RNG.integers(0, 2 ** 64 - 1, 4096, dtype=np.uint64, endpoint=True) >> RNG.integers(
                            0, 64, 4096).astype(np.uint64)])
    gi, gu = kfuse.jit(lambda i, u: (i.astype(ml_dtypes.bfloat16), u.astype(ml_dtypes.bfloat16)))(
        _t(i), cp.asarray(u))
    assert gi.dtype == gu.dtype == torch.bfloat16
    wi = np.array([_bf16_rne_int(int(v)) for v in i], np.float32).astype(BF)   # exact in float32
    wu = np.array([_bf16_rne_int(int(v)) for v in u], np.float32).astype(BF)
    assert (_np(gi).view(np.uint16) == wi.view(np.uint16)).all(), i[_np(gi).view(np.uint16) != wi.view(np.uint16)][:5]
    assert (_np(gu).view(np.uint16) == wu.view(np.uint16)).all(), u[_np(gu).view(np.uint16) != wu.view(np.uint16)][:5]


def test_matmul_epilogue_with_a_bf16_output():
    """float32 matmul whose epilogue casts to bfloat16 (cuBLAS product, then the group's kernel
    writing bfloat16 bits): a torch bfloat16 tensor, the float32 result rounded once."""
    a, b = (torch.randn(128, 96, device="cuda"), torch.randn(96, 64, device="cuda"))
    c = torch.randn(64, device="cuda")
    got = kfuse.jit(lambda a, b, c: (a @ b * 2 + c).astype(ml_dtypes.bfloat16))(a, b, c)
    assert got.dtype == torch.bfloat16 and got.device == a.device and got.shape == (128, 64)
    want = (a.double() @ b.double() * 2 + c.double()).float().to(torch.bfloat16)
    torch.testing.assert_close(got.float(), want.float(), rtol=ULP, atol=1e-3)
