"""``@`` of bfloat16 torch tensors on the CUDA C backend: NumPy's matmul casts bfloat16 operands to
float32 (exactly) and returns float32; kfuse multiplies them as bfloat16 on the tensor cores with
float32 accumulation (cuBLAS), epilogues fused after. Compared with NumPy's float32 matmul of the
same values, over 2-D, batched, broadcast, transposed and vector operands, a bias+GELU epilogue
and a mixed bfloat16 @ float32 product."""
import numpy as np
import pytest

from kfuse.runtime import device

pytestmark = pytest.mark.gpu
if not device.has_gpu():
    pytest.skip("no CUDA GPU / CuPy", allow_module_level=True)
torch = pytest.importorskip("torch")

import kfuse  # noqa: E402
from kfuse.testing import assert_matches_numpy  # noqa: E402


def _np(t):
    return t.float().cpu().numpy()


def _mm(a, b):
    return a @ b


def _gelu_bias(a, b, bias):
    y = a @ b + bias
    return 0.5 * y * (1 + np.tanh(0.7978845608 * (y + 0.044715 * y * y * y)))


def _tb(a, b):
    return np.swapaxes(a, -1, -2) @ b


CASES = [((128, 256), (256, 64)), ((4, 33, 70), (4, 70, 17)), ((3, 5, 64, 32), (32, 48)),
         ((256,), (256, 40)), ((20, 256), (256,))]


@pytest.mark.parametrize("sa,sb", CASES)
def test_matmul_bf16(sa, sb):
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(sa, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(sb, device="cuda", generator=g).to(torch.bfloat16)
    got = kfuse.jit(_mm, backend="cuda")(a, b)
    assert got.dtype == torch.float32 and tuple(got.shape) == np.matmul(_np(a), _np(b)).shape
    assert_matches_numpy(_np(got), _np(a) @ _np(b), reductions=True)


def test_transposed_operand_and_epilogue():
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(2, 96, 64, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(2, 96, 80, device="cuda", generator=g).to(torch.bfloat16)
    got = kfuse.jit(_tb, backend="cuda")(a, b)
    assert_matches_numpy(_np(got), _tb(_np(a), _np(b)), reductions=True)
    w = torch.randn(64, 80, device="cuda", generator=g).to(torch.bfloat16)
    bias = torch.randn(80, device="cuda", generator=g).to(torch.bfloat16)
    x = torch.randn(300, 64, device="cuda", generator=g).to(torch.bfloat16)
    got = kfuse.jit(_gelu_bias, backend="cuda")(x, w, bias)
    assert got.dtype == torch.float32
    assert_matches_numpy(_np(got), _gelu_bias(_np(x), _np(w), _np(bias)), reductions=True)


def test_mixed_bf16_f32():
    g = torch.Generator(device="cuda").manual_seed(2)
    a = torch.randn(50, 64, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(64, 30, device="cuda", generator=g)
    got = kfuse.jit(_mm, backend="cuda")(a, b)
    assert got.dtype == torch.float32
    assert_matches_numpy(_np(got), _np(a) @ _np(b), reductions=True)
