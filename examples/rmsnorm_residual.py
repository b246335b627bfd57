"""RMSNorm with a residual add that is also returned (the transformer block's pre-norm).

``h = x + residual; y = h / sqrt(mean(h*h) + eps) * g``; returns ``(y, h)``: one row-wise kernel,
two outputs.
Run: ``python examples/rmsnorm_residual.py``; plan: ``kfuse explain examples/rmsnorm_residual.py:rmsnorm_residual f32[4096,4096] f32[4096,4096] f32[4096]``.
"""
import numpy as np

import kfuse


@kfuse.jit
def rmsnorm_residual(x, residual, g):
    h = x + residual
    rms = np.sqrt(np.mean(h * h, axis=-1, keepdims=True) + 1e-6)
    return h / rms * g, h


def check(name, got, want, rtol=1e-5, atol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)
    print(f"OK {name} {got.dtype}{list(got.shape)} max abs err {float(np.max(np.abs(got - want), initial=0)):.2e}")


def main(n=256, m=512):
    rng = np.random.default_rng(0)
    x, residual = (rng.standard_normal((n, m), dtype=np.float32) for _ in range(2))
    g = rng.standard_normal(m, dtype=np.float32)
    (y, h), (y_ref, h_ref) = rmsnorm_residual(x, residual, g), rmsnorm_residual.fn(x, residual, g)
    check("rmsnorm_residual.y", y, y_ref, rtol=1e-4, atol=1e-5)
    check("rmsnorm_residual.h", h, h_ref)


if __name__ == "__main__":
    main()
