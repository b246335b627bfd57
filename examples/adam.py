"""P6: one Adam optimiser step (lr 1e-3, betas 0.9/0.999, eps 1e-8, step t=10).

One elementwise kernel with three outputs: reads param, grad, m, v once, writes param, m, v once.
Run: ``python examples/adam.py``; plan: ``kfuse explain examples/adam.py:adam f32[16777216] f32[16777216] f32[16777216] f32[16777216]``.
"""
import numpy as np

import kfuse

LR, BETA1, BETA2, EPS, T = 1e-3, 0.9, 0.999, 1e-8, 10


@kfuse.jit
def adam(param, grad, m, v):
    m = BETA1 * m + (1 - BETA1) * grad
    v = BETA2 * v + (1 - BETA2) * grad * grad
    m_hat = m / (1 - BETA1 ** T)
    v_hat = v / (1 - BETA2 ** T)
    param = param - LR * m_hat / (np.sqrt(v_hat) + EPS)
    return param, m, v


def check(name, got, want, rtol=1e-5, atol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)
    print(f"OK {name} {got.dtype}{list(got.shape)} max abs err {float(np.max(np.abs(got - want), initial=0)):.2e}")


def main(n=1 << 16):
    rng = np.random.default_rng(0)
    param, grad = (rng.standard_normal(n, dtype=np.float32) for _ in range(2))
    m = rng.standard_normal(n, dtype=np.float32) * np.float32(0.1)
    v = np.abs(rng.standard_normal(n, dtype=np.float32)) * np.float32(0.01)
    got = adam(param, grad, m, v)
    want = adam.fn(param, grad, m, v)
    assert len(got) == 3
    for name, g, w in zip(("param", "m", "v"), got, want):
        check(f"adam.{name}", g, w)


if __name__ == "__main__":
    main()
