"""P3: layer normalisation over the last axis with gain and bias (eps 1e-5).

One row-wise kernel: mean, variance, normalise and the affine map.
Run: ``python examples/layernorm.py``; plan: ``kfuse explain examples/layernorm.py:layernorm f32[4096,4096] f32[4096] f32[4096]``.
"""
import numpy as np

import kfuse


@kfuse.jit
def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def check(name, got, want, rtol=1e-4, atol=1e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)
    print(f"OK {name} {got.dtype}{list(got.shape)} max abs err {float(np.max(np.abs(got - want), initial=0)):.2e}")


def main(n=256, m=512):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, m), dtype=np.float32) * 3 + 1
    g = rng.standard_normal(m, dtype=np.float32)
    b = rng.standard_normal(m, dtype=np.float32)
    check("layernorm", layernorm(x, g, b), layernorm.fn(x, g, b))


if __name__ == "__main__":
    main()
