"""`kfuse fuzz --seed 7` program 2338: np.clip(-0.0, 0, 4) is -0.0 in NumPy (clip keeps x unless it
is below lo); after maximum/minimum learned NumPy's tie rule (return the second operand) the
tracer's clip = minimum(maximum(x, lo), hi) returned +0.0. The tracer now puts x second."""
import numpy as np

import kfuse


def test_clip_keeps_negative_zero():
    def fuzz_fn(a0):
        return np.clip(a0, 0, 4), np.clip(a0, -0.0, 0.0)
    a0 = np.array([1.0, 6.0, -1.78, -0.0, 0.0, np.nan], dtype=np.float32)
    for got, want in zip(kfuse.jit(fuzz_fn, backend="cpu")(a0), fuzz_fn(a0)):
        np.testing.assert_array_equal(got, want)
        real = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got)[real], np.signbit(want)[real])


def test_float16_clip_keeps_negative_zero():
    """`kfuse fuzz --seed 28` (numba-cuda) program 823: np.clip(-0.0, -1, 0) in float16 is -0.0; NumPy's
    float16 maximum/minimum keep their first operand on ties (the float32 loops their second), so
    the tracer puts x first there. The CPU backend shows the same rule as the GPU ones."""
    def fuzz_fn(a0):
        return np.clip(-np.sqrt(a0), -1, 0), np.clip(a0.astype(np.float16) - 1, -1.0, 0.0)
    a0 = np.array([True, True, False, False], dtype=np.bool_)
    for got, want in zip(kfuse.jit(fuzz_fn, backend="cpu")(a0), fuzz_fn(a0)):
        assert got.dtype == want.dtype == np.float16
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
