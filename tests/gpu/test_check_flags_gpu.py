"""Index checks read back without waiting for the whole call (runtime.check_flags: the check's
group launched first, its flag copied to pinned host memory; skipped without a GPU): a
cross-entropy with labels in range returns NumPy's value, one out of range raises NumPy's
IndexError (CuPy and torch callers), the next call after the error is right again, and a step
reading a flag still cannot be captured as a CUDA graph."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)

import cupy as cp  # noqa: E402

import kfuse  # noqa: E402
from kfuse.errors import DeviceError  # noqa: E402
from tests.runtime.test_check_first_order import cross_entropy  # noqa: E402
from tolerance import assert_matches_numpy  # noqa: E402

RNG = np.random.default_rng(23)


def _args(bad: bool):
    x = RNG.standard_normal((64, 1000)).astype(np.float32)
    labels = RNG.integers(0, 1000, 64)
    if bad:
        labels[17] = 1000
    return x, labels


@pytest.mark.parametrize("lib", ["cupy", "torch"])
def test_flags_raise_index_error_and_results_hold(lib):
    if lib == "torch":
        torch = pytest.importorskip("torch")
        to = lambda a: torch.as_tensor(a, device="cuda")      # noqa: E731
        back = lambda a: a.cpu().numpy()                       # noqa: E731
    else:
        to, back = cp.asarray, cp.asnumpy
    f = kfuse.jit(cross_entropy, backend="cuda")
    for _ in range(2):
        x, labels = _args(bad=False)
        assert_matches_numpy(back(f(to(x), to(labels))), cross_entropy(x, labels), reductions=True)
        x, labels = _args(bad=True)
        with pytest.raises(IndexError):
            cross_entropy(x, labels)
        with pytest.raises(IndexError):
            f(to(x), to(labels))


def test_a_step_reading_a_flag_is_not_captured():
    f = kfuse.jit(cross_entropy, backend="cuda")
    x, labels = map(cp.asarray, _args(bad=False))
    with pytest.raises(DeviceError):
        kfuse.capture(f, x, labels)
