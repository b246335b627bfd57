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
