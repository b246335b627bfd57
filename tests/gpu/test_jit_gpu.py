"""``kfuse.jit`` end to end on CuPy arrays and torch CUDA tensors (the public API's GPU path)."""
import time

import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

import kfuse  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402

RNG = np.random.default_rng(1)


def gelu_bias(x, w, b):
    y = x * w + b
    return 0.5 * y * (1 + np.tanh(0.7978845608 * (y + 0.044715 * y ** 3)))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def scaled(x, s):
    return x * s + 1, (x > s).sum(axis=0)


@pytest.mark.parametrize("fn,shapes", [
    (gelu_bias, [(257, 129), (129,), (129,)]),
    (softmax, [(100, 1000)]),
    (layernorm, [(64, 4096), (4096,), (4096,)]),
])
def test_jit_cupy_matches_numpy(fn, shapes):
    host = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    out = kfuse.jit(fn)(*[cp.asarray(a) for a in host])
    assert isinstance(out, cp.ndarray)
    assert_matches_numpy(cp.asnumpy(out), fn(*host), reductions=True)


def test_python_scalar_argument_and_tuple_output():
    x = RNG.standard_normal((33, 65)).astype(np.float32)
    f = kfuse.jit(scaled)
    a, c = f(cp.asarray(x), 0.25)
    ea, ec = scaled(x, 0.25)
    assert_matches_numpy(cp.asnumpy(a), ea)
    assert_matches_numpy(cp.asnumpy(c), ec)


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    x = torch.randn(64, 128, device="cuda")
    out = kfuse.jit(softmax)(x)
    assert isinstance(out, torch.Tensor) and out.is_cuda
    assert_matches_numpy(out.cpu().numpy(), softmax(x.cpu().numpy()), reductions=True)


def test_torch_side_stream_bool_and_strided():
    """A torch caller's kernels run on torch's current stream: inputs made on a side stream are
    read after they are written, and the outputs are complete for the work queued after the call
    on that stream (no synchronisation in between). Bool and strided tensors cross zero-copy."""
    torch = pytest.importorskip("torch")
    f = kfuse.jit(lambda x, m: np.where(m, x * 2.0, -x).sum(axis=0))
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)                    # keep the side stream busy (~tens of ms)
        x = torch.arange(4096 * 64, device="cuda", dtype=torch.float32).reshape(4096, 64)[:, ::2]
        m = (torch.arange(4096 * 32, device="cuda") % 3 == 0).reshape(4096, 32)
        out = f(x, m)
        after = out + 1                                  # queued behind the kernel on s
    s.synchronize()
    xh, mh = x.cpu().numpy(), m.cpu().numpy()
    want = np.where(mh, xh * 2.0, -xh).sum(axis=0)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    assert_matches_numpy(out.cpu().numpy(), want, reductions=True)
    assert_matches_numpy(after.cpu().numpy(), want + 1, reductions=True)


_SPIN = r"""extern "C" __global__ void spin(long long cycles) {
  long long t0 = clock64(); while (clock64() - t0 < cycles) { }
}"""


def test_torch_call_waits_for_its_scalar_upload():
    """A scalar argument is uploaded on CuPy's current stream (a fill, no host wait); a torch
    caller's kernels run on torch's stream, which first waits for CuPy's: here CuPy's stream is
    kept busy and torch's is idle, so a kernel that did not wait would read the scalar unwritten."""
    torch = pytest.importorskip("torch")
    import cupy
    spin = cupy.RawKernel(_SPIN, "spin")
    f = kfuse.jit(lambda x, a: x * a + 1.0)
    x = torch.ones(1 << 20, device="cuda")
    s = torch.cuda.Stream()
    for value in (3.5, -0.0, 7.25):
        with cupy.cuda.Stream(non_blocking=True) as busy, torch.cuda.stream(s):
            spin((1,), (1,), (200_000_000,))                 # ~0.1 s on CuPy's current stream
            out = f(x, value)
            busy.synchronize()
        s.synchronize()
        assert out.eq(value + 1.0).all().item(), (value, out[:4])


def test_torch_exchange_is_zero_copy():
    torch = pytest.importorskip("torch")
    from kfuse.runtime.interop import from_cupy, to_cupy
    x = torch.ones(1000, device="cuda")[::2]
    c = to_cupy(x)
    assert c.data.ptr == x.data_ptr() and c.shape == (500,) and c.strides == (8,)
    back = from_cupy(c, "torch")
    assert back.data_ptr() == x.data_ptr() and back.stride() == (2,)
    mask = from_cupy(to_cupy(torch.tensor([True, False], device="cuda")), "torch")
    assert mask.dtype == torch.bool and mask.tolist() == [True, False]


def test_torch_hot_path_views_outputs_passthrough_and_matmul():
    """Cached torch calls reach the kernels as tensor views (no DLPack): a sliced input keeps its
    offset and strides, several outputs come back as torch tensors, an input returned as it is
    comes back as the caller's own tensor, a bfloat16 result is torch.bfloat16, and a matmul group
    (cuBLAS through CuPy views) still runs; every call matches NumPy, the second from the cache."""
    torch = pytest.importorskip("torch")

    def fn(x, w, b, s):
        h = np.tanh(x @ w + b)
        return h, (x * s).sum(axis=1), s, (s * 2).astype(np.float32)

    f = kfuse.jit(fn)
    gen = torch.Generator(device="cuda").manual_seed(3)
    base = torch.randn(70, 48, device="cuda", generator=gen)
    x = base[3:67, 8:40]                                 # storage offset, row stride 48
    w = torch.randn(32, 16, device="cuda", generator=gen)
    b = torch.randn(16, device="cuda", generator=gen)
    s = torch.randn(64, 32, device="cuda", generator=gen).to(torch.bfloat16)
    for _ in range(2):
        h, r, s_back, s2 = f(x, w, b, s.float())
        assert s_back.data_ptr() != 0 and all(isinstance(o, torch.Tensor) and o.is_cuda for o in (h, r, s2))
        xh, wh, bh, sh = (t.float().cpu().numpy() for t in (x, w, b, s))
        eh, er, _, e2 = fn(xh, wh, bh, sh)
        assert_matches_numpy(h.cpu().numpy(), eh, reductions=True)
        assert_matches_numpy(r.cpu().numpy(), er, reductions=True)
        assert_matches_numpy(s2.cpu().numpy(), e2)
    g = kfuse.jit(lambda a, y: (a, y * 2))
    for _ in range(2):
        a_back, y2 = g(x, s)
        assert a_back is x                                 # the caller's tensor, not a copy or a new view
        assert y2.dtype == torch.bfloat16
        assert_matches_numpy(y2.float().cpu().numpy(), s.float().cpu().numpy() * 2)


def test_row_level_division_is_correctly_rounded():
    """x / (a row-level value), float32: the row kernel divides through a float64 reciprocal
    computed once a row; the result equals NumPy's division bit for bit, for magnitudes from
    denormal to near overflow, signed zeros, infinities and 0/0."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((96, 4096)).astype(np.float32)
    x *= (2.0 ** rng.integers(-140, 125, size=(96, 1))).astype(np.float32)
    x[0] = 0.0
    x[1, ::3] = -0.0
    x[2] = np.float32(1e-45)
    x[3, 5] = np.inf
    x[4] = rng.integers(1, 1 << 24, size=4096).astype(np.float32)
    f = kfuse.jit(lambda x: x / np.abs(x).max(axis=1, keepdims=True))
    got = cp.asnumpy(f(cp.asarray(x)))
    with np.errstate(all="ignore"):
        want = x / np.abs(x).max(axis=1, keepdims=True)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (np.argwhere(~same)[:5], got[~same][:5], want[~same][:5])


def test_host_mixed_with_device_is_an_error():
    f = kfuse.jit(lambda x, y: x + y)
    with pytest.raises(kfuse.DeviceError):
        f(np.ones(4, np.float32), cp.ones(4, cp.float32))


def _torch_call_us(f, n):
    """Host µs of a cached kfuse call on a 1024-element torch tensor (None without torch)."""
    try:
        import torch
    except ImportError:
        return None
    t = torch.ones(1024, device="cuda")
    f(t)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        f(t)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def test_hot_call_overhead_reported(capsys):
    x = cp.ones(1024, cp.float32)
    f = kfuse.jit(lambda x: x * 2 + 1)
    f(x)
    cp.cuda.Device().synchronize()
    n = 2000
    t = time.perf_counter()
    for _ in range(n):
        f(x)
    cp.cuda.Device().synchronize()
    ours = (time.perf_counter() - t) / n * 1e6
    k = cp.ElementwiseKernel("float32 x", "float32 y", "y = x * 2 + 1", "kf_ref")
    k(x)
    t = time.perf_counter()
    for _ in range(n):
        k(x)
    cp.cuda.Device().synchronize()
    ref = (time.perf_counter() - t) / n * 1e6
    torch_us = _torch_call_us(f, n)
    with capsys.disabled():
        print(f"\n[hot call, 1024 f32] kfuse.jit {ours:.1f} us/call; cupy.ElementwiseKernel {ref:.1f} us/call"
              + (f"; kfuse.jit on a torch tensor {torch_us:.1f} us/call" if torch_us else ""))
    assert_matches_numpy(cp.asnumpy(f(x)), np.full(1024, 3, np.float32))
