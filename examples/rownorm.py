"""P4: the L2 norm of every row, ``sqrt(sum(x * x, axis=1))``.

One reduction kernel: the square is computed inside the sum's loop, the sqrt on its result.
Run: ``python examples/rownorm.py``; dump: ``kfuse dump-ir examples/rownorm.py:rownorm f32[4096,4096] --stage cpu``.
"""
import numpy as np

import kfuse


@kfuse.jit
def rownorm(x):
    return np.sqrt(np.sum(x * x, axis=1))


def check(name, got, want, rtol=1e-5, atol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)
    print(f"OK {name} {got.dtype}{list(got.shape)} max abs err {float(np.max(np.abs(got - want), initial=0)):.2e}")


def main(n=256, m=512):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, m), dtype=np.float32)
    check("rownorm", rownorm(x), rownorm.fn(x))
    check("rownorm (transposed input)", rownorm(x.T), rownorm.fn(x.T))  # read through strides


if __name__ == "__main__":
    main()
