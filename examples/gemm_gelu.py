"""P5: matrix product with a bias row and a GELU (tanh form) epilogue, ``gelu(x @ W + b)``.

One GEMM group: the bias and the activation run on the product's tiles before they are stored.
Run: ``python examples/gemm_gelu.py``; plan: ``kfuse explain examples/gemm_gelu.py:gemm_gelu f16[4096,4096] f16[4096,4096] f16[4096] --device h100``.
"""
import numpy as np

import kfuse

SQRT_2_OVER_PI = 0.7978845608028654


@kfuse.jit
def gemm_gelu(x, W, b):
    h = x @ W + b
    return 0.5 * h * (1.0 + np.tanh(SQRT_2_OVER_PI * (h + 0.044715 * (h * h * h))))


def check(name, got, want, rtol=1e-4, atol=1e-4):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)
    print(f"OK {name} {got.dtype}{list(got.shape)} max abs err {float(np.max(np.abs(got - want), initial=0)):.2e}")


def main(m=128, k=256, n=192):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, k), dtype=np.float32) / np.float32(k ** 0.5)
    W = rng.standard_normal((k, n), dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    check("gemm_gelu", gemm_gelu(x, W, b), gemm_gelu.fn(x, W, b))


if __name__ == "__main__":
    main()
