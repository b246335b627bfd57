"""P2: softmax over the rows of a matrix, ``e = exp(x - max); e / sum(e)``.

One row-wise kernel: max, sum and the normalisation read each row once.
Run: ``python examples/softmax.py``; plan: ``kfuse explain examples/softmax.py:softmax f32[4096,4096]``.
"""
import numpy as np

import kfuse


@kfuse.jit
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def check(name, got, want, rtol=1e-5, atol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)
    print(f"OK {name} {got.dtype}{list(got.shape)} max abs err {float(np.max(np.abs(got - want), initial=0)):.2e}")


def main(n=256, m=512):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, m), dtype=np.float32) * 4
    check("softmax", softmax(x), softmax.fn(x))


if __name__ == "__main__":
    main()
