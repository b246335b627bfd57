"""The direct launch of a cached one-kernel call (``runtime.direct_launch``): taken from the second
call on, equal to the generic path and to NumPy; an input of another alignment falls back to the
generic path (which picks the variant for it); CuPy arrays and torch tensors, several outputs, a
row reduction; a plan with run-time checks never takes it."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)
cp = pytest.importorskip("cupy")

import kfuse  # noqa: E402
from kfuse.testing import assert_matches_numpy as assert_allclose  # noqa: E402


def _chain(x, b):
    return np.tanh(x + b) * 0.5 + x


def _two(x, b):
    return x * b, x - b


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _entry(f):
    (entry,) = f._programs.values()
    return entry


def _direct(f):
    """The entry's generated direct launch, None where its calls take the generic path."""
    run = _entry(f).run
    return run if "launch(" in getattr(run, "source", "") else None


@pytest.mark.parametrize("backend", ["cuda", "numba-cuda"])
@pytest.mark.parametrize("fn,shapes", [(_chain, [(1024,), (1024,)]), (_two, [(33, 7), (7,)]),
                                       (_softmax, [(64, 1000)])])
def test_direct_equals_numpy(backend, fn, shapes, cupy_for):
    cupy_for(backend)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    f = kfuse.jit(fn, backend=backend)
    first = f(*map(cp.asarray, xs))
    assert _direct(f) is not None
    for k in range(3):
        ys = [x + k for x in xs]
        got, want = f(*map(cp.asarray, ys)), fn(*ys)
        for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]):
            assert_allclose(cp.asnumpy(g), w)
    assert f.compile_count == 1 and first is not None


def test_other_alignment_falls_back():
    f = kfuse.jit(_chain, backend="cuda")
    base = cp.arange(1025, dtype=cp.float32)
    b = cp.ones(1024, cp.float32)
    f(base[:1024], b)
    direct = _direct(f)
    assert direct is not None
    taken = []
    generic = direct.__globals__["generic"]
    direct.__globals__["generic"] = lambda args: taken.append(1) or generic(args)
    shifted = base[1:]                     # the same key (shape, strides), 4 bytes off a vector
    assert_allclose(cp.asnumpy(f(shifted, b)), _chain(cp.asnumpy(shifted), cp.asnumpy(b)))
    assert taken == [1]
    f(base[:1024], b)
    assert taken == [1]


def test_checks_never_direct():
    def gather(x, i):
        return x[i] * 2.0
    f = kfuse.jit(gather, backend="cuda")
    x, i = cp.arange(10, dtype=cp.float32), cp.asarray([1, 3], cp.int64)
    f(x, i)
    f(x, i)
    assert _direct(f) is None
    with pytest.raises(IndexError):
        f(x, cp.asarray([1, 30], cp.int64))


def test_torch_tensors():
    torch = pytest.importorskip("torch")
    f = kfuse.jit(_two, backend="cuda")
    x = torch.randn(33, 7, device="cuda")
    b = torch.randn(7, device="cuda")
    f(x, b)
    assert _direct(f) is not None
    p, m = f(x, b)
    assert isinstance(p, torch.Tensor) and p.device == x.device
    assert torch.equal(p, x * b) and torch.equal(m, x - b)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):              # launched on torch's current stream
        y = x + 1
        p2, _ = f(y, b)
    s.synchronize()
    assert torch.equal(p2, y * b)


def test_outputs_in_another_order_than_the_kernels():
    def adam(p, g, m, v):
        m2 = 0.9 * m + 0.1 * g
        v2 = 0.999 * v + 0.001 * g * g
        return p - 1e-3 * m2 / (np.sqrt(v2) + 1e-8), m2, v2
    f = kfuse.jit(adam, backend="cuda")
    xs = [np.random.default_rng(k).random(1000).astype(np.float32) for k in range(4)]
    f(*map(cp.asarray, xs))
    assert _direct(f) is not None
    for got, want in zip(f(*map(cp.asarray, xs)), adam(*xs)):
        assert_allclose(cp.asnumpy(got), want)
