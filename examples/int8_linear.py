"""An int8 Linear layer with its dequantising epilogue, as NumPy writes it: int32 sums of int8
products, scaled per row (``sx``) and per output column (``sw``), plus a bias, in float64 (NumPy
promotes int32 with float32 to float64) and rounded once to float16.

One GEMM group on a GPU: int8 tensor cores (``mma.sync`` m16n8k32, int32 sums that wrap as NumPy's
do), the epilogue on the accumulators before the store; bit for bit NumPy's result.
Run: ``python examples/int8_linear.py``; plan: ``kfuse explain examples/int8_linear.py:int8_linear
'i8[8192,8192]' 'i8[8192,8192]' 'f32[8192]' 'f32[8192]' 'f32[8192]' --device h100``.
"""
import numpy as np

import kfuse


@kfuse.jit
def int8_linear(x, W, sx, sw, b):
    acc = x.astype(np.int32) @ W.T.astype(np.int32)        # W stored [out, in], as a Linear's
    return (acc * sx[:, None] * sw + b).astype(np.float16)


def main(m=96, k=200, n=72):
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (m, k), dtype=np.int8)
    W = rng.integers(-128, 128, (n, k), dtype=np.int8)
    sx, sw = (rng.random(s, dtype=np.float32) / np.float32(100) for s in (m, n))
    b = rng.standard_normal(n, dtype=np.float32)
    got, want = int8_linear(x, W, sx, sw, b), int8_linear.fn(x, W, sx, sw, b)
    assert got.dtype == want.dtype and np.array_equal(got.view(np.uint16), want.view(np.uint16))
    print(f"OK int8_linear {got.dtype}{list(got.shape)} bit for bit NumPy's")


if __name__ == "__main__":
    main()
