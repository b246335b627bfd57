"""Host scalars as kernel parameters on a GPU: Python and NumPy scalar arguments reach the kernels
by value (no device buffer, no upload: ``interop.host_to_device`` is never called for them), the
cached call takes the direct launch, and results and errors are NumPy's: the kv-cache write
``cache[:, t] = k`` at several ``t`` (negative, out of range -> IndexError, the cache untouched),
Adam with Python float and int scalars changing every call, float16 / bool / int16 NumPy scalars, a
complex scalar (still a 0-d device buffer), a program called with a Python scalar directly."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)
cp = pytest.importorskip("cupy")

import kfuse  # noqa: E402
from kfuse.errors import UnsupportedError  # noqa: E402
from kfuse.runtime import interop  # noqa: E402
from kfuse.testing import assert_matches_numpy  # noqa: E402
from tests.scalar_workloads import adam as _adam, kv as _kv  # noqa: E402

BACKENDS = ["cuda", "numba-cuda"]


def _scaled(x, s):
    return x * s + s


def _where(x, flag):
    return np.where(flag, x, -x)


def _direct(f):
    """Every dispatch key's entry (a NumPy scalar, a Python float and a Python int are three) runs
    the generated direct launch."""
    entries = list(f._programs.values())
    return bool(entries) and all("launch(" in getattr(e.run, "source", "") for e in entries)


@pytest.fixture
def no_uploads(monkeypatch):
    """Fail on any scalar upload (the old path: a device buffer and a fill launch a scalar)."""
    def refuse(a):
        raise AssertionError(f"uploaded {a!r}")
    monkeypatch.setattr(interop, "host_to_device", refuse)


@pytest.mark.parametrize("backend", BACKENDS)
def test_kv_cache_write(backend, cupy_for, no_uploads):
    cupy_for(backend)
    rng = np.random.default_rng(0)
    cache = rng.standard_normal((8, 64, 16)).astype(np.float32)
    f = kfuse.jit(_kv, backend=backend)
    dc = cp.asarray(cache)
    for step, t in enumerate([0, 5, 63, -1, -64, 17, 17]):
        k = rng.standard_normal((8, 16)).astype(np.float32)
        assert f(dc, cp.asarray(k), t) is None
        cache[:, t] = k
        np.testing.assert_array_equal(cp.asnumpy(dc), cache)
        if step:
            assert _direct(f), "the cached call takes the direct launch"
    for t in [64, -65, 2 ** 40]:
        with pytest.raises(IndexError):
            cache[:, t] = 0.0
        with pytest.raises(IndexError):
            f(dc, cp.zeros((8, 16), cp.float32), t)
        np.testing.assert_array_equal(cp.asnumpy(dc), cache)      # nothing written
    assert f.compile_count == 1
    with pytest.raises(UnsupportedError, match="shares memory"):
        f(dc, dc[:, 3], 1)                   # the written argument overlaps another: as before


@pytest.mark.parametrize("backend", BACKENDS)
def test_adam_python_scalars(backend, cupy_for, no_uploads):
    cupy_for(backend)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(4096).astype(np.float32) for _ in range(3)] + [rng.random(4096).astype(np.float32)]
    f = kfuse.jit(_adam, backend=backend)
    dev = [cp.asarray(x) for x in xs]
    for lr, t in [(1e-3, 1), (3e-4, 2), (0.5, 1000), (-0.0, 7)]:
        got = f(*dev, lr, t)
        want = _adam(*xs, lr, t)
        for g, w in zip(got, want):
            assert_matches_numpy(cp.asnumpy(g), w)
    assert _direct(f) and f.compile_count == 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,dtype,values", [(_scaled, np.float16, [np.float16(1.5), np.float16(-0.0), np.float16(65504)]),
                                             (_scaled, np.int16, [np.int16(-3), np.int16(30000)]),
                                             (_scaled, np.float32, [np.float32(0.1), 2.5, 7]),
                                             (_where, np.float32, [True, False])])
def test_numpy_and_python_scalars(backend, fn, dtype, values, cupy_for, no_uploads):
    cupy_for(backend)
    x = (np.arange(-20, 44) * 3).astype(dtype)
    f = kfuse.jit(fn, backend=backend)
    for v in values + values:
        with np.errstate(all="ignore"):
            want = fn(x, v)
            got = cp.asnumpy(f(cp.asarray(x), v))
        assert_matches_numpy(got, want)
    assert _direct(f)


def test_complex_scalar_keeps_its_buffer(cupy_for):
    cupy_for("cuda")
    x = (np.arange(64) + 1j * np.arange(64)[::-1]).astype(np.complex64)
    f = kfuse.jit(_scaled, backend="cuda")
    for c in [np.complex64(1 - 2j), np.complex64(0.5j)]:
        assert_matches_numpy(cp.asnumpy(f(cp.asarray(x), c)), _scaled(x, c))
    assert_matches_numpy(cp.asnumpy(f(cp.asarray(x), 2 - 1j)), _scaled(x, 2 - 1j))


@pytest.mark.parametrize("backend", BACKENDS)
def test_program_called_with_scalars(backend, cupy_for):
    cupy_for(backend)
    f = kfuse.jit(_scaled, backend=backend)
    x = np.linspace(-1, 1, 100).astype(np.float32)
    f(cp.asarray(x), 2.0)
    (entry,) = f._programs.values()
    program = entry.program
    assert program.host_inputs == {1}
    assert_matches_numpy(cp.asnumpy(program([cp.asarray(x), 0.25])[0]), _scaled(x, 0.25))
    assert_matches_numpy(cp.asnumpy(program([cp.asarray(x), cp.asarray(4.0)])[0]), _scaled(x, 4.0))


def test_torch_tensors_and_scalars():
    torch = pytest.importorskip("torch")
    f = kfuse.jit(_adam, backend="cuda")
    ts = [torch.randn(1000, device="cuda") for _ in range(3)] + [torch.rand(1000, device="cuda")]
    for lr, t in [(1e-3, 1), (2e-3, 5)]:
        got = f(*ts, lr, t)
        want = _adam(*[x.cpu().numpy() for x in ts], lr, t)
        for g, w in zip(got, want):
            assert isinstance(g, torch.Tensor)
            assert_matches_numpy(g.cpu().numpy(), w)
    assert _direct(f)
    cache = torch.zeros(4, 32, 8, device="cuda")
    kv = kfuse.jit(_kv, backend="cuda")
    for t in [3, -1, 3]:
        k = torch.randn(4, 8, device="cuda")
        kv(cache, k, t)
        assert torch.equal(cache[:, t], k)
    assert _direct(kv)
    with pytest.raises(IndexError):
        kv(cache, k, 32)
