"""A kfuse call on torch CUDA tensors inside ``torch.cuda.graph``: captured on torch's stream and
replayed with the tensors' new contents, as torch's own ops are."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)
torch = pytest.importorskip("torch")

import kfuse  # noqa: E402


@kfuse.jit
def _gelu_like(x, b):
    return np.tanh(x + b) * 0.5 + x


def test_replay_follows_the_inputs():
    x = torch.randn(4096, device="cuda")
    b = torch.randn(4096, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):           # warm-up off the capture: compiles, sizes torch's pool
        for _ in range(2):
            _gelu_like(x, b)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = _gelu_like(x, b)
    x.add_(1.0)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, _gelu_like(x, b))
