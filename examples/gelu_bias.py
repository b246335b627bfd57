"""P1: GELU (tanh form) of an affine map with broadcast weight and bias, ``gelu(x * w + b)``.

One elementwise kernel: x is read once, the result written once, no temporaries.
Run: ``python examples/gelu_bias.py``; dump: ``kfuse dump-ir examples/gelu_bias.py:gelu_bias f32[4096,4096] f32[4096] f32[4096]``.
"""
import numpy as np

import kfuse

SQRT_2_OVER_PI = 0.7978845608028654  # a Python float: weak, so float32 stays float32


@kfuse.jit
def gelu_bias(x, w, b):
    h = x * w + b
    return 0.5 * h * (1.0 + np.tanh(SQRT_2_OVER_PI * (h + 0.044715 * (h * h * h))))


def check(name, got, want, rtol=1e-5, atol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)
    print(f"OK {name} {got.dtype}{list(got.shape)} max abs err {float(np.max(np.abs(got - want), initial=0)):.2e}")


def main(n=256, m=512):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, m), dtype=np.float32)
    w = rng.standard_normal(m, dtype=np.float32)
    b = rng.standard_normal(m, dtype=np.float32)
    check("gelu_bias", gelu_bias(x, w, b), gelu_bias.fn(x, w, b))  # .fn: the plain function, run by NumPy


if __name__ == "__main__":
    main()
