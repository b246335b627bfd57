"""The hot call's guard (kfuse.dispatch_guard) on device arrays: CuPy arrays and torch CUDA tensors
with the last key run the direct launch inline; another dtype, shape, strides, array kind or a
torch tensor with a lazy negative bit misses it and gets NumPy's result."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)
cp = pytest.importorskip("cupy")

import kfuse  # noqa: E402
from kfuse.dispatch_guard import MISS  # noqa: E402
from kfuse.testing import assert_matches_numpy  # noqa: E402


def _chain(x, b):
    return np.tanh(x + b) * 0.5 + x


def _host(a):
    return cp.asnumpy(a) if isinstance(a, cp.ndarray) else a.detach().resolve_neg().resolve_conj().cpu().numpy()


def _check_guard(f, same, others):
    for _ in range(3):
        f(*same)
    assert f._guard(same) is not MISS
    assert "launch(" in f._guard.source, f._guard.source
    for k, args in enumerate(others):
        assert f._guard(args) is MISS, k
        assert_matches_numpy(_host(f(*args)), _chain(*map(_host, args)))
        f(*same)
        assert f._guard(same) is not MISS


def test_guard_cupy():
    rng = np.random.default_rng(0)
    x, b = (cp.asarray(rng.standard_normal((64, 48)).astype(np.float32)) for _ in range(2))
    f = kfuse.jit(_chain, backend="cuda")
    _check_guard(f, (x, b), [(x.astype(cp.float64), b), (x[:, ::2], b[:, ::2]), (x[:32], b[:32]),
                             (cp.asfortranarray(x), b)])


def test_guard_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x, b = (torch.as_tensor(rng.standard_normal((64, 48)).astype(np.float32), device="cuda") for _ in range(2))
    f = kfuse.jit(_chain, backend="cuda")
    neg = torch._neg_view(x)                # -x as a lazy negative bit over x's memory
    assert neg.is_neg()
    _check_guard(f, (x, b), [(x.double(), b), (x.t(), b.t()), (x[:, :7], b[:, :7]), (neg, b)])


def test_guard_torch_one_tensor_guard():
    """Torch's tensor guard tests the tensors at once; what it keys beyond kfuse's dispatch key
    (requires_grad) or cannot take (a tensor passed twice) still gets NumPy's result."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x, b = (torch.as_tensor(rng.standard_normal((32, 16)).astype(np.float32), device="cuda") for _ in range(2))
    f = kfuse.jit(_chain, backend="cuda")
    _check_guard(f, (x, b), [(x.clone().requires_grad_(True), b), (x, x)])
    assert f._guard((x.cpu(), b.cpu())) is MISS
    assert "TG.check(g0, g1)" in f._guard.source or not hasattr(torch._C._dynamo, "guards")
    g = kfuse.jit(_chain, backend="cuda")
    for _ in range(3):                      # a tensor twice first: the guard written out, hit
        assert_matches_numpy(_host(g(b, b)), _chain(_host(b), _host(b)))
    assert "TG.check" not in g._guard.source and g._guard((b, b)) is not MISS
